// Unit tests of requested device windows: slow-step triggers per phase, on-demand requests,
// the control file's change detection and their settings (window_triggers.h,
// device_windows.h).
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "config.h"
#include "device_windows.h"
#include "window_triggers.h"

namespace truffld::inject::triggers_test {  // its own namespace: compiled in one batch with the other tests
namespace {

constexpr int64_t kMs = 1000000;
using Trigger = DeviceWindows::Trigger;

// budget 1: no trigger budget (the budget has its own test).
WindowPlan Plan(const std::string& text, double slow = 3, uint64_t steps = 4, double budget = 1) {
  WindowPlan p;
  p.slow_factor = slow;
  p.request_steps = steps;
  p.trigger_budget = budget;
  std::string why;
  EXPECT_TRUE(ParseWindowPlan(text, &p, &why)) << text << ": " << why;
  return p;
}

const char* Name(Trigger t) {
  switch (t) {
    case Trigger::kStep: return "step";
    case Trigger::kTime: return "time";
    case Trigger::kExit: return "exit";
    case Trigger::kSlowStep: return "slow_step";
    case Trigger::kRequest: return "request";
    case Trigger::kSlowCollective: return "slow_collective";
  }
  return "?";
}

// Runs one step per entry of `ms` (its duration in ms; steps 1 ms apart) named by `names`
// (cycled; the step's phase comes from its name). Before step i, `before(i)` may act (e.g.
// request). Returns the edges as "+k@bI:trigger" (opened at step I's begin) and "-k@eI:trigger"
// (closed at step I's end).
std::string DriveSteps(DeviceWindows& w, const std::vector<int64_t>& ms,
                       const std::vector<std::string>& names = {"step_execute_model[phase:decode]"},
                       const std::function<void(size_t)>& before = nullptr) {
  std::string out;
  DeviceWindows::Edge e;
  int64_t t = 0;
  for (size_t i = 0; i < ms.size(); ++i) {
    if (before) before(i);
    const uint32_t phase = w.PhaseOf(names[i % names.size()]);
    if (w.StepBegin(t, &e)) out += "+" + std::to_string(e.index) + "@b" + std::to_string(i) + ":" + Name(e.trigger) + " ";
    t += ms[i] * kMs;
    if (w.StepEnd(t, &e, {phase, ms[i] * kMs}))
      out += "-" + std::to_string(e.index) + "@e" + std::to_string(i) + ":" + Name(e.trigger) + " ";
    t += kMs;
  }
  return out;
}

std::vector<int64_t> Durations(size_t n, int64_t ms, std::map<size_t, int64_t> except = {}) {
  std::vector<int64_t> v(n, ms);
  for (const auto& [i, d] : except) v[i] = d;
  return v;
}

TEST(StepPhase, ReadsTheHooksTag) {
  EXPECT_EQ(StepPhase("step_execute_model[request_ids:a_b][phase:decode][tokens:12]"), "decode");
  EXPECT_EQ(StepPhase("step_execute_model[phase:prefill]"), "prefill");
  EXPECT_EQ(StepPhase("step_execute_model[request_ids:a_b]"), "");
  EXPECT_EQ(StepPhase("ProfilerStep#3"), "");
  EXPECT_EQ(StepPhase("step[phase:cut"), "cut");
}

TEST(SlowSteps, FewerThanEightKnownStepsNeverTrigger) {
  SlowSteps s(3);
  const uint32_t p = s.PhaseId("decode");
  for (size_t i = 0; i < kSlowMinHistory - 1; ++i) EXPECT_FALSE(s.Add(p, 10 * kMs));
  EXPECT_FALSE(s.Add(p, 1000 * kMs)) << "7 known steps: no judgement";
  SlowSteps t(3);
  for (size_t i = 0; i < kSlowMinHistory; ++i) EXPECT_FALSE(t.Add(p, 10 * kMs));
  EXPECT_FALSE(t.Add(p, 30 * kMs)) << "exactly 3x the median is not more than it";
  EXPECT_TRUE(t.Add(p, 31 * kMs));
  EXPECT_EQ(t.Median(p), 10 * kMs);
  SlowSteps off(0);
  for (int i = 0; i < 40; ++i) off.Add(0, 10 * kMs);
  EXPECT_FALSE(off.Add(0, 1000 * kMs)) << "factor 0 disables the trigger";
}

TEST(SlowSteps, MedianOfTheLast32AndPhasesApart) {
  SlowSteps s(3);
  const uint32_t pre = s.PhaseId("prefill"), dec = s.PhaseId("decode");
  EXPECT_NE(pre, dec);
  EXPECT_EQ(s.PhaseId("prefill"), pre);
  for (int i = 0; i < 40; ++i) {
    s.Add(pre, 100 * kMs);
    s.Add(dec, (i < 8 ? 1 : 10) * kMs);  // the first 8 fall out of the last 32
  }
  EXPECT_EQ(s.Known(dec), kSlowHistory);
  EXPECT_EQ(s.Median(dec), 10 * kMs);
  EXPECT_FALSE(s.Add(pre, 120 * kMs));
  EXPECT_TRUE(s.Add(dec, 40 * kMs)) << "slow for a decode step, fast for a prefill one";
  for (size_t i = 0; i < 2 * kMaxStepPhases; ++i) s.PhaseId("p" + std::to_string(i));
  EXPECT_EQ(s.PhaseId("one more"), kMaxStepPhases - 1) << "phases are bounded";
}

TEST(RequestedWindows, APlantedSlowStepOpensAWindowAtTheNextStep) {
  DeviceWindows w(Plan("requested"), 0);
  // Steps 0-11 take 10 ms, step 12 takes 50 ms: the window opens when step 13 begins and
  // holds 4 steps (13-16).
  EXPECT_EQ(DriveSteps(w, Durations(20, 10, {{12, 50}})), "+0@b13:slow_step -0@e16:slow_step ");
  EXPECT_EQ(w.windows_opened(), 1u);
}

TEST(RequestedWindows, SlowStepsInOtherModesToo) {
  DeviceWindows s(Plan("steps:100", 3, 2), 0);
  EXPECT_EQ(DriveSteps(s, Durations(14, 10, {{11, 40}})),
            "+0@b0:step -0@e0:step +1@b12:slow_step -1@e13:slow_step ");
  // Time mode: 1 ms every 10 s, so only the first step is in a planned window.
  DeviceWindows t(Plan("time:1:10000", 3, 1), 0);
  EXPECT_EQ(DriveSteps(t, Durations(14, 10, {{11, 40}})),
            "+0@b0:time -0@e0:time +1@b12:slow_step -1@e12:slow_step ");
  DeviceWindows off(Plan("off"), 0);
  EXPECT_EQ(DriveSteps(off, Durations(14, 10, {{11, 40}})), "") << "off never opens";
}

TEST(RequestedWindows, PhasesAreComparedSeparately) {
  // Prefill steps of 100 ms between decode steps of 10 ms: no prefill step is slow for its
  // phase; a 40 ms decode step is.
  const std::vector<std::string> names = {"step_execute_model[request_ids:a][phase:prefill]",
                                          "step_execute_model[request_ids:a_b][phase:decode][tokens:2]"};
  std::vector<int64_t> ms;
  for (int i = 0; i < 24; ++i) ms.push_back(i % 2 ? 10 : 100);
  DeviceWindows w(Plan("requested", 3, 2), 0);
  EXPECT_EQ(DriveSteps(w, ms, names), "");
  ms.back() = 40;  // step 23, a decode step
  ms.push_back(100);
  ms.push_back(10);
  DeviceWindows v(Plan("requested", 3, 2), 0);
  EXPECT_EQ(DriveSteps(v, ms, names), "+0@b24:slow_step -0@e25:slow_step ");
  // In one class (names without a phase tag) the 40 ms step hides among the prefill steps.
  DeviceWindows one(Plan("requested", 3, 2), 0);
  EXPECT_EQ(DriveSteps(one, ms, {"step_execute_model[request_ids:a]"}), "");
}

TEST(RequestedWindows, FewerThanEightKnownStepsNeverTrigger) {
  DeviceWindows w(Plan("requested"), 0);
  EXPECT_EQ(DriveSteps(w, Durations(12, 10, {{7, 500}})), "") << "step 7 follows only 7 steps";
  DeviceWindows v(Plan("requested"), 0);
  EXPECT_EQ(DriveSteps(v, Durations(14, 10, {{8, 500}})), "+0@b9:slow_step -0@e12:slow_step ")
      << "step 8 follows 8 steps";
}

TEST(RequestedWindows, NoRetriggerWhileOpen) {
  // A fault that persists: steps 10-17 are all slow. Step 10 opens window 0 for steps 11-14;
  // the slow steps inside it trigger nothing; step 15, the first slow one outside a window,
  // opens window 1 at step 16.
  DeviceWindows w(Plan("requested"), 0);
  std::map<size_t, int64_t> slow;
  for (size_t i = 10; i < 18; ++i) slow[i] = 80;
  EXPECT_EQ(DriveSteps(w, Durations(22, 10, slow)),
            "+0@b11:slow_step -0@e14:slow_step +1@b16:slow_step -1@e19:slow_step ");
  // A slow step inside a planned window requests nothing.
  DeviceWindows s(Plan("steps:11"), 0);
  EXPECT_EQ(DriveSteps(s, Durations(13, 10, {{11, 80}})), "+0@b0:step -0@e0:step +1@b11:step -1@e11:step ");
}

// The trigger budget: a fault that keeps coming back (every fifth step from step 10 on is slow)
// with a budget of 5% of steps and windows of 2 steps: the first trigger is honoured at once
// (the bucket holds one window), the next one only once 40 more steps (2 / 0.05) have refilled
// it; the triggers in between are refused and counted. The operator's requests never spend it.
TEST(RequestedWindows, TheTriggerBudgetBoundsTriggeredWindows) {
  DeviceWindows w(Plan("requested", 3, 2, 0.05), 0);
  std::map<size_t, int64_t> slow;
  for (size_t i = 10; i < 60; i += 5) slow[i] = 80;
  EXPECT_EQ(DriveSteps(w, Durations(60, 10, slow)),
            "+0@b11:slow_step -0@e12:slow_step +1@b51:slow_step -1@e52:slow_step ");
  // Steps 15-45 and 55 triggered and were refused; step 50's came 40 steps after the first.
  EXPECT_EQ(w.triggers_refused(), 8u);
  EXPECT_EQ(w.windows_opened(), 2u);
  DeviceWindows r(Plan("requested", 0, 2, 0.05), 0);
  EXPECT_EQ(DriveSteps(r, Durations(10, 10), {"step_execute_model"},
                       [&](size_t i) {
                         if (i == 2 || i == 5) {
                           EXPECT_TRUE(r.Request(Trigger::kRequest));
                         }
                       }),
            "+0@b2:request -0@e3:request +1@b5:request -1@e6:request ");
  EXPECT_EQ(r.triggers_refused(), 0u);
  // Reset (a fork child) fills the bucket again and clears the count.
  w.Reset(0);
  EXPECT_EQ(w.triggers_refused(), 0u);
}

TEST(RequestedWindows, OnDemandRequestsOpenAtTheNextStep) {
  DeviceWindows w(Plan("requested", 0, 3), 0);
  EXPECT_EQ(DriveSteps(w, Durations(12, 10), {"step"}, [&](size_t i) {
              if (i == 2) {
                EXPECT_TRUE(w.Request(Trigger::kRequest));
                EXPECT_FALSE(w.Request(Trigger::kRequest)) << "one request waits at a time";
              }
              if (i == 4) {
                EXPECT_TRUE(w.Request(Trigger::kRequest));  // while open: extends
              }
            }),
            "+0@b2:request -0@e6:request ");
  DeviceWindows::Edge e;
  EXPECT_FALSE(w.open());
  for (const char* mode : {"all", "off"}) {
    DeviceWindows n(Plan(mode), 0);
    EXPECT_FALSE(n.Request(Trigger::kRequest)) << mode;
    EXPECT_FALSE(n.StepBegin(0, &e)) << mode;
  }
}

TEST(RequestedWindows, TimeTicksDoNotCloseARequestedWindow) {
  DeviceWindows w(Plan("time:1:10000", 0, 2), 0);
  DeviceWindows::Edge e;
  ASSERT_TRUE(w.Tick(0, &e));       // planned window 0 opens between steps
  ASSERT_TRUE(w.Tick(5 * kMs, &e)); // and closes
  EXPECT_TRUE(w.Request(Trigger::kRequest));
  EXPECT_FALSE(w.Tick(6 * kMs, &e)) << "a request waits for a step";
  ASSERT_TRUE(w.StepBegin(10 * kMs, &e));
  EXPECT_EQ(e.trigger, Trigger::kRequest);
  EXPECT_FALSE(w.StepEnd(20 * kMs, &e));
  EXPECT_FALSE(w.Tick(25 * kMs, &e)) << "held open for its second step";
  EXPECT_FALSE(w.StepBegin(30 * kMs, &e));
  ASSERT_TRUE(w.StepEnd(40 * kMs, &e));
  EXPECT_EQ(e.trigger, Trigger::kRequest);
  EXPECT_EQ(e.index, 1u);
}

TEST(ControlFileWatch, AppearingOrTouchedAsks) {
  ControlFileWatch c;
  FileStamp absent, a{true, 100, 1, 7}, touched{true, 200, 1, 7}, replaced{true, 200, 1, 8};
  EXPECT_FALSE(c.Changed(a)) << "the first look is the baseline (a leftover file asks nothing)";
  EXPECT_FALSE(c.Changed(a));
  EXPECT_TRUE(c.Changed(touched));
  EXPECT_FALSE(c.Changed(touched));
  EXPECT_TRUE(c.Changed(replaced));
  EXPECT_FALSE(c.Changed(absent));
  EXPECT_FALSE(c.Changed(absent));
  EXPECT_TRUE(c.Changed(replaced)) << "appeared again";
  ControlFileWatch d;
  EXPECT_FALSE(d.Changed(absent));
  EXPECT_TRUE(d.Changed(a)) << "appeared";
}

TEST(RequestedWindows, SettingsFromTheEnvironment) {
  std::map<std::string, std::string> env = {{"TRUFFLD_OUTPUT_DIR", "/data/t"},
                                            {"TRUFFLD_DEVICE_WINDOWS", "requested"}};
  auto lookup = [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  std::vector<std::string> w;
  Config c = ParseConfig(lookup, &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(c.device_windows.mode, WindowPlan::Mode::kRequested);
  EXPECT_EQ(c.device_windows.slow_factor, 3);
  EXPECT_EQ(c.device_windows.request_steps, 4u);
  EXPECT_EQ(c.device_windows.trigger_budget, 0.0025);
  EXPECT_EQ(c.window_control, "/data/t/truffld.detail");
  env["TRUFFLD_WINDOW_SLOW"] = "2.5";
  env["TRUFFLD_WINDOW_STEPS"] = "8";
  env["TRUFFLD_WINDOW_CONTROL"] = "/run/detail";
  env["TRUFFLD_WINDOW_BUDGET"] = "0.01";
  c = ParseConfig(lookup, &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(c.device_windows.trigger_budget, 0.01);
  EXPECT_EQ(c.device_windows.slow_factor, 2.5);
  EXPECT_EQ(c.device_windows.request_steps, 8u);
  EXPECT_EQ(c.window_control, "/run/detail");
  std::map<std::string, std::string> d;
  for (const auto& [k, v] : c.Describe()) d[k] = v;
  EXPECT_EQ(d["device_windows"], "requested");
  EXPECT_EQ(d["window_slow"], "2.5");
  EXPECT_EQ(d["window_steps"], "8");
  EXPECT_EQ(d["window_budget"], "0.01");
  EXPECT_EQ(d["window_control"], "/run/detail");
  env["TRUFFLD_WINDOW_SLOW"] = "0.5";
  env["TRUFFLD_WINDOW_STEPS"] = "0";
  env["TRUFFLD_WINDOW_BUDGET"] = "0";
  c = ParseConfig(lookup, &w);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_NE(w[0].find("TRUFFLD_WINDOW_SLOW"), std::string::npos);
  EXPECT_NE(w[1].find("TRUFFLD_WINDOW_BUDGET='0' is not a share in (0, 1]; using 0.0025"), std::string::npos) << w[1];
  EXPECT_NE(w[2].find("TRUFFLD_WINDOW_STEPS"), std::string::npos);
  EXPECT_EQ(c.device_windows.trigger_budget, 0.0025);
  EXPECT_EQ(c.device_windows.slow_factor, 3);
  EXPECT_EQ(c.device_windows.request_steps, 4u);
  env["TRUFFLD_WINDOW_SLOW"] = "0";
  EXPECT_EQ(ParseConfig(lookup, &w).device_windows.slow_factor, 0) << "0 disables";
}

// Collectives are judged by their exact name (op, bytes and world size): a slow one requests a
// window at the next step; a name never seen before, or one of another size, does not.
TEST(WindowTriggers, SlowCollectiveRequestsAWindowAtTheNextStep) {
  DeviceWindows w(Plan("requested", 3, 2), 0);
  DeviceWindows::Edge e;
  const uint32_t small = w.CollectiveOf("nccl:all_reduce, bytes=1024, world_size=2");
  const uint32_t big = w.CollectiveOf("nccl:all_reduce, bytes=1048576, world_size=2");
  EXPECT_NE(small, big);
  for (int i = 0; i < 10; ++i) w.CollectiveEnd(small, 100000);
  w.CollectiveEnd(big, 2000000);  // first of its name: nothing to compare with
  EXPECT_FALSE(w.request_pending());
  w.CollectiveEnd(small, 250000);  // 2.5x: under the factor
  EXPECT_FALSE(w.request_pending());
  w.CollectiveEnd(small, 400000);  // 4x
  EXPECT_TRUE(w.request_pending());
  ASSERT_TRUE(w.StepBegin(1000, &e));
  EXPECT_TRUE(e.open);
  EXPECT_STREQ(Name(e.trigger), "slow_collective");
  for (int i = 0; i < 20; ++i) w.CollectiveOf("nccl:all_gather, bytes=" + std::to_string(i));
  EXPECT_EQ(w.CollectiveOf("one name too many"), SlowSteps::kNoClass);
  w.CollectiveEnd(SlowSteps::kNoClass, 1);  // ignored
}

}  // namespace
}  // namespace truffld::inject::triggers_test
