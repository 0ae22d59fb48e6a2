// Per-step completeness counts: see step_detail.h.
#include "core/step_detail.h"

#include <algorithm>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

namespace truffld::merge {

uint64_t InjectorNamesTruncated(std::string_view stats_json) {
  if (stats_json.empty()) return 0;
  const auto j = nlohmann::json::parse(stats_json, nullptr, false);
  if (!j.is_object()) return 0;
  const auto it = j.find("names_truncated");
  return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

DeviceWindows DeviceWindowsOf(const FileMeta& meta, const ClockMap& clock) {
  struct Span { TimeNs first, last; int edges; };
  std::map<int64_t, Span> by_id;
  for (const auto& [id, t] : meta.device_window_edges) {
    const TimeNs at = clock.Map(t);
    auto [it, fresh] = by_id.try_emplace(id, Span{at, at, 0});
    Span& w = it->second;
    w.first = std::min(w.first, at);
    w.last = std::max(w.last, at);
    ++w.edges;
  }
  DeviceWindows out;
  for (const auto& [id, w] : by_id)
    out.emplace_back(w.first, w.edges >= 2 ? w.last : std::numeric_limits<TimeNs>::max());
  std::sort(out.begin(), out.end());
  return out;
}

bool InsideAWindow(const DeviceWindows& windows, TimeNs start, TimeNs end) {
  for (const auto& [ws, we] : windows) {
    if (ws > start) break;
    if (end <= we) return true;
  }
  return false;
}

void CountStepDetail(const TraceFile& file, const ClockMap& clock, const Rules& rules, FileTrees* trees,
                     MergeCounters* c) {
  c->injector_names_truncated = InjectorNamesTruncated(file.meta.stats_json);
  const DeviceWindows windows = file.meta.device_sampled ? DeviceWindowsOf(file.meta, clock) : DeviceWindows();
  for (StepRoot& s : trees->steps) {
    const Node& n = trees->nodes[s.vertical];
    if (!s.implicit && rules.RequestsCut(file.strings.Get(file.events[n.event].name))) ++c->step_names_cut;
    if (file.meta.device_sampled && !InsideAWindow(windows, n.start, n.end)) {
      s.device_detail = false;
      ++c->steps_without_device_detail;
    }
  }
}

}  // namespace truffld::merge
