// Why a request was slow: per request id, the steps that served it, its time to first token
// and per output token, the time it spent between its steps, and the abnormal units that
// touched it with what they cost (requests.jsonl, report.html's "Requests" section).
//
// The steps are those of the lowest rank that served the request (its tensor-parallel peers run
// the same steps in lockstep). Its prefill is the leading run of its steps that are prefill
// steps, or a mixed step that is its first; later decode and mixed steps decode it. A prompt
// chunked over several mixed steps is counted as one chunk (the trace does not say which
// requests of a mixed step are prefilling), so its TTFT ends at its first chunk. Times run from the start of its first step: the trace shows when a request was
// scheduled, not when it arrived, so queueing before its first step is not included. An
// abnormal unit (any rank, either view) touches a request when it names the request; its impact
// (the step time saved without the anomaly) counts once per step of the request, the largest
// when several ranks' units fall on the same step.
// Pure logic over the diagnoses; thread-safety: reentrant.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stage2/fusion.h"

namespace truffld::diagnose {

struct RequestHit {  // an abnormal unit that named the request
  std::optional<int64_t> rank;
  int64_t step_index = 0;
  View view = View::kVertical;
  double impact_ns = 0;              // the unit's impact (excess when no impact was computed)
  std::vector<std::string> families; // its faulty operators, highest excess first
};

struct RequestSummary {
  std::string id;
  std::optional<int64_t> lead_rank;  // whose steps are listed
  std::vector<int64_t> ranks;        // every rank that served it (ranks only)
  std::vector<int64_t> steps;        // the lead rank's step indices, in time order
  int prefill_steps = 0, decode_steps = 0, other_steps = 0;
  int64_t first_start_ns = 0, last_end_ns = 0;
  std::optional<int64_t> prefill_end_ns;  // end of the leading run of prefill chunks
  std::optional<int64_t> ttft_ns;         // prefill_end_ns - first_start_ns
  std::optional<double> tpot_ns;          // time per output token after the prefill
  int64_t in_steps_ns = 0;                // its steps' summed durations
  int64_t between_steps_ns = 0;           // its life minus in_steps_ns: waiting while others ran
  std::vector<RequestHit> abnormal;
  double impact_ns = 0;                   // the abnormal units' impact, once per step
  std::string reason;                     // one sentence
};

struct RequestPercentiles {
  size_t requests = 0, with_ttft = 0, with_tpot = 0;
  double ttft_p50 = 0, ttft_p90 = 0, ttft_p99 = 0;  // ns
  double tpot_p50 = 0, tpot_p90 = 0, tpot_p99 = 0;  // ns
};

// One summary per request id named by a vertical unit, ordered by id.
std::vector<RequestSummary> SummariseRequests(const std::vector<StepDiagnosis>& d);

RequestPercentiles RequestTimePercentiles(const std::vector<RequestSummary>& r);

// "Requests: 120 (TTFT p50 ..., p99 ...; TPOT p50 ..., p99 ...); requests.jsonl" for stdout.
std::string FormatRequestLine(const std::vector<RequestSummary>& r);

// One requests.jsonl line (schemas/requests.schema.json); it lists the kMaxHitsListed abnormal
// units of highest impact and counts them all.
inline constexpr size_t kMaxHitsListed = 16;
nlohmann::json RequestJson(const RequestSummary& r);

}  // namespace truffld::diagnose
