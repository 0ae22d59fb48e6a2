// Tracer: sampled device windows (device_windows.h) — switching CUPTI's device activity at
// window edges and writing the DEVICE_WINDOW records. See tracer.h.
#include <sys/syscall.h>
#include <unistd.h>

#include "tracer.h"

namespace truffld::inject {

namespace {
const char* TriggerName(DeviceWindows::Trigger t) {
  switch (t) {
    case DeviceWindows::Trigger::kStep: return "step";
    case DeviceWindows::Trigger::kTime: return "time";
    case DeviceWindows::Trigger::kExit: return "exit";
  }
  return "step";
}
}  // namespace

void Tracer::ApplyWindowEdge(const DeviceWindows::Edge& e, bool before_switch) {
  // A window's start is stamped before device activity goes on and its end after it went off,
  // so the window covers everything recorded in between.
  WindowMark m{0, e.index, e.open, e.trigger, t_thread.tid};
  if (!m.tid) m.tid = static_cast<uint32_t>(::syscall(SYS_gettid));
  if (before_switch) m.ticks = ReadTicks();
  if (device_switch_) device_switch_(e.open);
  if (!before_switch) m.ticks = ReadTicks();
  window_marks_.push_back(m);
}

void Tracer::SetDeviceSwitch(DeviceSwitch s) {
  std::lock_guard<std::mutex> lock(window_mu_);
  device_switch_ = s;
  if (s) s(windows_.open());
}

void Tracer::StepBegin() noexcept {
  std::lock_guard<std::mutex> lock(window_mu_);
  DeviceWindows::Edge e;
  if (windows_.StepBegin(Now(), &e)) ApplyWindowEdge(e, /*before_switch=*/e.open);
}

void Tracer::StepEnd() noexcept {
  std::lock_guard<std::mutex> lock(window_mu_);
  DeviceWindows::Edge e;
  if (windows_.StepEnd(Now(), &e)) ApplyWindowEdge(e, e.open);
}

int Tracer::WindowTick() {
  if (config_.device_windows.mode != WindowPlan::Mode::kTime) return -1;
  std::lock_guard<std::mutex> lock(window_mu_);
  DeviceWindows::Edge e;
  const int64_t now = Now();
  if (windows_.Tick(now, &e)) ApplyWindowEdge(e, e.open);
  return static_cast<int>(windows_.NextTimeEdgeIn(now) / 1000000 + 1);
}

void Tracer::CloseWindowAtExit() {
  if (!sampling()) return;
  std::lock_guard<std::mutex> lock(window_mu_);
  DeviceWindows::Edge e;
  if (windows_.Finish(&e)) ApplyWindowEdge(e, false);
}

void Tracer::FormatWindowMarks(std::string& out) {
  std::vector<WindowMark> marks;
  {
    std::lock_guard<std::mutex> lock(window_mu_);
    if (window_marks_.empty()) return;
    marks.swap(window_marks_);
  }
  for (const WindowMark& m : marks) {
    WindowMarkInfo w;
    w.timestamp = tick_clock_.ToNs(m.ticks);
    w.window = m.window;
    w.start = m.start;
    w.trigger = TriggerName(m.trigger);
    w.tid = m.tid;
    FormatDeviceWindow(w, pid_, out);
  }
}

}  // namespace truffld::inject
