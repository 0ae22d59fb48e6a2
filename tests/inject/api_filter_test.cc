// The essential API set: which CUDA runtime and driver functions the injector records by default.
#include "api_filter.h"

#include <gtest/gtest.h>

namespace truffld::inject {
namespace {

TEST(ApiFilter, BaseNameDropsCuptiSuffixes) {
  EXPECT_EQ(BaseApiName("cudaMemcpyAsync_ptsz_v7000"), "cudaMemcpyAsync");
  EXPECT_EQ(BaseApiName("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(BaseApiName("cuMemAlloc_v2"), "cuMemAlloc");
  EXPECT_EQ(BaseApiName("cuMemcpyHtoDAsync_v2_ptsz"), "cuMemcpyHtoDAsync");
  EXPECT_EQ(BaseApiName("cuLaunchKernel"), "cuLaunchKernel");
  EXPECT_EQ(BaseApiName("cudaGetDevice_v3020"), "cudaGetDevice");
  EXPECT_EQ(BaseApiName("cuStreamGetCaptureInfo_v2"), "cuStreamGetCaptureInfo");
  EXPECT_EQ(BaseApiName("cuda_value"), "cuda_value");  // "_v" not followed by a digit
  EXPECT_EQ(BaseApiName(""), "");
}

TEST(ApiFilter, RuntimeKeepsWorkAndWaitsDropsQueries) {
  for (const char* kept : {"cudaLaunchKernel_v7000", "cudaLaunchKernelExC_v11060", "cudaMemcpy_v3020",
                           "cudaMemcpyAsync_ptsz_v7000", "cudaMemsetAsync_v3020", "cudaGraphLaunch_v10000",
                           "cudaStreamSynchronize_v3020", "cudaDeviceSynchronize_v3020",
                           "cudaEventSynchronize_v3020", "cudaMalloc_v3020", "cudaFree_v3020",
                           "cudaStreamWaitEvent_v3020", "cudaEventRecord_v3020",
                           "cudaGraphInstantiate_v10000", "cudaStreamBeginCapture_v10000",
                           "cudaDeviceReset_v3020"}) {
    EXPECT_TRUE(EssentialApi(false, kept)) << kept;
  }
  for (const char* dropped : {"cudaGetDevice_v3020", "cudaGetLastError_v3020", "cudaPeekAtLastError_v3020",
                              "cudaStreamIsCapturing_v10000", "cudaThreadExchangeStreamCaptureMode_v10010",
                              "cudaDeviceGetAttribute_v5000", "cudaOccupancyMaxActiveBlocksPerMultiprocessor_v6000",
                              "cudaOccupancyMaxActiveClusters_v11070", "cudaEventQuery_v3020",
                              "cudaStreamQuery_v3020", "cudaSetDevice_v3020", "cudaGetDeviceCount_v3020"}) {
    EXPECT_FALSE(EssentialApi(false, dropped)) << dropped;
  }
}

TEST(ApiFilter, DriverKeepsLaunchesCopiesAllocationAndWaitsOnly) {
  for (const char* kept : {"cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchKernel_ptsz", "cuLaunchCooperativeKernel",
                           "cuGraphLaunch", "cuGraphInstantiateWithFlags", "cuMemcpyHtoDAsync_v2", "cuMemcpyAsync",
                           "cuMemsetD8Async", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemAllocAsync", "cuMemCreate",
                           "cuMemMap", "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize",
                           "cuStreamWaitEvent", "cuModuleLoadData", "cuLibraryLoadData", "cuEventRecord",
                           "cuProfilerStop", "cuCtxDestroy_v2"}) {
    EXPECT_TRUE(EssentialApi(true, kept)) << kept;
  }
  for (const char* dropped : {"cuCtxGetDevice_v2", "cuCtxGetCurrent", "cuDevicePrimaryCtxGetState",
                              "cuGetProcAddress_v2", "cuKernelGetName", "cuKernelGetAttribute", "cuKernelGetFunction",
                              "cuLibraryGetKernel", "cuDeviceGetAttribute", "cuDeviceGet",
                              "cuStreamGetCaptureInfo_v2", "cuThreadExchangeStreamCaptureMode", "cuMemGetInfo_v2",
                              "cuMemGetAddressRange_v2", "cuPointerGetAttribute", "cuFuncGetAttribute"}) {
    EXPECT_FALSE(EssentialApi(true, dropped)) << dropped;
  }
}

TEST(ApiFilter, PerOperatorCallsAreTheDetailTier) {
  for (const char* detail : {"cudaLaunchKernel_v7000", "cudaLaunchKernelExC_v11060", "cudaLaunchHostFunc_v10000",
                             "cudaMemcpyAsync_ptsz_v7000", "cudaMemcpy2DAsync_v3020", "cudaMemsetAsync_v3020",
                             "cudaEventRecord_v3020", "cudaEventRecordWithFlags_v11010",
                             "cudaStreamWaitEvent_v3020", "cudaMallocAsync_v11020", "cudaFreeAsync_v11020",
                             "cudaFuncSetAttribute_v9000", "cudaMemPrefetchAsync_v8000"}) {
    EXPECT_EQ(TierOf(false, detail), ApiTier::kDetail) << detail;
  }
  for (const char* detail : {"cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel_ptsz",
                             "cuMemcpyHtoDAsync_v2", "cuMemcpyAsync", "cuMemsetD8Async", "cuMemAllocAsync",
                             "cuMemFreeAsync", "cuEventRecord", "cuStreamWaitEvent", "cuStreamWaitValue32_v2",
                             "cuStreamWriteValue64", "cuStreamBatchMemOp_v2", "cuMemPrefetchAsync"}) {
    EXPECT_EQ(TierOf(true, detail), ApiTier::kDetail) << detail;
  }
}

TEST(ApiFilter, BlockingAndRareCallsAreAlwaysOn) {
  for (const char* always : {"cudaMemcpy_v3020", "cudaMemcpy2D_v3020", "cudaMemcpyToSymbol_v3020",
                             "cudaMemset_v3020", "cudaStreamSynchronize_v3020", "cudaDeviceSynchronize_v3020",
                             "cudaEventSynchronize_v3020", "cudaMalloc_v3020", "cudaFree_v3020",
                             "cudaMallocHost_v3020", "cudaHostAlloc_v3020", "cudaGraphLaunch_v10000",
                             "cudaGraphInstantiate_v10000", "cudaStreamBeginCapture_v10000",
                             "cudaStreamEndCapture_v10000", "cudaDeviceReset_v3020", "cudaStreamCreate_v3020",
                             "cudaEventCreate_v3020"}) {
    EXPECT_EQ(TierOf(false, always), ApiTier::kAlways) << always;
  }
  for (const char* always : {"cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2", "cuMemcpy", "cuMemsetD8_v2",
                             "cuStreamSynchronize", "cuCtxSynchronize", "cuEventSynchronize", "cuMemAlloc_v2",
                             "cuMemFree_v2", "cuMemHostAlloc", "cuGraphLaunch", "cuGraphLaunch_ptsz",
                             "cuGraphInstantiateWithFlags", "cuGraphUpload", "cuStreamBeginCapture_v2",
                             "cuModuleLoadData", "cuLibraryLoadData", "cuProfilerStop", "cuCtxDestroy_v2",
                             "cuMemCreate", "cuMemMap"}) {
    EXPECT_EQ(TierOf(true, always), ApiTier::kAlways) << always;
  }
  EXPECT_EQ(TierOf(false, "cudaGetDevice_v3020"), ApiTier::kNone);
  EXPECT_EQ(TierOf(true, "cuCtxGetCurrent"), ApiTier::kNone);
}

}  // namespace
}  // namespace truffld::inject
