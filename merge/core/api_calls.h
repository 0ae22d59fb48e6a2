// Pass 4, API attribution: each CUDA runtime/driver call's owning range.
//
// Rules (merge/README.md, "API calls"): a call belongs to the innermost range of its own
// (process, thread) containing the whole call [start, end]; a call in no such range belongs to
// its process's implicit step, if any, else to the latest-starting step of its process that
// contains it (adopted_api_calls); a call whose range lies in no step is outside every step
// (api_calls_outside_step). For CUDA-graph attribution the innermost containing range is also
// kept whether or not it lies in a step (capture ranges: graphs are often captured in warm-up).
// Input: the TraceFile, ranges (pass 1), implicit steps (pass 2), nesting (pass 3).
// Output: ApiCalls. Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <vector>

#include "core/event_rank.h"
#include "core/nest.h"

namespace truffld::merge {

struct ApiCalls {
  EventRank calls;                // which events are API calls; a call's ordinal is its rank
  std::vector<uint32_t> order;    // the calls' events in (thread, start) order, ties in file order
  std::vector<uint32_t> owner;    // per ordinal: owning range (in a step), kNoRange: outside steps
  std::vector<uint32_t> capture;  // per ordinal: innermost containing range (empty unless asked)
  uint64_t outside_step = 0;
  uint64_t adopted = 0;
};

// `with_capture`: fill ApiCalls::capture (the file has GRAPH_NODE records).
ApiCalls AttachApiCalls(const TraceFile& file, const std::vector<HostRange>& ranges,
                        const std::vector<ImplicitStep>& implicit, const Nesting& nesting, bool with_capture);

}  // namespace truffld::merge
