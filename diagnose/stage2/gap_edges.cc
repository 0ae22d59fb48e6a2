// What borders a host gap or an idle stretch (see gap_edges.h).
#include "stage2/gap_edges.h"

namespace truffld::diagnose {
namespace {

// The outermost real operator of step `s` (not a pseudo-instance, not a CUDA-graph replay;
// with device work when `device`) whose end (`at_end`) or start meets `edge`, or -1. Host
// edges are the operator's range; device edges its own device work's first start and last end.
int64_t Meeting(const InstanceTable& t, const StepInfo& s, int64_t edge, bool at_end, bool device) {
  int64_t best = -1;
  int64_t best_span = -1;
  for (uint32_t i = s.first_instance; i < s.first_instance + s.instance_count && i < t.size(); ++i) {
    const InstanceDetail& d = t.detail[i];
    if (d.flags & (kDetailOutside | kDetailReplay)) continue;
    if (device && !(d.flags & kDetailHasDevice)) continue;
    const int64_t start = device ? d.device_start : t.start_ns[i];
    const int64_t end = device ? d.device_end : t.end_ns[i];
    if ((at_end ? end : start) != edge) continue;
    if (end - start > best_span) best = i, best_span = end - start;  // the enclosing one is the longest
  }
  return best;
}

std::string Edges(const InstanceTable& t, const StepInfo& s, int64_t from, int64_t to, bool device) {
  auto name = [&](int64_t i) {
    const std::string& f = t.strings.Get(t.family[static_cast<size_t>(i)]);
    return device ? "the device work of " + f : f;
  };
  std::string before, after;
  if (from <= s.start_ns) before = "the step's start";
  else if (const int64_t i = Meeting(t, s, from, /*at_end=*/true, device); i >= 0) before = name(i);
  if (to >= s.end_ns) after = "the step's end";
  else if (const int64_t i = Meeting(t, s, to, /*at_end=*/false, device); i >= 0) after = name(i);
  if (!before.empty() && !after.empty()) {
    // "between the device work of aten::mm and of aten::add"
    const std::string prefix = "the device work ";
    if (device && before.rfind(prefix, 0) == 0 && after.rfind(prefix, 0) == 0)
      after = after.substr(prefix.size());
    return ", between " + before + " and " + after;
  }
  if (!before.empty()) return ", after " + before;
  if (!after.empty()) return ", before " + after;
  return "";
}

}  // namespace

std::string HostGapEdges(const InstanceTable& t, const StepInfo& s, int64_t from, int64_t to) {
  return Edges(t, s, from, to, /*device=*/false);
}

std::string IdleEdges(const InstanceTable& t, const StepInfo& s, int64_t from, int64_t to) {
  return Edges(t, s, from, to, /*device=*/true);
}

}  // namespace truffld::diagnose
