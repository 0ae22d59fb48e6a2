// DeviceWindows: when device activity (kernels, copies, memsets) is recorded, in sampled mode.
//
// Always-on capture keeps NVTX, steps and the essential CUDA API set all the time; CUPTI's
// kernel tracing is what costs (1.09x-1.69x on launch-bound PyTorch loops). With
// TRUFFLD_DEVICE_WINDOWS the injector records device activity only inside windows: one run of
// M steps in every N (`steps:N[:M]`), or ON ms in every PERIOD ms (`time:ON:PERIOD`), or never
// (`off`). This class decides the window edges; the tracer switches CUPTI's activity kinds on
// and off at them and writes a DEVICE_WINDOW record at each edge. Edges fall only where no step
// is in progress in the process: a step starts and finishes in one state, so every step is
// either wholly inside a window or has no device detail. Steps are the outermost NVTX push
// ranges whose names start with one of the configured prefixes.
// Units: ns on any monotonic clock (the caller's). Thread-safety: none; the tracer calls it
// under one mutex (steps are rare: tens to hundreds a second).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace truffld::inject {

struct WindowPlan {
  enum class Mode { kAll, kOff, kSteps, kTime };
  Mode mode = Mode::kAll;
  uint64_t every_steps = 1, window_steps = 1;   // kSteps: M = window_steps of every N steps
  int64_t on_ns = 0, period_ns = 1;             // kTime
  bool sampled() const { return mode == Mode::kSteps || mode == Mode::kTime; }
};

// Parses TRUFFLD_DEVICE_WINDOWS ("all", "off", "steps:N", "steps:N:M", "time:ON_MS:PERIOD_MS").
// Returns false (and leaves `plan` alone) on malformed text, with the reason in *why.
bool ParseWindowPlan(std::string_view text, WindowPlan* plan, std::string* why);
// The text ParseWindowPlan reads back into `plan` (for META.config).
std::string DescribeWindowPlan(const WindowPlan& plan);

// Step-name prefixes (TRUFFLD_STEP_PREFIXES, comma-separated).
std::vector<std::string> SplitPrefixes(std::string_view text);
bool HasPrefix(const std::vector<std::string>& prefixes, std::string_view name);

class DeviceWindows {
 public:
  enum class Trigger { kStep, kTime, kExit };
  // What the caller must do now: switch device activity on (opening window `index`) or off.
  struct Edge {
    bool open = false;
    uint64_t index = 0;
    Trigger trigger = Trigger::kStep;
  };

  DeviceWindows(WindowPlan plan, int64_t start_ns) : plan_(plan), start_ns_(start_ns) {}

  // A step begins / ends somewhere in the process. Return true with `*edge` filled when an
  // edge happens now (before the step's first event / after its last one).
  bool StepBegin(int64_t now_ns, Edge* edge);
  bool StepEnd(int64_t now_ns, Edge* edge);
  // Periodic check (time mode, between steps). Same contract.
  bool Tick(int64_t now_ns, Edge* edge);
  // Process exit: closes an open window.
  bool Finish(Edge* edge);

  // Time mode: ns from `now_ns` to the next planned edge (for the writer's wake-ups); -1 in
  // the other modes.
  int64_t NextTimeEdgeIn(int64_t now_ns) const;

  bool open() const { return open_; }
  int open_steps() const { return open_steps_; }
  const WindowPlan& plan() const { return plan_; }
  // Fork child: no step in progress, no window open, counting starts again.
  void Reset(int64_t start_ns);

 private:
  bool InTimeWindow(int64_t now_ns) const;
  bool Switch(bool open, Trigger why, Edge* edge);

  WindowPlan plan_;
  int64_t start_ns_;
  int open_steps_ = 0;
  uint64_t steps_begun_ = 0;
  uint64_t windows_ = 0;
  bool open_ = false;
};

}  // namespace truffld::inject
