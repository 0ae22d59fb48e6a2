// cupti_replay_app: plays the CUDA driver's part for the CUPTI replay tests on a CPU-only machine.
//
// It loads libcupti_injector.so and calls InitializeInjection exactly as the driver does for
// CUDA_INJECTION64_PATH; the injector then loads the CUPTI double (TRUFFLD_CUPTI_LIBRARY), and
// the app asks the double to replay a scenario. It also makes NVTX calls to show that NVTX
// capture keeps working whatever CUPTI does. Usage: cupti_replay_app SCENARIO
#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>

int main(int argc, char** argv) {
  const char* scenario = argc > 1 ? argv[1] : "normal";
  void* dbl = dlopen(TRUFFLD_CUPTI_DOUBLE_PATH, RTLD_NOW | RTLD_GLOBAL);
  if (!dbl) { std::fprintf(stderr, "cannot load double: %s\n", dlerror()); return 2; }
  reinterpret_cast<void (*)(const char*)>(dlsym(dbl, "truffld_double_set_scenario"))(scenario);
  nvtxMarkA("before cuda");
  void* inj = dlopen(TRUFFLD_INJECTOR_PATH, RTLD_NOW | RTLD_LOCAL);
  if (!inj) { std::fprintf(stderr, "cannot load injector: %s\n", dlerror()); return 2; }
  auto init = reinterpret_cast<int (*)()>(dlsym(inj, "InitializeInjection"));
  if (!init || init() != 1) return 3;
  init();  // idempotent: a second call changes nothing
  nvtxRangePushA("replay");
  reinterpret_cast<int (*)(const char*)>(dlsym(dbl, "truffld_double_play"))(scenario);
  nvtxRangePop();
  nvtxMarkA("after cuda");
  return 0;
}
