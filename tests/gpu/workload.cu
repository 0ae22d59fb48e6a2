// truffld GPU workload: a small, fully known CUDA program traced by libcupti_injector.so.
//
// What it does (and writes to the --expect JSON file, so check_trace.py can compare):
//   * 4 host threads; each runs `steps` NVTX step ranges named as the Python hooks name steps
//     ("step_execute_model[request_ids:<id>]") on its own stream
//     (threads 0,2 share stream A's device, threads 1,3 use stream B; two streams per thread are
//     created so that every thread also uses a second stream for its copies);
//   * inside each step: nested ranges "gemm" (one cuBLAS SGEMM), "elementwise" (our `scale`
//     and `add` kernels), a memset and a device-to-host memcpy;
//   * thread 0 then captures a CUDA graph (two `scale` kernels + one `add`) inside an NVTX range
//     "capture", and replays it `replays` times inside "replay" ranges;
//   * when libnccl.so.2 can be dlopen'ed, two single-rank all-reduces (Sum out of place, Avg in
//     place) inside "allreduce" (skipped with a message otherwise).
//   * with --launches N it does something else: N launches of an empty kernel in a loop (after
//     a warm-up), timed, so tests/gpu/overhead.py can state the cost per kernel launch.
// Usage: truffld_gpu_workload [--steps N] [--replays R] [--expect out.json] [--quiet]
//                             [--launches N]
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#define CHECK(x)                                                                       \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

__global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
__global__ void add(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += x[i];
}

namespace {

constexpr int kThreads = 4;
constexpr int kN = 1 << 20;
constexpr int kM = 256;  // GEMM size

struct Counts {
  int scale = 0, add = 0, gemm = 0, memset = 0, memcpy_dtoh = 0, memcpy_htod = 0, steps = 0;
};

void Worker(int tid, int steps, Counts* out) {
  CHECK(cudaSetDevice(0));
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  float *x, *y, *a, *b, *c;
  CHECK(cudaMalloc(&x, kN * sizeof(float)));
  CHECK(cudaMalloc(&y, kN * sizeof(float)));
  CHECK(cudaMalloc(&a, kM * kM * sizeof(float)));
  CHECK(cudaMalloc(&b, kM * kM * sizeof(float)));
  CHECK(cudaMalloc(&c, kM * kM * sizeof(float)));
  std::vector<float> host(kN, 1.0f);
  CHECK(cudaMemcpyAsync(x, host.data(), kN * sizeof(float), cudaMemcpyHostToDevice, s2));
  out->memcpy_htod++;
  CHECK(cudaStreamSynchronize(s2));
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) { std::fprintf(stderr, "cublasCreate failed\n"); std::exit(1); }
  cublasSetStream(h, s1);
  const float one = 1.0f, zero = 0.0f;
  for (int s = 0; s < steps; ++s) {
    char name[64];
    std::snprintf(name, sizeof name, "step_execute_model[request_ids:t%d-%d]", tid, s);
    nvtxRangePushA(name);
    nvtxRangePushA("gemm");
    cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, kM, kM, kM, &one, a, kM, b, kM, &zero, c, kM);
    out->gemm++;
    nvtxRangePop();
    nvtxRangePushA("elementwise");
    scale<<<(kN + 255) / 256, 256, 0, s1>>>(x, 1.0001f, kN);
    add<<<(kN + 255) / 256, 256, 0, s1>>>(y, x, kN);
    out->scale++;
    out->add++;
    nvtxRangePop();
    CHECK(cudaMemsetAsync(y, 0, kN * sizeof(float), s1));
    out->memset++;
    CHECK(cudaStreamSynchronize(s1));
    CHECK(cudaMemcpyAsync(host.data(), y, 4096, cudaMemcpyDeviceToHost, s2));
    out->memcpy_dtoh++;
    CHECK(cudaStreamSynchronize(s2));
    nvtxRangePop();
    out->steps++;
  }
  cublasDestroy(h);
  CHECK(cudaFree(x)); CHECK(cudaFree(y)); CHECK(cudaFree(a)); CHECK(cudaFree(b)); CHECK(cudaFree(c));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
}

// Captures scale, scale, add into a graph and replays it.
int GraphPart(int replays, Counts* out) {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  float *x, *y;
  CHECK(cudaMalloc(&x, kN * sizeof(float)));
  CHECK(cudaMalloc(&y, kN * sizeof(float)));
  cudaGraph_t g;
  cudaGraphExec_t ge;
  nvtxRangePushA("capture");
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  scale<<<(kN + 255) / 256, 256, 0, s>>>(x, 0.5f, kN);
  scale<<<(kN + 255) / 256, 256, 0, s>>>(y, 2.0f, kN);
  add<<<(kN + 255) / 256, 256, 0, s>>>(y, x, kN);
  CHECK(cudaStreamEndCapture(s, &g));
  CHECK(cudaGraphInstantiate(&ge, g, 0));
  nvtxRangePop();
  for (int r = 0; r < replays; ++r) {
    nvtxRangePushA("replay");
    CHECK(cudaGraphLaunch(ge, s));
    nvtxRangePop();
  }
  CHECK(cudaStreamSynchronize(s));
  out->scale += 2 * replays;
  out->add += replays;
  CHECK(cudaGraphExecDestroy(ge));
  CHECK(cudaGraphDestroy(g));
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  CHECK(cudaStreamDestroy(s));
  return 3;  // kernel nodes per replay
}

