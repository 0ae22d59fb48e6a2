// Pass 6, device linking: each kernel, copy, memset and SYNC record to the API call that
// launched it.
//
// Rules (merge/README.md, "Device activity"): a device op links to the call with its
// correlation id (and its process, when both name one) that started latest but no later than
// the op; of a runtime call and the driver calls nested in it, the outermost. An op that links
// to nothing is unattributed, for one reason: no call has its id (no_launch_api), every such
// call starts after it (starts_before_launch), or its call lies outside every step
// (launch_outside_step). The first two are reported with file:line. CUDA-graph launches share
// one id, so all the graph's kernels link to the launch.
// Input: the TraceFile, the correlation index (pass 5), API owners (pass 4).
// Output: DeviceLinks. Thread-safety: pure function (reports go to `issues`).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/api_calls.h"
#include "core/correlation.h"

namespace truffld::merge {

struct DeviceLinks {
  std::vector<std::pair<uint32_t, uint32_t>> links;  // (API call event, device event), device order
  uint64_t linked = 0, kernels_linked = 0;           // device ops (not SYNC) linked
  uint64_t unattributed = 0, kernels_unattributed = 0;
  FirstSeenCounts<Unattributed> reasons;
};

// `device_ops`: how many device ops the file holds (a capacity hint).
DeviceLinks LinkDeviceWork(const TraceFile& file, const CorrelationIndex& index, const ApiCalls& api,
                           uint64_t device_ops, IngestStats* issues);

}  // namespace truffld::merge
