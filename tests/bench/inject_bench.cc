// Microbenchmarks of libcupti_injector.so's hot paths (label bench; not in the default run).
//
//   truffld_inject_bench --capture=off   NVTX push+pop with no tool attached (NVTX's no-op path)
//   truffld_inject_bench --capture=on    the same calls with the injector attached through
//                                        NVTX_INJECTION64_PATH, plus CUDA API callbacks
//                                        replayed through the CUPTI double
// NVTX attaches its tool once per process, so "off" and "on" are two runs of this binary.
// Rings are 16 MiB per thread and the flush period short so that the measured path is mostly
// "record written", not "ring full, dropped"; the dump's STATS says how many were dropped. Rings
// become resident as they fill (their first pass page-faults), so each benchmark first writes a
// ring's worth of records: the timed loop measures a thread whose ring is warm.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

using FireApi = void (*)(long);
FireApi g_fire_api = nullptr;

// 50 000 iterations per thread fit one 16 MiB ring, so every event takes the "written" path.
constexpr int kIters = 50000;

// Outside the timed loop: allocates the thread's ring and touches all of it (131,072 slots).
void WarmUp() {
  for (int i = 0; i < 65536; ++i) {
    nvtxRangePushA("warm-up");
    nvtxRangePop();
  }
}

void BM_NvtxPushPop(benchmark::State& state) {
  WarmUp();
  for (auto _ : state) {
    nvtxRangePushA("decode_step");
    nvtxRangePop();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NvtxPushPop)->Iterations(kIters)->Threads(1)->Threads(2)->Threads(8);

void BM_NvtxDomainPushPopWithPayload(benchmark::State& state) {
  static nvtxDomainHandle_t domain = nvtxDomainCreateA("bench");
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = "request cmpl-0123456789abcdef";
  a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
  a.payload.ullValue = 7;
  WarmUp();
  for (auto _ : state) {
    nvtxDomainRangePushEx(domain, &a);
    nvtxDomainRangePop(domain);
  }
}
BENCHMARK(BM_NvtxDomainPushPopWithPayload)->Iterations(kIters)->Threads(1);

void BM_CudaApiCallbackRecord(benchmark::State& state) {
  if (!g_fire_api) {
    state.SkipWithError("CUPTI double not loaded");
    return;
  }
  g_fire_api(131072);  // warm-up: allocates the thread's ring and touches all of it
  for (auto _ : state) g_fire_api(1);  // one cudaLaunchKernel enter + exit
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CudaApiCallbackRecord)->Iterations(kIters)->Threads(1)->Threads(8);

}  // namespace

int main(int argc, char** argv) {
  bool capture = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--capture=on") == 0) { capture = true; continue; }
    if (std::strcmp(argv[i], "--capture=off") == 0) { capture = false; continue; }
    args.push_back(argv[i]);
  }
  char dir[] = "/tmp/truffld-bench-XXXXXX";
  void* dbl = dlopen(TRUFFLD_CUPTI_DOUBLE_PATH, RTLD_NOW | RTLD_GLOBAL);
  if (dbl) g_fire_api = reinterpret_cast<FireApi>(dlsym(dbl, "truffld_double_fire_api"));
  if (capture) {
    const char* given = getenv("TRUFFLD_OUTPUT_DIR");
    if (!given && !mkdtemp(dir)) return 1;
    setenv("NVTX_INJECTION64_PATH", TRUFFLD_INJECTOR_PATH, 1);
    setenv("TRUFFLD_OUTPUT_DIR", given ? given : dir, 0);
    setenv("TRUFFLD_THREAD_BUFFER_KB", "16384", 0);
    setenv("TRUFFLD_MAX_BUFFER_MB", "1024", 0);
    setenv("TRUFFLD_FLUSH_MS", "20", 0);
    setenv("TRUFFLD_CUPTI_LIBRARY", TRUFFLD_CUPTI_DOUBLE_PATH, 1);
    void* inj = dlopen(TRUFFLD_INJECTOR_PATH, RTLD_NOW | RTLD_LOCAL);
    auto init = inj ? reinterpret_cast<int (*)()>(dlsym(inj, "InitializeInjection")) : nullptr;
    if (init) init();  // subscribes the injector's CUPTI callback inside the double
    std::fprintf(stderr, "capture on: dump in %s\n", getenv("TRUFFLD_OUTPUT_DIR"));
  }
  nvtxMarkA("bench start");  // attaches the NVTX tool (or not) before timing
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
