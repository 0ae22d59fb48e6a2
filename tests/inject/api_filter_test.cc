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

}  // namespace
}  // namespace truffld::inject
