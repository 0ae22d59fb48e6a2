// DeviceWindows: when device activity (kernels, copies, memsets) is recorded, in sampled mode.
//
// Always-on capture keeps NVTX, steps and the essential CUDA API set all the time; CUPTI's
// kernel tracing is what costs (1.09x-1.69x on launch-bound PyTorch loops). With
// TRUFFLD_DEVICE_WINDOWS the injector records device activity only inside windows: one run of
// M steps in every N (`steps:N[:M]`), or ON ms in every PERIOD ms (`time:ON:PERIOD`), or
// M-step windows as often as their cost allows (`cost:PCT[:M]`, see WindowPlan), only when
// asked (`requested`), or never (`off`). In every sampled mode (steps, time, requested) a
// window can also be requested for the next K steps (WindowPlan::request_steps): by a step far
// slower than the recent steps of its phase (window_triggers.h) or by the operator (the
// control file, through Request); the triggers spend a budget of steps (trigger_budget), the
// operator's requests do not. This class decides the window edges; the tracer switches
// CUPTI's activity kinds on and off at them and writes a DEVICE_WINDOW record at each edge.
// Edges fall only where no step is in progress in the process: a step starts and finishes in
// one state, so every step is either wholly inside a window or has no device detail. Steps are
// the outermost NVTX push ranges whose names start with one of the configured prefixes.
// Units: ns on any monotonic clock (the caller's). Thread-safety: none; the tracer calls it
// under one mutex (steps are rare: tens to hundreds a second).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "window_triggers.h"

namespace truffld::inject {

struct WindowPlan {
  enum class Mode { kAll, kOff, kSteps, kTime, kRequested, kCost };
  Mode mode = Mode::kAll;
  uint64_t every_steps = 1, window_steps = 1;   // kSteps: M = window_steps of every N steps
  // kCost (`cost:PCT[:M]`): windows of M = window_steps steps whose period is a power of two
  // between kCostMinPeriod (at least 2M) and kCostMaxPeriod steps, the shortest that keeps the
  // windows' measured extra step time within cost_percent % of the run's step time. A window's
  // extra time is the sum over its steps of (duration - the median of the last steps of the same
  // phase), in units of that median; the period follows the median of the last kCostHistory
  // windows (the lower of two). It starts at kCostStartPeriod (the first window, at step 0, meets warm-up steps
  // and no history). Powers of two keep ranks that measure different costs aligned: the
  // windows of the rank with the longer period are windows of the other rank too.
  double cost_percent = 0;
  int64_t on_ns = 0, period_ns = 1;             // kTime
  // Requested windows (every sampled mode), set from their own variables, not from the text:
  double slow_factor = 3;      // TRUFFLD_WINDOW_SLOW: a step > F x its phase's median (0: off)
  uint64_t request_steps = 4;  // TRUFFLD_WINDOW_STEPS: steps a requested window lasts
  // TRUFFLD_WINDOW_BUDGET: the share of steps that windows opened by the slow-step and
  // slow-collective triggers may cover over the run (1: no limit). A token bucket: every step
  // adds the budget, a triggered window takes request_steps, and the bucket holds one window,
  // so the first trigger is always honoured. On a loaded host, descheduled steps look slow;
  // the budget bounds what such false triggers cost (see DeviceWindows::Request).
  double trigger_budget = 0.0025;
  bool sampled() const {
    return mode == Mode::kSteps || mode == Mode::kTime || mode == Mode::kRequested || mode == Mode::kCost;
  }
};
inline constexpr uint64_t kCostMinPeriod = 16, kCostStartPeriod = 512, kCostMaxPeriod = 65536;
inline constexpr size_t kCostHistory = 3;

// Parses TRUFFLD_DEVICE_WINDOWS ("all", "off", "requested", "steps:N", "steps:N:M",
// "time:ON_MS:PERIOD_MS", "cost:PCT", "cost:PCT:M"); the requested-window fields of `plan` are kept.
// Returns false (and leaves `plan` alone) on malformed text, with the reason in *why.
bool ParseWindowPlan(std::string_view text, WindowPlan* plan, std::string* why);
// The text ParseWindowPlan reads back into `plan` (for META.config).
std::string DescribeWindowPlan(const WindowPlan& plan);

// Step-name prefixes (TRUFFLD_STEP_PREFIXES, comma-separated).
std::vector<std::string> SplitPrefixes(std::string_view text);
bool HasPrefix(const std::vector<std::string>& prefixes, std::string_view name);

class DeviceWindows {
 public:
  // Why a window opened (or, for its end, why it had been open; kExit: closed at exit).
  enum class Trigger { kStep, kTime, kExit, kSlowStep, kRequest, kSlowCollective };
  // What the caller must do now: switch device activity on (opening window `index`) or off.
  struct Edge {
    bool open = false;
    uint64_t index = 0;
    Trigger trigger = Trigger::kStep;
  };

