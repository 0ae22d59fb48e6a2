// Per-step completeness counts: see step_detail.h.
#include "core/step_detail.h"

#include <algorithm>
#include <limits>
#include <map>

#include <nlohmann/json.hpp>

namespace truffld::merge {

uint64_t InjectorCount(std::string_view stats_json, const char* key) {
  if (stats_json.empty()) return 0;
  const auto j = nlohmann::json::parse(stats_json, nullptr, false);
  if (!j.is_object()) return 0;
  const auto it = j.find(key);
  return it != j.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

DeviceWindows DeviceWindowsOf(const FileMeta& meta, const ClockMap& clock) {
  using E = FileMeta::WindowEdge;
  constexpr TimeNs kNone = std::numeric_limits<TimeNs>::min();
  struct Span { TimeNs first = kNone, last = kNone; };  // earliest start, latest end
  std::map<int64_t, Span> by_id;
  for (const auto& w : meta.device_window_edges) {
    const TimeNs at = clock.Map(w.at);
    Span& s = by_id[w.id];
    // An edge of unknown kind is taken for a start: the lone edge an old dump ends with.
    if (w.edge == E::kEnd) s.last = std::max(s.last, at);
    else s.first = s.first == kNone ? at : std::min(s.first, at);
  }
  DeviceWindows out;
  for (const auto& [id, s] : by_id) {
    // A window missing its end ran to the end. (The raw importer drops ends whose window never
    // started, reported as bad_field; an edge of unknown kind, taken for a start, keeps its own.)
    out.spans.emplace_back(s.first, s.last == kNone ? std::numeric_limits<TimeNs>::max() : s.last);
  }
  std::sort(out.spans.begin(), out.spans.end());
  TimeNs reach = kNone;
  for (const auto& span : out.spans) out.max_end.push_back(reach = std::max(reach, span.second));
  return out;
}

bool InsideAWindow(const DeviceWindows& windows, TimeNs start, TimeNs end) {
  // Windows starting at or before `start` are a prefix; one of them covers `end` iff the
  // furthest end among them does.
  const auto first_after = std::upper_bound(windows.spans.begin(), windows.spans.end(), start,
                                            [](TimeNs t, const auto& span) { return t < span.first; });
  const size_t n = size_t(first_after - windows.spans.begin());
  return n > 0 && end <= windows.max_end[n - 1];
}

void CountStepDetail(const TraceFile& file, const ClockMap& clock, const Rules& rules, FileTrees* trees,
                     MergeCounters* c) {
  c->injector_names_truncated = InjectorCount(file.meta.stats_json, "names_truncated");
  c->injector_api_unpaired = InjectorCount(file.meta.stats_json, "api_unpaired");
  // Window edges mean sampling even when META.config is missing or unreadable (not when it
  // says "all" outright).
  const bool sampled =
      file.meta.device_sampled || (!file.meta.device_all && !file.meta.device_window_edges.empty());
  const DeviceWindows windows = sampled ? DeviceWindowsOf(file.meta, clock) : DeviceWindows();
  for (StepRoot& s : trees->steps) {
    const Node& n = trees->nodes[s.vertical];
    if (!s.implicit && rules.RequestsCut(file.strings.Get(file.events[n.event].name))) ++c->step_names_cut;
    if (sampled && !InsideAWindow(windows, n.start, n.end)) {
      s.device_detail = false;
      ++c->steps_without_device_detail;
    }
  }
}

}  // namespace truffld::merge
