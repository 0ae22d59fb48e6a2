// Continuous batching: the requests a vLLM-like engine replica admits, runs and retires.
//
// Each engine step is either a prefill step (newly admitted requests, bounded by a token budget
// and the sequence limit) or a decode step (one token for every running request), so batch size
// and token counts change from step to step, which is what makes normal operator durations
// multi-modal. Online workloads draw Poisson arrivals per step; offline workloads queue a large
// batch whenever the queue drains. Request ids are vLLM-style ("cmpl-1a2b3c4d-0"), with a few
// ids containing '_' or '\' so that the step-name escaping is exercised.
// Thread-safety: one Scheduler per replica, used by one thread.
#pragma once

#include <cstdint>
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
};

struct PlannedStep {
  StepShape shape;                  // decode: seqs padded to the CUDA-graph bucket
  int64_t real_seqs = 0;            // sequences actually in the batch
  int graph_bucket = 0;             // decode: padded batch size (graph key); 0 for prefill
  std::vector<std::string> request_ids;
};

// Step range name: "step_execute_model[request_ids:a_b_c][phase:decode]" with '_' and '\' in ids
// escaped as "\_" and "\\" (raw text, not JSON-escaped); the phase tag (prefill, decode, mixed)
// is what truffld's hooks add, left out when `phase` is null.
std::string StepRangeName(const std::vector<std::string>& ids, const char* phase = nullptr);

// Decode batch sizes for which graphs are captured (vLLM's default capture sizes, trimmed).
int GraphBucket(int64_t seqs);

class Scheduler {
 public:
  Scheduler(uint64_t seed, int replica, bool online, double arrivals_per_step, int max_num_seqs,
            int max_prefill_tokens);
  // Plans the next step and advances request state as if it completed.
  PlannedStep Next();

 private:
  void Arrive(int64_t n);
  Rng rng_;
  int replica_;
  bool online_;
  double arrivals_per_step_;
  int max_num_seqs_;
  int max_prefill_tokens_;
  int64_t next_id_ = 0;
  std::deque<Request> waiting_;
  std::vector<Request> running_;
};

}  // namespace truffld::synth