  // A completed step as the slow-step trigger sees it: its phase class (PhaseOf) and duration.
  struct StepSample {
    uint32_t phase = 0;
    int64_t duration_ns = -1;  // -1: not measured (no slow-step judgement)
  };

  DeviceWindows(WindowPlan plan, int64_t start_ns)
      : plan_(plan), start_ns_(start_ns), slow_(plan.slow_factor), slow_comm_(plan.slow_factor),
        credit_(static_cast<double>(plan.request_steps)) {
    Reset(start_ns);
  }

  // A step begins / ends somewhere in the process. Return true with `*edge` filled when an
  // edge happens now (before the step's first event / after its last one). A step's end with
  // a sample may request a window (slow step: opened at the next step's begin) unless one is
  // open or already requested.
  bool StepBegin(int64_t now_ns, Edge* edge);
  bool StepEnd(int64_t now_ns, Edge* edge, StepSample sample);
  bool StepEnd(int64_t now_ns, Edge* edge) { return StepEnd(now_ns, edge, StepSample()); }
  // The phase class of a step name's `[phase:X]` tag, for its StepSample.
  uint32_t PhaseOf(std::string_view step_name) { return slow_.PhaseId(StepPhase(step_name)); }
  // A collective range's class (its exact name; SlowSteps::kNoClass past kMaxStepPhases names).
  uint32_t CollectiveOf(std::string_view name) { return slow_comm_.ExactId(name); }
  // A collective of class `cls` ended after `duration_ns`: far slower than the recent ones of
  // its class (the slow-step factor), it requests a window at the next step, as a slow step does.
  void CollectiveEnd(uint32_t cls, int64_t duration_ns);
  // Asks for a window over the next plan().request_steps steps, opened at the next step's
  // begin (a window open then is held open that long). Returns false when ignored: not a
  // sampled mode, a request is already waiting, or (slow-step and slow-collective triggers
  // only) the trigger budget has no window left (counted in triggers_refused()).
  bool Request(Trigger why);
  // Periodic check (time mode, between steps). Same contract.
  bool Tick(int64_t now_ns, Edge* edge);
  // Process exit: closes an open window.
  bool Finish(Edge* edge);

  // Time mode: ns from `now_ns` to the next planned edge (for the writer's wake-ups); -1 in
  // the other modes.
  int64_t NextTimeEdgeIn(int64_t now_ns) const;

  bool open() const { return open_; }
  bool request_pending() const { return pending_; }
  uint64_t windows_opened() const { return windows_; }
  uint64_t triggers_refused() const { return triggers_refused_; }
  int open_steps() const { return open_steps_; }
  const WindowPlan& plan() const { return plan_; }
  // kCost: the period (steps) planned windows follow now; plan().every_steps in the other modes.
  uint64_t period() const { return plan_.mode == WindowPlan::Mode::kCost ? cost_period_ : plan_.every_steps; }
  // Fork child: no step in progress, no window open, counting starts again.
  void Reset(int64_t start_ns);

 private:
  bool InTimeWindow(int64_t now_ns) const;
  // Whether the plan (steps, cost or time) wants the next step to begin inside a window;
  // steps_begun_ counts the steps begun before it.
  bool Planned(int64_t now_ns) const;
  bool Switch(bool open, Trigger why, Edge* edge);
  // kCost: adds a planned window's step to the window's measured extra time; at the window's
  // close, sets the period from the last windows' costs.
  void MeasureCostStep(const StepSample& sample);
  void FinishCostWindow();

  WindowPlan plan_;
  int64_t start_ns_;
  int open_steps_ = 0;
  uint64_t steps_begun_ = 0;
  uint64_t windows_ = 0;
  bool open_ = false;
  Trigger open_why_ = Trigger::kStep;      // trigger of the window open now
  bool pending_ = false;                   // a request waits for the next step's begin
  Trigger pending_why_ = Trigger::kRequest;
  uint64_t requested_left_ = 0;            // steps a requested window still holds open
  SlowSteps slow_;
  SlowSteps slow_comm_;
  double credit_ = 0;                      // trigger budget left, in steps (Reset fills it)
  uint64_t triggers_refused_ = 0;          // slow-step/collective requests the budget refused
  uint64_t cost_period_ = kCostStartPeriod; // kCost: the planned windows' period now (steps)
  double cost_excess_ = 0;                  // this window's extra time so far, in median steps
  uint64_t cost_measured_ = 0;              // its steps measured (a median was known)
  double cost_recent_[kCostHistory] = {};   // the last windows' extra times, in median steps
  size_t cost_windows_ = 0;                 // windows measured in full (cost_recent_ holds min(n, 3))
};

}  // namespace truffld::inject
