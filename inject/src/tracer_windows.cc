// Tracer: sampled device windows (device_windows.h) — switching CUPTI's device activity at
// window edges, writing the DEVICE_WINDOW records, watching the control file and publishing
// the window state for truffld_detail_window(). See tracer.h.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tracer.h"

namespace truffld::inject {

namespace {
// DetailWindow's state: bit 0 a window is open, bit 1 the process has windows (a sampled
// mode, or off), bits 2.. windows opened so far. 0 until a Tracer with windows exists.
constexpr uint64_t kStateOpen = 1, kStateHasWindows = 2;
std::atomic<uint64_t> g_detail_state{0};

const char* TriggerName(DeviceWindows::Trigger t) {
  switch (t) {
    case DeviceWindows::Trigger::kStep: return "step";
    case DeviceWindows::Trigger::kTime: return "time";
    case DeviceWindows::Trigger::kExit: return "exit";
    case DeviceWindows::Trigger::kSlowStep: return "slow_step";
    case DeviceWindows::Trigger::kRequest: return "request";
    case DeviceWindows::Trigger::kSlowCollective: return "slow_collective";
  }
  return "step";
}
}  // namespace

void Tracer::ApplyWindowEdge(const DeviceWindows::Edge& e, bool before_switch, bool switch_device) {
  // A window's start is stamped before device activity goes on and its end after it went off,
  // so the window covers everything recorded in between.
  WindowMark m{0, e.index, e.open, e.trigger, t_thread.tid};
  if (!m.tid) m.tid = static_cast<uint32_t>(::syscall(SYS_gettid));
  if (before_switch) m.ticks = ReadTicks();
  if (device_switch_ && switch_device) device_switch_(e.open);
  if (!before_switch) m.ticks = ReadTicks();
  window_marks_.push_back(m);
  PublishDetailState();
}

void Tracer::PublishDetailState() {
  if (config_.device_windows.mode == WindowPlan::Mode::kAll) return;
  g_detail_state.store((windows_.windows_opened() << 2) | kStateHasWindows | (windows_.open() ? kStateOpen : 0),
                       std::memory_order_release);
}

int Tracer::DetailWindow(unsigned long long* generation) noexcept {
  const uint64_t s = g_detail_state.load(std::memory_order_acquire);
  if (generation) *generation = s >> 2;
  if (!(s & kStateHasWindows)) return -1;
  return (s & kStateOpen) ? 1 : 0;
}

void Tracer::SetDeviceSwitch(DeviceSwitch s) {
  std::lock_guard<std::mutex> lock(window_mu_);
  device_switch_ = s;
  if (s) s(windows_.open());
}

void Tracer::StepBegin(ThreadState& t, std::string_view name) noexcept {
  std::lock_guard<std::mutex> lock(window_mu_);
  DeviceWindows::Edge e;
  t.step_phase = windows_.PhaseOf(name);
  if (windows_.StepBegin(Now(), &e)) ApplyWindowEdge(e, /*before_switch=*/e.open);
  t.step_begin_ns = Now();  // the step's own time, after any switching
}

void Tracer::StepEnd(ThreadState& t) noexcept {
  std::lock_guard<std::mutex> lock(window_mu_);
  DeviceWindows::Edge e;
  const int64_t now = Now();
  if (windows_.StepEnd(now, &e, {t.step_phase, now - t.step_begin_ns})) ApplyWindowEdge(e, e.open);
}

void Tracer::CollectiveBegin(ThreadState& t, std::string_view name) noexcept {
  std::lock_guard<std::mutex> lock(window_mu_);
  t.comm_class = windows_.CollectiveOf(name);
  t.comm_begin_ns = Now();
}

void Tracer::CollectiveEnd(ThreadState& t) noexcept {
  std::lock_guard<std::mutex> lock(window_mu_);
  windows_.CollectiveEnd(t.comm_class, Now() - t.comm_begin_ns);
}

bool Tracer::ControlFileChanged() {
  // stat only, never following a symbolic link: the file is a signal, never read or written.
  struct stat st;
  FileStamp f;
  if (::fstatat(AT_FDCWD, config_.window_control.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    f.exists = true;
    f.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    f.dev = static_cast<uint64_t>(st.st_dev);
    f.ino = static_cast<uint64_t>(st.st_ino);
  }
  return control_.Changed(f);
}

int Tracer::WindowTick() {
  if (!sampling()) return -1;
  const bool asked = ControlFileChanged();  // outside the lock: a stat may be slow
  std::lock_guard<std::mutex> lock(window_mu_);
  if (asked && windows_.Request(DeviceWindows::Trigger::kRequest) && config_.verbose)
    Log("control file " + config_.window_control + " changed: a device window opens at the next step");
  if (config_.device_windows.mode != WindowPlan::Mode::kTime) return -1;
  DeviceWindows::Edge e;
  const int64_t now = Now();
  if (windows_.Tick(now, &e)) ApplyWindowEdge(e, e.open);
  return static_cast<int>(windows_.NextTimeEdgeIn(now) / 1000000 + 1);
}

void Tracer::CloseWindowAtExit() {
  if (!sampling()) return;
  std::lock_guard<std::mutex> lock(window_mu_);
  DeviceWindows::Edge e;
  // The window's end is written, but device activity is not switched off: this runs in the
  // exit handler, where CUDA and CUPTI may be going down, and the final flush that follows
  // collects what was recorded either way. (On an H200 a traced serving process crashed at exit
  // with a slow-step window still open; of that session's runs it alone switched CUPTI's kinds
  // off at exit. Not confirmed as the cause: no second run was possible.)
  if (windows_.Finish(&e)) ApplyWindowEdge(e, false, /*switch_device=*/false);
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
