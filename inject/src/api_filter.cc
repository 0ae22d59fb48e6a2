// The essential API set: see api_filter.h.
#include "api_filter.h"

#include <cctype>

namespace truffld::inject {
namespace {

// Runtime functions not recorded: queries and polls, no device work and no waiting.
constexpr std::string_view kRuntimeQueries[] = {
    "cudaGetDevice", "cudaGetDeviceCount", "cudaSetDevice", "cudaGetDeviceFlags",
    "cudaGetDeviceProperties", "cudaDeviceGetAttribute", "cudaDeviceGetStreamPriorityRange",
    "cudaDeviceCanAccessPeer", "cudaDeviceGetPCIBusId", "cudaDeviceGetByPCIBusId",
    "cudaGetLastError", "cudaPeekAtLastError", "cudaGetErrorString", "cudaGetErrorName",
    "cudaDriverGetVersion", "cudaRuntimeGetVersion", "cudaGetDriverEntryPoint",
    "cudaGetDriverEntryPointByVersion", "cudaGetExportTable", "cudaGetFuncBySymbol",
    "cudaGetKernel", "cudaGetSymbolAddress", "cudaGetSymbolSize", "cudaFuncGetAttributes",
    "cudaFuncGetName", "cudaPointerGetAttributes", "cudaStreamIsCapturing",
    "cudaStreamGetCaptureInfo", "cudaThreadExchangeStreamCaptureMode", "cudaStreamGetPriority",
    "cudaStreamGetFlags", "cudaStreamGetDevice", "cudaStreamGetId", "cudaStreamQuery",
    "cudaEventQuery", "cudaMemGetInfo", "cudaDeviceGetLimit", "cudaDeviceGetCacheConfig",
    "cudaDeviceGetSharedMemConfig", "cudaDeviceGetDefaultMemPool", "cudaDeviceGetMemPool",
    "cudaChooseDevice", "cudaIpcGetMemHandle", "cudaGetChannelDesc", "cudaCtxResetPersistingL2Cache"};

// Driver functions recorded: prefixes of calls that enqueue, wait, allocate or load code, and
// the injector's flush points (cuProfilerStop) and context teardown.
constexpr std::string_view kDriverWork[] = {
    "cuLaunch", "cuGraphLaunch", "cuGraphInstantiate", "cuGraphUpload", "cuGraphExecUpdate",
    "cuMemcpy", "cuMemset", "cuMemAlloc", "cuMemFree", "cuMemHostAlloc", "cuMemHostRegister",
    "cuMemHostUnregister", "cuMemCreate", "cuMemMap", "cuMemUnmap", "cuMemRelease",
    "cuMemPrefetch", "cuMemPoolTrimTo", "cuStreamSynchronize", "cuCtxSynchronize",
    "cuEventSynchronize", "cuStreamWaitEvent", "cuStreamWaitValue", "cuStreamWriteValue",
    "cuStreamBatchMemOp", "cuEventRecord", "cuStreamBeginCapture", "cuStreamEndCapture",
    "cuModuleLoad", "cuLibraryLoad", "cuCtxCreate", "cuDevicePrimaryCtxRetain", "cuInit",
    "cuProfilerStart", "cuProfilerStop", "cuCtxDestroy", "cuDevicePrimaryCtxReset"};

// Prefixes of calls made once per operator that return without waiting (the detail tier), in
// both APIs; besides these, any name ending in "Async" (copies, memsets, stream-ordered
// allocation, prefetches) is per operator.
constexpr std::string_view kPerOperator[] = {
    "cudaLaunch", "cudaEventRecord", "cudaStreamWaitEvent", "cudaStreamAddCallback",
    "cudaFuncSetAttribute", "cudaFuncSetCacheConfig", "cudaFuncSetSharedMemConfig",
    "cudaConfigureCall", "cudaSetupArgument",
    "cuLaunch", "cuEventRecord", "cuStreamWaitEvent", "cuStreamWaitValue", "cuStreamWriteValue",
    "cuStreamBatchMemOp", "cuMemPrefetch"};

// Prefixes of runtime queries that come in families.
constexpr std::string_view kRuntimeQueryPrefixes[] = {"cudaOccupancy"};

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

std::string_view BaseApiName(std::string_view n) {
  for (size_t i = 0; i + 2 < n.size(); ++i) {
    if (n[i] != '_') continue;
    if (n[i + 1] == 'v' && std::isdigit(static_cast<unsigned char>(n[i + 2]))) return n.substr(0, i);
    if (n.substr(i, 5) == "_ptsz" || n.substr(i, 5) == "_ptds") return n.substr(0, i);
  }
  return n;
}

namespace {

bool Essential(bool driver, std::string_view base) {
  if (driver) {
    for (std::string_view p : kDriverWork)
      if (StartsWith(base, p)) return true;
    return false;
  }
  for (std::string_view q : kRuntimeQueries)
    if (base == q) return false;
  for (std::string_view p : kRuntimeQueryPrefixes)
    if (StartsWith(base, p)) return false;
  return true;
}

bool PerOperator(std::string_view base) {
  // cudaGraphLaunch / cuGraphLaunch start with neither "cudaLaunch" nor "cuLaunch": they stay
  // always on (one call per replayed step, and the regime of the step).
  constexpr std::string_view kAsync = "Async";
  if (base.size() >= kAsync.size() && base.substr(base.size() - kAsync.size()) == kAsync) return true;
  for (std::string_view p : kPerOperator)
    if (StartsWith(base, p)) return true;
  return false;
}

}  // namespace

ApiTier TierOf(bool driver, std::string_view name) {
  const std::string_view base = BaseApiName(name);
  if (!Essential(driver, base)) return ApiTier::kNone;
  return PerOperator(base) ? ApiTier::kDetail : ApiTier::kAlways;
}

}  // namespace truffld::inject
