// Which CUDA API functions the injector records by default ("essential" set).
//
// CUPTI charges every enabled API callback about a microsecond on the calling thread whatever
// the handler does, and PyTorch makes many calls that carry no diagnostic value: in a traced
// Hugging Face generation loop 81% of runtime calls were cudaGetDevice, and most driver calls
// were either made inside a runtime call (cuCtxGetDevice, cuLaunchKernel under cudaLaunchKernel)
// or were queries (cuDevicePrimaryCtxGetState, cuGetProcAddress, cuKernelGetName). The essential
// set keeps every call that enqueues device work, waits for it, or allocates memory:
//   - runtime API: everything except a fixed list of queries (device/attribute/error/capture
//     state getters, occupancy calculators, stream/event polls);
//   - driver API: only launches, graph launch/instantiate/upload, copies, memsets, allocation,
//     synchronisation and stream ordering, capture begin/end, module/library loading, context
//     teardown and cuProfilerStart/Stop (a flush point); kernels
//     launched straight through the driver (Triton, cuBLASLt, FlashAttention) keep their call.
// Within the essential set, two tiers (TRUFFLD_CUPTI_API_SET=tiered, the default where device
// windows are sampled): the always-on tier keeps the calls that block the host or happen a few
// times in a run (synchronisation, synchronous copies and memsets, allocation and freeing, graph
// launch, instantiation and capture, code loading, context teardown, profiler flush points);
// the detail tier holds the calls made once per operator that return at once (kernel launches,
// asynchronous copies and memsets, event records, stream waits, stream-ordered allocation).
// The detail tier's callbacks are on only inside device windows, where their kernels and copies
// are recorded too: outside, a launch has no device record to bind and would cost CUPTI's
// microsecond for nothing. TRUFFLD_CUPTI_API_SET=all restores every callback. Pure logic (no
// CUPTI), unit-tested.
// Thread-safety: stateless functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace truffld::inject {

// CUPTI's callback names carry version and per-thread-stream suffixes
// ("cudaMemcpyAsync_ptsz_v7000", "cuMemAlloc_v2"); returns the API function's plain name.
std::string_view BaseApiName(std::string_view cupti_name);

// Which tier records this runtime (driver = false) or driver API function: kNone (not in the
// essential set), kDetail (inside device windows only) or kAlways. `name` may carry CUPTI's
// suffixes.
enum class ApiTier : uint8_t { kNone, kDetail, kAlways };
ApiTier TierOf(bool driver, std::string_view name);

// True when the essential set records this function (either tier).
inline bool EssentialApi(bool driver, std::string_view name) { return TierOf(driver, name) != ApiTier::kNone; }

}  // namespace truffld::inject
