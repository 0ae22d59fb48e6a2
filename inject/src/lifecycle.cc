// Process lifecycle hooks: see lifecycle.h.
#include "lifecycle.h"

#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <cstdlib>

#include "tracer.h"

namespace truffld::inject {

namespace {

Tracer* g_tracer = nullptr;
constexpr int kSignals[] = {SIGTERM, SIGINT};
struct sigaction g_previous[sizeof(kSignals) / sizeof(kSignals[0])];

void OnExit() {
  if (g_tracer) g_tracer->Shutdown();
}

void OnSignal(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  size_t i = 0;
  while (i < sizeof(kSignals) / sizeof(kSignals[0]) && kSignals[i] != sig) ++i;
  if (i == sizeof(kSignals) / sizeof(kSignals[0])) return;
  const struct sigaction& prev = g_previous[i];
  const bool prev_is_default = !(prev.sa_flags & SA_SIGINFO) && prev.sa_handler == SIG_DFL;
  if (g_tracer) g_tracer->FlushAndWait(/*final_stats=*/prev_is_default, 2000);
  errno = saved_errno;
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction) prev.sa_sigaction(sig, info, context);
  } else if (prev.sa_handler == SIG_IGN) {
    // the application ignores this signal; so do we
  } else if (prev.sa_handler == SIG_DFL) {
    sigaction(sig, &prev, nullptr);
    raise(sig);  // delivered with the default action once this handler returns
  } else {
    prev.sa_handler(sig);
  }
}

void BeforeFork() { if (g_tracer) g_tracer->PrepareFork(); }
void ParentAfterFork() { if (g_tracer) g_tracer->ParentAfterFork(); }
void ChildAfterFork() { if (g_tracer) g_tracer->ChildAfterFork(); }

}  // namespace

void InstallLifecycleHooks(Tracer* tracer) {
  g_tracer = tracer;
  std::atexit(&OnExit);
  for (size_t i = 0; i < sizeof(kSignals) / sizeof(kSignals[0]); ++i) {
    struct sigaction sa {};
    sa.sa_sigaction = &OnSignal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(kSignals[i], nullptr, &g_previous[i]) != 0) continue;
    if (!(g_previous[i].sa_flags & SA_SIGINFO) && g_previous[i].sa_handler == SIG_IGN) {
      continue;  // e.g. nohup: leave ignored signals ignored
    }
    sigaction(kSignals[i], &sa, nullptr);
  }
  pthread_atfork(&BeforeFork, &ParentAfterFork, &ChildAfterFork);
}

}  // namespace truffld::inject
