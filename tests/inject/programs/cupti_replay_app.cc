// cupti_replay_app: plays the CUDA driver's part for the CUPTI replay tests on a CPU-only machine.
//
// It loads libcupti_injector.so and calls InitializeInjection exactly as the driver does for
// CUDA_INJECTION64_PATH; the injector then loads the CUPTI double (TRUFFLD_CUPTI_LIBRARY), and
// the app asks the double to replay a scenario. It also makes NVTX calls to show that NVTX
// capture keeps working whatever CUPTI does. Usage: cupti_replay_app SCENARIO
//
// SCENARIO windows STEPS MS [SLOW]: STEPS steps (NVTX ranges "step_execute_model[request_ids:rI]",
// each with a nested range, two kernel launches with correlation ids 1000+10*I+{0,1} and a copy
// 1000+10*I+5, then MS ms of sleep inside the step; step SLOW, if given, sleeps 150 ms more),
// with a launch 5000+I between steps; run with TRUFFLD_DEVICE_WINDOWS to sample device activity.
// SCENARIO half_calls: inside one step (a device window under TRUFFLD_DEVICE_WINDOWS=steps:2),
// the enter of launch 900 whose exit never comes and the exit of launch 901 whose enter never
// came, then launch 902 and copy 903 whole; after the step (the window closed), copy 904.
// SCENARIO flush_point_reset / flush_point_profiler_stop: plays the session without a flush, checks
// that no device activity is on disk yet, fires cudaDeviceReset / cuProfilerStop and checks that
// the activity reaches the dump while the process is still running (exit 0), else exit 5. Run with
// a long TRUFFLD_FLUSH_MS so that only the flush point can explain the write.
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace {

// Whether this process's dump in TRUFFLD_OUTPUT_DIR already holds a KERNEL record.
bool DumpHasKernel() {
  const char* dir = std::getenv("TRUFFLD_OUTPUT_DIR");
  if (!dir) return false;
  const std::string tag = "-p" + std::to_string(::getpid()) + ".jsonl";
  DIR* d = opendir(dir);
  if (!d) return false;
  bool found = false;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.find(tag) == std::string::npos) continue;
    std::ifstream in(std::string(dir) + "/" + name);
    std::stringstream ss;
    ss << in.rdbuf();
    found = found || ss.str().find("\"type\":\"KERNEL\"") != std::string::npos;
  }
  closedir(d);
  return found;
}

}  // namespace

int main(int argc, char** argv) {
  const char* scenario = argc > 1 ? argv[1] : "normal";
  void* dbl = dlopen(TRUFFLD_CUPTI_DOUBLE_PATH, RTLD_NOW | RTLD_GLOBAL);
  if (!dbl) { std::fprintf(stderr, "cannot load double: %s\n", dlerror()); return 2; }
  reinterpret_cast<void (*)(const char*)>(dlsym(dbl, "truffld_double_set_scenario"))(scenario);
  // "with_driver": a (fake) libcuda.so.1 is in the process, as in any CUDA application, so the
  // injector describes the devices in META. The scenario played is the normal one.
  if (std::string(scenario) == "with_driver") {
    if (!dlopen(TRUFFLD_FAKE_LIBCUDA_PATH, RTLD_NOW | RTLD_GLOBAL)) {
      std::fprintf(stderr, "cannot load fake libcuda: %s\n", dlerror());
      return 2;
    }
    scenario = "normal";
    reinterpret_cast<void (*)(const char*)>(dlsym(dbl, "truffld_double_set_scenario"))(scenario);
  }
  nvtxMarkA("before cuda");
  void* inj = dlopen(TRUFFLD_INJECTOR_PATH, RTLD_NOW | RTLD_LOCAL);
  if (!inj) { std::fprintf(stderr, "cannot load injector: %s\n", dlerror()); return 2; }
  auto init = reinterpret_cast<int (*)()>(dlsym(inj, "InitializeInjection"));
  if (!init || init() != 1) return 3;
  init();  // idempotent: a second call changes nothing
  const std::string sc = scenario;
  if (sc == "flush_point_reset" || sc == "flush_point_profiler_stop") {
    reinterpret_cast<int (*)(const char*)>(dlsym(dbl, "truffld_double_play_open"))("normal");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const bool before = DumpHasKernel();
    reinterpret_cast<void (*)(const char*)>(dlsym(dbl, "truffld_double_fire_flush_point"))(
        sc == "flush_point_reset" ? "reset" : "profiler_stop");
    bool after = false;
    for (int i = 0; i < 60 && !after; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      after = DumpHasKernel();
    }
    std::printf("kernel on disk before flush point: %d, after: %d\n", before, after);
    return !before && after ? 0 : 5;
  }
  if (sc == "half_calls") {
    auto launch = reinterpret_cast<void (*)(unsigned, int)>(dlsym(dbl, "truffld_double_launch"));
    auto half = reinterpret_cast<void (*)(unsigned, int)>(dlsym(dbl, "truffld_double_half_launch"));
    nvtxRangePushA("step_execute_model[request_ids:r0]");
    half(900, 0);
    half(901, 1);
    launch(902, 0);
    launch(903, 1);
    nvtxRangePop();
    launch(904, 1);
    return 0;
  }
  if (sc == "windows") {
    auto launch = reinterpret_cast<void (*)(unsigned, int)>(dlsym(dbl, "truffld_double_launch"));
    const int steps = argc > 2 ? std::atoi(argv[2]) : 10, ms = argc > 3 ? std::atoi(argv[3]) : 0;
    const int slow = argc > 4 ? std::atoi(argv[4]) : -1;
    for (int i = 0; i < steps; ++i) {
      nvtxRangePushA(("step_execute_model[request_ids:r" + std::to_string(i) + "]").c_str());
      nvtxRangePushA("model forward");
      launch(1000 + 10 * i, 0);
      launch(1000 + 10 * i + 1, 0);
      launch(1000 + 10 * i + 5, 1);
      nvtxRangePop();
      if (ms || i == slow) std::this_thread::sleep_for(std::chrono::milliseconds(ms + (i == slow ? 600 : 0)));
      nvtxRangePop();
      launch(5000 + i, 0);  // between steps
    }
    return 0;
  }
  nvtxRangePushA("replay");
  reinterpret_cast<int (*)(const char*)>(dlsym(dbl, "truffld_double_play"))(scenario);
  nvtxRangePop();
  nvtxMarkA("after cuda");
  return 0;
}
