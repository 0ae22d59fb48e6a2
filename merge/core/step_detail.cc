// Per-step completeness counts: see step_detail.h.
#include "core/step_detail.h"

#include <nlohmann/json.hpp>

namespace truffld::merge {

uint64_t InjectorNamesTruncated(std::string_view stats_json) {
  if (stats_json.empty()) return 0;
  const auto j = nlohmann::json::parse(stats_json, nullptr, false);
  if (!j.is_object()) return 0;
  const auto it = j.find("names_truncated");
  return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

void CountStepDetail(const TraceFile& file, const FileTrees& trees, const Rules& rules, MergeCounters* c) {
  c->injector_names_truncated = InjectorNamesTruncated(file.meta.stats_json);
  for (const StepRoot& s : trees.steps) {
    if (s.implicit) continue;
    const Node& n = trees.nodes[s.vertical];
    if (rules.RequestsCut(file.strings.Get(file.events[n.event].name))) ++c->step_names_cut;
  }
}

}  // namespace truffld::merge
