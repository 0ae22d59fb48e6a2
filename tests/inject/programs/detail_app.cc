// detail_app: an NVTX 3 "engine" for the requested-window tests (tests/inject/
// detail_window_test.cc), run with NVTX_INJECTION64_PATH=libcupti_injector.so on a CPU-only
// machine. It queries the injector's truffld_detail_window() the way truffld's Python hooks do:
// the library NVTX loaded, found with dlopen(RTLD_NOLOAD), called right after each step's push
// and after its pop. Every step prints
//   step I PHASE in=STATE out=STATE gen=GENERATION
// (STATE after the push / after the pop: 1 open, 0 closed, -1 no windows; GENERATION after the
// pop). Modes:
//   slowstep     12 steps alternating one prefill step of 30 ms with three decode steps of
//                5 ms, one decode step of 150 ms (planted slow step), then 6 decode steps of 5 ms;
//                meanwhile another thread polls truffld_detail_window() and finally prints
//                "poller reads=N monotonic=1" (the generation it saw never went back)
//   ondemand N   5 decode steps of 3 ms, prints "ready", then decode steps of 3 ms until the
//                generation grows (at most 3000 steps), then N more
//   slowcomm     16 decode steps of 60 ms, each with one collective range (NVTX domain
//                "truffld.comm", as the hooks write it) of 2 ms; in step 12 the collective
//                takes 55 ms and the rest of the step 53 ms less: only the collective is slow
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

namespace {

using DetailFn = int (*)(unsigned long long*);
DetailFn g_detail = nullptr;
int g_step = 0;

int Detail(unsigned long long* gen) { return g_detail ? g_detail(gen) : -1; }

// A decode step of 60 ms holding one all-reduce range of `comm_ms` in the comm domain.
void CommStep(nvtxDomainHandle_t comm, int comm_ms) {
  const std::string name = "step_execute_model[request_ids:r" + std::to_string(g_step) + "][phase:decode]";
  nvtxRangePushA(name.c_str());
  const int in = Detail(nullptr);
  nvtxEventAttributes_t a = {};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = "nccl:all_reduce, bytes=1048576, world_size=2, impl=test";
  nvtxDomainRangePushEx(comm, &a);
  std::this_thread::sleep_for(std::chrono::milliseconds(comm_ms));
  nvtxDomainRangePop(comm);
  std::this_thread::sleep_for(std::chrono::milliseconds(60 - comm_ms));
  nvtxRangePop();
  unsigned long long gen = 0;
  const int out = Detail(&gen);
  std::printf("step %d decode in=%d out=%d gen=%llu\n", g_step++, in, out, gen);
}

// One step of `ms` milliseconds in phase `phase`; returns the generation after its pop.
unsigned long long Step(const char* phase, int ms) {
  const std::string name = "step_execute_model[request_ids:r" + std::to_string(g_step) + "][phase:" + phase + "]";
  nvtxRangePushA(name.c_str());
  const int in = Detail(nullptr);
  nvtxRangePushA("model forward");
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  nvtxRangePop();
  nvtxRangePop();
  unsigned long long gen = 0;
  const int out = Detail(&gen);
  std::printf("step %d %s in=%d out=%d gen=%llu\n", g_step++, phase, in, out, gen);
  return gen;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "slowstep";
  nvtxInitialize(nullptr);  // NVTX loads the injector now
  if (const char* path = std::getenv("NVTX_INJECTION64_PATH")) {
    if (void* lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD))
      g_detail = reinterpret_cast<DetailFn>(dlsym(lib, "truffld_detail_window"));
  }
  if (!g_detail) {
    std::fprintf(stderr, "truffld_detail_window not found\n");
    return 2;
  }
  if (mode == "slowstep") {
    std::atomic<bool> done{false};
    long reads = 0;
    bool monotonic = true;
    std::thread poller([&] {  // as a second Python thread would
      unsigned long long last = 0, gen = 0;
      while (!done.load()) {
        Detail(&gen);
        monotonic = monotonic && gen >= last;
        last = gen;
        ++reads;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    });
    for (int i = 0; i < 12; ++i) i % 4 == 0 ? Step("prefill", 30) : Step("decode", 5);
    Step("decode", 150);
    for (int i = 0; i < 6; ++i) Step("decode", 5);
    done.store(true);
    poller.join();
    std::printf("poller reads=%ld monotonic=%d\n", reads, monotonic ? 1 : 0);
  } else if (mode == "slowcomm") {
    nvtxDomainHandle_t comm = nvtxDomainCreateA("truffld.comm");
    for (int i = 0; i < 16; ++i) CommStep(comm, i == 12 ? 55 : 2);
  } else if (mode == "ondemand") {
    const int after = argc > 2 ? std::atoi(argv[2]) : 4;
    unsigned long long gen = 0;
    for (int i = 0; i < 5; ++i) gen = Step("decode", 3);
    std::printf("ready\n");
    std::fflush(stdout);
    for (int i = 0; i < 3000 && Step("decode", 3) == gen; ++i) {
    }
    for (int i = 0; i < after; ++i) Step("decode", 3);
  } else {
    std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
    return 2;
  }
  return 0;
}
