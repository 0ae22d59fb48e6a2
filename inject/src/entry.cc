// Exported entry points of libcupti_injector.so.
//
//   InitializeInjection            called by the CUDA driver (CUDA_INJECTION64_PATH)
//   InitializeInjectionNvtx2       called by NVTX (NVTX_INJECTION64_PATH)
//   InitializeInjectionNvtxExtension  called by NVTX extensions (payload schemas)
//   truffld_detail_window          called by truffld's Python hooks (ctypes): is a device
//                                  window open now?
//
// Each is idempotent and may come first: the first one creates the process's Tracer (after the
// TRUFFLD_DISABLE / TRUFFLD_PROCESS_FILTER decision, which happens before any tracer memory is
// allocated) and installs the lifecycle hooks. Everything else in the library has hidden
// visibility.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "config.h"
#include "cupti_adapter.h"
#include "lifecycle.h"
#include "nvtx_inject.h"
#include "tracer.h"

namespace truffld::inject {
namespace {

Tracer* g_tracer = nullptr;
std::once_flag g_once;

std::string ReadCmdline() {
  std::string raw;
  const int fd = ::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return raw;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) {
    raw.append(buf, static_cast<size_t>(n));
    if (raw.size() > (1 << 20)) break;
  }
  ::close(fd);
  return raw;
}

void CreateTracer() {
  auto env = [](const char* n) -> const char* { return ::getenv(n); };
  std::vector<std::string> warnings;
  Config config = ParseConfig(env, &warnings);
  if (config.disabled) return;
  const std::vector<std::string> args = SplitCmdline(ReadCmdline());
  std::string joined;
  for (const auto& a : args) { if (!joined.empty()) joined += ' '; joined += a; }
  std::string filter_error;
  if (!ProcessMatches(config.process_filter, joined, &filter_error)) {
    if (!filter_error.empty()) Tracer::Log(filter_error + "; tracing nothing");
    return;  // not ours to trace: nothing allocated, nothing written
  }
  for (const auto& w : warnings) Tracer::Log(w);
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  g_tracer = new Tracer(std::move(config), args, host);  // lives until the process ends
  g_tracer->Start();
  InstallLifecycleHooks(g_tracer);
}

Tracer* GetTracer() {
  std::call_once(g_once, &CreateTracer);
  return g_tracer;
}

}  // namespace
}  // namespace truffld::inject

#define TRUFFLD_EXPORT extern "C" __attribute__((visibility("default")))

TRUFFLD_EXPORT int InitializeInjectionNvtx2(const void* (*get_export_table)(uint32_t)) {
  truffld::inject::Tracer* t = truffld::inject::GetTracer();
  if (!t) return 0;  // NVTX turns every call into a no-op: zero cost for filtered processes
  return truffld::inject::AttachNvtx(t, get_export_table);
}

TRUFFLD_EXPORT int InitializeInjectionNvtxExtension(void* module_info) {
  truffld::inject::Tracer* t = truffld::inject::GetTracer();
  if (!t) return 0;
  return truffld::inject::AttachNvtxPayloadExtension(t, module_info);
}

TRUFFLD_EXPORT int InitializeInjection(void) {
  static std::once_flag cupti_once;
  truffld::inject::Tracer* t = truffld::inject::GetTracer();
  if (!t) return 1;  // the driver keeps going either way
  if (t->config().cupti) std::call_once(cupti_once, [t] { truffld::inject::StartCupti(t); });
  return 1;
}

// 1 while a detail (device) window is open, 0 while none is (sampled modes and off), -1 when
// the injector has no windows: TRUFFLD_DEVICE_WINDOWS=all (detail always on), or no tracer
// yet (not initialised, disabled or filtered out). `generation`, when not null, receives the
// number of windows opened so far, so a caller sees a window that opened and closed between
// two calls. One atomic load: thread-safe, lock-free, callable at any time. A window opened at
// a step's begin reads 1 as soon as the step's NVTX push returns, and 0 after the pop that
// closes it.
TRUFFLD_EXPORT int truffld_detail_window(unsigned long long* generation) {
  return truffld::inject::Tracer::DetailWindow(generation);
}
