// Continuous batching: the requests a vLLM-like engine replica admits, runs and retires.
//
// Each engine step is either a prefill step (newly admitted requests, bounded by a token budget
// and the sequence limit) or a decode step (one token for every running request), so batch size
// and token counts change from step to step, which is what makes normal operator durations
// multi-modal. With chunked prefill (vLLM V1's default scheduling) a step decodes every running
// request and fills the rest of its token budget with chunks of waiting prompts: a "mixed" step. Online workloads draw Poisson arrivals per step; offline workloads queue a large
// batch whenever the queue drains. Request ids are vLLM-style ("cmpl-1a2b3c4d-0"), with a few
// ids containing '_' or '\' so that the step-name escaping is exercised.
// Thread-safety: one Scheduler per replica, used by one thread.
#pragma once

#include <cstdint>
#include <cstddef>
#include <deque>
#include <string>
#include <vector>

#include "truffld/synth/model.h"
#include "truffld/synth/rng.h"

namespace truffld::synth {

struct Request {
  std::string id;
  int64_t prompt_len = 0;
  int64_t output_len = 0;
  int64_t generated = 0;
  int64_t prefilled = 0;  // prompt tokens already processed (chunked prefill)
  int64_t arrival_step = 0;  // index of the step planned when the request arrived
};

// A request as it arrived, for the generator's request ledger (requests.jsonl).
struct Arrival {
  std::string id;
  int64_t step = 0;  // index of the first step planned after it arrived
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
};

struct PlannedStep {
  StepShape shape;                  // decode: seqs padded to the CUDA-graph bucket
  int64_t real_seqs = 0;            // sequences actually in the batch
  int graph_bucket = 0;             // decode: padded batch size (graph key); 0 for prefill
  const char* phase = "decode";     // "prefill", "decode" or "mixed"
  int64_t tokens = 0;               // tokens scheduled (unpadded)
  int64_t context = 0;              // summed context length of the batch after the step
  std::vector<std::string> request_ids;
  std::vector<uint8_t> prefilling;  // parallel to request_ids: 1 when the step runs a prompt chunk of it
  std::vector<Arrival> arrived;     // requests that arrived since the previous step was planned
};

// What the step name says about the step, as truffld's hooks write it.
struct StepTags {
  const char* phase = nullptr;  // "[phase:X]", left out when null
  int64_t tokens = -1;          // "[tokens:N]", left out when negative
  int64_t context = -1;         // "[ctx:N]", left out when negative
};

// Step range name: "step_execute_model[request_ids:a_b_c][phase:decode][tokens:8][ctx:812]" with
// '_' and '\' in ids escaped as "\_" and "\\" (raw text, not JSON-escaped); the tags are what
// truffld's hooks add, each left out when unknown.
std::string StepRangeName(const std::vector<std::string>& ids, const StepTags& tags = {});

// Decode batch sizes for which graphs are captured (vLLM's default capture sizes, trimmed).
int GraphBucket(int64_t seqs);

class Scheduler {
 public:
  Scheduler(uint64_t seed, int replica, bool online, double arrivals_per_step, int max_num_seqs,
            int max_prefill_tokens, double prompt_scale = 1.0, bool chunked_prefill = false);
  // Plans the next step and advances request state as if it completed.
  PlannedStep Next();

 private:
  PlannedStep Plan();
  void Arrive(int64_t n);
  PlannedStep NextChunked();
  Rng rng_;
  int replica_;
  bool online_;
  double arrivals_per_step_;
  int max_num_seqs_;
  int max_prefill_tokens_;
  double prompt_scale_;
  bool chunked_;
  int64_t next_id_ = 0;
  int64_t step_ = 0;                // index of the next step Next() plans
  std::vector<Arrival> arrived_;    // arrivals not yet handed out by Next()
  std::deque<Request> waiting_;
  std::vector<Request> running_;
};

}  // namespace truffld::synth
