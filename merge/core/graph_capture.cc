// Graph capture owners pass.
#include "core/graph_capture.h"

namespace truffld::merge {

std::unordered_map<int64_t, uint32_t> CaptureOwners(const TraceFile& file, const CorrelationIndex& index,
                                                    const ApiCalls& api) {
  std::unordered_map<int64_t, const Event*> by_id;
  for (const Event& e : file.events)
    if (e.kind == EventKind::kGraphNode) by_id.emplace(file.Extra(e).graph_node_id, &e);
  std::unordered_map<int64_t, uint32_t> out;
  for (const auto& [id, first] : by_id) {
    const Event* g = first;
    for (int hop = 0; hop < 8 && file.Extra(*g).original_graph_node_id != kNone; ++hop) {
      auto it = by_id.find(file.Extra(*g).original_graph_node_id);
      if (it == by_id.end()) break;
      g = it->second;
    }
    uint32_t owner = kNoRange;
    const auto [lo, hi] = index.Calls(file.Correlation(*g));
    for (const CorrEntry* c = lo; c != hi; ++c) {
      const uint32_t k = api.calls.Rank(c->event);
      if (api.owner[k] != kNoRange) owner = api.owner[k];
      else if (!api.capture.empty() && api.capture[k] != kNoRange) owner = api.capture[k];
    }
    if (owner != kNoRange) out.emplace(id, owner);
  }
  return out;
}

}  // namespace truffld::merge
