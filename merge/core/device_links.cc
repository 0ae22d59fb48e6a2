// Device linking pass.
#include "core/device_links.h"

#include <string>

namespace truffld::merge {

namespace {

constexpr uint32_t kNoCall = UINT32_MAX;

// The launching call of device op `d`: the latest call of its id (and process) starting no later
// than it; of a runtime call and the driver calls nested in it, the outermost. *any: some call
// of its id (and process) exists.
uint32_t LaunchOf(const TraceFile& file, const CorrelationIndex& index, const Event& d, bool* any) {
  const auto [lo, hi] = index.Calls(file.Correlation(d));
  const int64_t dp = file.ProcessOf(d);
  uint32_t api = kNoCall;
  *any = false;
  for (const CorrEntry* it = lo; it != hi; ++it) {
    const Event& a = file.events[it->event];
    const int64_t ap = file.ProcessOf(a);
    if (dp != kNone && ap != kNone && dp != ap) continue;
    *any = true;
    if (a.start <= d.start && (api == kNoCall || !NestedIn(a, file.events[api]))) api = it->event;
  }
  return api;
}

}  // namespace

DeviceLinks LinkDeviceWork(const TraceFile& file, const CorrelationIndex& index, const ApiCalls& api,
                           uint64_t device_ops, IngestStats* issues) {
  DeviceLinks out;
  out.links.reserve(device_ops + 16);  // no doubling copies
  for (uint32_t i = 0; i < file.events.size(); ++i) {
    const Event& d = file.events[i];
    const bool device = IsDeviceKind(d.kind);
    if (!device && d.kind != EventKind::kSync) continue;
    const int64_t corr = file.Correlation(d);
    bool any = false;
    const uint32_t call = LaunchOf(file, index, d, &any);
    if (corr != kNone && call != kNoCall && api.owner[api.calls.Rank(call)] != kNoRange) {
      out.links.push_back({call, i});
      if (device) {
        ++out.linked;
        out.kernels_linked += d.kind == EventKind::kKernel;
      }
      continue;
    }
    if (!device) continue;  // a SYNC record without its call is not counted
    const Unattributed why = corr == kNone || !any ? Unattributed::kNoLaunchApi
                             : call == kNoCall     ? Unattributed::kStartsBeforeLaunch
                                                   : Unattributed::kLaunchOutsideStep;
    out.reasons.Add(why);
    ++out.unattributed;
    out.kernels_unattributed += d.kind == EventKind::kKernel;
    if (why == Unattributed::kLaunchOutsideStep) continue;  // counted, not reported: warm-up work is normal
    issues->Report(file.meta.path + ":" + std::to_string(file.LineOf(i)),
                   why == Unattributed::kNoLaunchApi ? Problem::kDeviceNoLaunchApi : Problem::kDeviceStartsBeforeLaunch,
                   std::string(EventKindName(d.kind)) + " with correlation id " + std::to_string(corr) +
                       (why == Unattributed::kNoLaunchApi ? " has no launching API call in this file"
                                                          : " starts before its launching API call"));
  }
  return out;
}

}  // namespace truffld::merge