// Single-rank NCCL all-reduce through dlopen (NCCL is not part of the CUDA toolkit).
bool NcclPart() {
  void* lib = dlopen("libnccl.so.2", RTLD_NOW);
  if (!lib) {
    std::printf("nccl: libnccl.so.2 not found (%s); skipping the all-reduce\n", dlerror());
    return false;
  }
  struct UniqueId { char internal[128]; };
  using GetIdFn = int (*)(UniqueId*);
  using InitFn = int (*)(void**, int, UniqueId, int);
  using AllReduceFn = int (*)(const void*, void*, size_t, int, int, void*, cudaStream_t);
  using DestroyFn = int (*)(void*);
  auto get_id = reinterpret_cast<GetIdFn>(dlsym(lib, "ncclGetUniqueId"));
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "ncclCommInitRank"));
  auto all_reduce = reinterpret_cast<AllReduceFn>(dlsym(lib, "ncclAllReduce"));
  auto destroy = reinterpret_cast<DestroyFn>(dlsym(lib, "ncclCommDestroy"));
  if (!get_id || !init || !all_reduce || !destroy) {
    std::printf("nccl: missing symbols; skipping the all-reduce\n");
    return false;
  }
  UniqueId id;
  void* comm = nullptr;
  if (get_id(&id) != 0 || init(&comm, 1, id, 0) != 0) {
    std::printf("nccl: init failed; skipping the all-reduce\n");
    return false;
  }
  // With one rank NCCL does no collective kernel: an out-of-place Sum becomes a device-to-device
  // copy, an in-place Avg a small scaling kernel. Both are device work launched inside the
  // ncclAllReduce NVTX range, which is what the checker links.
  float *send, *recv;
  CHECK(cudaMalloc(&send, 1 << 20));
  CHECK(cudaMalloc(&recv, 1 << 20));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  nvtxRangePushA("allreduce");
  const int ncclFloat32 = 7, ncclSum = 0, ncclAvg = 4;
  const size_t n = (1 << 20) / sizeof(float);
  int rc = all_reduce(send, recv, n, ncclFloat32, ncclSum, comm, s);
  if (rc == 0) rc = all_reduce(recv, recv, n, ncclFloat32, ncclAvg, comm, s);
  nvtxRangePop();
  CHECK(cudaStreamSynchronize(s));
  destroy(comm);
  CHECK(cudaFree(send));
  CHECK(cudaFree(recv));
  CHECK(cudaStreamDestroy(s));
  return rc == 0;
}

}  // namespace

__global__ void empty_kernel() {}

// The launch-rate loop: seconds for `n` empty-kernel launches plus the final synchronize.
double LaunchLoop(int n) {
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  for (int i = 0; i < 100; ++i) empty_kernel<<<1, 32, 0, s>>>();
  CHECK(cudaStreamSynchronize(s));
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) empty_kernel<<<1, 32, 0, s>>>();
  CHECK(cudaStreamSynchronize(s));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(cudaStreamDestroy(s));
  return secs;
}

int main(int argc, char** argv) {
  int steps = 20, replays = 10, launches = 0;
  const char* expect = nullptr;
  bool quiet = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) steps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--replays") && i + 1 < argc) replays = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--expect") && i + 1 < argc) expect = argv[++i];
    else if (!std::strcmp(argv[i], "--quiet")) quiet = true;
    else if (!std::strcmp(argv[i], "--launches") && i + 1 < argc) launches = std::atoi(argv[++i]);
    else { std::fprintf(stderr, "usage: %s [--steps N] [--replays R] [--expect out.json] [--quiet] [--launches N]\n", argv[0]); return 2; }
  }
  if (launches > 0) {
    CHECK(cudaFree(nullptr));
    const double secs = LaunchLoop(launches);
    std::printf("launches=%d ns_per_launch=%.1f\nelapsed_s=%.6f\n", launches, secs * 1e9 / launches, secs);
    return 0;
  }
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(cudaFree(nullptr));  // create the context
  Counts counts[kThreads];
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) ts.emplace_back(Worker, t, steps, &counts[t]);
  for (auto& t : ts) t.join();
  Counts graph;
  const int nodes = GraphPart(replays, &graph);
  const bool nccl = NcclPart();
  CHECK(cudaDeviceSynchronize());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Counts total = graph;
  for (auto& c : counts) {
    total.scale += c.scale; total.add += c.add; total.gemm += c.gemm; total.memset += c.memset;
    total.memcpy_dtoh += c.memcpy_dtoh; total.memcpy_htod += c.memcpy_htod; total.steps += c.steps;
  }
  if (expect) {
    FILE* f = std::fopen(expect, "w");
    if (!f) { std::perror(expect); return 1; }
    std::fprintf(f,
                 "{\"threads\":%d,\"steps\":%d,\"scale\":%d,\"add\":%d,\"gemm\":%d,\"memset\":%d,"
                 "\"memcpy_dtoh\":%d,\"memcpy_htod\":%d,\"graph_replays\":%d,\"graph_kernel_nodes\":%d,"
                 "\"nccl_allreduce\":%s,\"nccl_allreduce_calls\":2}\n",
                 kThreads, total.steps, total.scale, total.add, total.gemm, total.memset,
                 total.memcpy_dtoh, total.memcpy_htod, replays, nodes, nccl ? "true" : "false");
    std::fclose(f);
  }
  if (!quiet) std::printf("workload: %.3f s\n", secs);
  std::printf("elapsed_s=%.6f\n", secs);
  return 0;
}
