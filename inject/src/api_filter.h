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
// TRUFFLD_CUPTI_API_SET=all restores every callback. Pure logic (no CUPTI), unit-tested.
// Thread-safety: stateless functions.
#pragma once

#include <string_view>

namespace truffld::inject {

// CUPTI's callback names carry version and per-thread-stream suffixes
// ("cudaMemcpyAsync_ptsz_v7000", "cuMemAlloc_v2"); returns the API function's plain name.
std::string_view BaseApiName(std::string_view cupti_name);

// True when the essential set records this runtime (driver = false) or driver API function.
// `name` may carry CUPTI's suffixes.
bool EssentialApi(bool driver, std::string_view name);

}  // namespace truffld::inject
