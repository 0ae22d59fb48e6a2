// The profiler importers' main-process rule.
#include "importers/main_process.h"

#include <unordered_map>

namespace truffld::merge {

int64_t AssignDeviceProcesses(TraceFile* tf) {
  std::unordered_map<int64_t, int64_t> api_pid;  // correlation id -> process of its call
  std::unordered_map<int64_t, uint64_t> api_count;
  for (const Event& e : tf->events) {
    if (!IsApiKind(e.kind)) continue;
    ++api_count[tf->ProcessOf(e)];
    if (const int64_t c = tf->Correlation(e); c != kNone) api_pid.emplace(c, tf->ProcessOf(e));
  }
  int64_t main_pid = kNone;
  uint64_t best = 0;
  for (auto [pid, n] : api_count)
    if (n > best || (n == best && pid < main_pid)) best = n, main_pid = pid;
  if (main_pid == kNone)
    for (const Event& e : tf->events)
      if (tf->ProcessOf(e) != kNone) { main_pid = tf->ProcessOf(e); break; }
  tf->meta.process_id = main_pid;
  for (Event& e : tf->events) {
    if (!IsDeviceKind(e.kind) || tf->ProcessOf(e) != kNone) continue;
    const int64_t c = tf->Correlation(e);
    auto it = c == kNone ? api_pid.end() : api_pid.find(c);
    tf->SetProcess(e, it != api_pid.end() ? it->second : main_pid);
  }
  return main_pid;
}

}  // namespace truffld::merge
