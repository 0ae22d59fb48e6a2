// Pass 7, CUDA-graph capture owners: for each captured graph node, the range that was open
// around the API call that created it, so a replayed kernel can name the operator that
// captured it (trees.jsonl "captured_in").
//
// Rules (merge/README.md, "Device activity"): a GRAPH_NODE record names its node and the
// correlation id of the API call that created it; a cloned node (graph instantiation) is
// followed to its original (at most 8 hops). Of that id's calls, the last in correlation order
// whose owning range (pass 4) or, outside every step, innermost containing range is known
// gives the owner.
// Input: the TraceFile, the correlation index (pass 5), API ownership (pass 4, with capture
// ranges). Output: graph node id -> range. Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "core/api_calls.h"
#include "core/correlation.h"

namespace truffld::merge {

std::unordered_map<int64_t, uint32_t> CaptureOwners(const TraceFile& file, const CorrelationIndex& index,
                                                    const ApiCalls& api);

}  // namespace truffld::merge
