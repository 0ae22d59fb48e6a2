// Classification pass: layers from the rules, implicit steps for files without steps.
#include "core/classify_ranges.h"

#include <algorithm>
#include <map>

namespace truffld::merge {

ClassKey ClassKeyOf(const TraceFile& file, const Event& e) {
  const EventExtra& x = file.Extra(e);
  return {e.name, x.domain, x.category};
}

namespace {

// One span per process over its host ranges and API calls, ascending by process.
std::vector<ImplicitStep> ImplicitSteps(const TraceFile& file, const std::vector<HostRange>& ranges) {
  std::map<int64_t, std::pair<TimeNs, TimeNs>> span;
  auto widen = [&](int64_t p, TimeNs s, TimeNs e) {
    auto [it, fresh] = span.emplace(p, std::make_pair(s, e));
    if (!fresh) {
      it->second.first = std::min(it->second.first, s);
      it->second.second = std::max(it->second.second, e);
    }
  };
  for (const HostRange& h : ranges) widen(file.threads[h.thread].process_id, h.start, h.end);
  for (const Event& e : file.events)
    if (IsApiKind(e.kind)) widen(file.ProcessOf(e), e.start, std::max(e.start, e.end));
  std::vector<ImplicitStep> out;
  for (const auto& [p, se] : span) out.push_back({p, se.first, se.second});
  return out;
}

}  // namespace

RangeLayers ClassifyRanges(const TraceFile& file, const std::vector<HostRange>& ranges, RangeClasses* classes,
                           bool implicit_steps) {
  RangeLayers out;
  out.layer.resize(ranges.size());
  out.source.resize(ranges.size());
  bool any_step = false;
  for (size_t r = 0; r < ranges.size(); ++r) {
    out.layer[r] = classes->LayerOf(ClassKeyOf(file, file.events[ranges[r].event]), &out.source[r]);
    any_step |= out.layer[r] == Layer::kStep;
  }
  if (!any_step && implicit_steps) out.implicit = ImplicitSteps(file, ranges);
  return out;
}

}  // namespace truffld::merge
