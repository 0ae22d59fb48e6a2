// Unit tests of sampled device windows: plan parsing, step and time edges, edges only between
// steps (device_windows.h).
#include <gtest/gtest.h>

#include "config.h"
#include "device_windows.h"

namespace truffld::inject {
namespace {

constexpr int64_t kMs = 1000000;

WindowPlan Plan(const std::string& text) {
  WindowPlan p;
  std::string why;
  EXPECT_TRUE(ParseWindowPlan(text, &p, &why)) << text << ": " << why;
  return p;
}

TEST(WindowPlan, ParsesEveryFormAndDescribesItBack) {
  EXPECT_EQ(Plan("all").mode, WindowPlan::Mode::kAll);
  EXPECT_EQ(Plan("off").mode, WindowPlan::Mode::kOff);
  const WindowPlan r = Plan("requested");
  EXPECT_EQ(r.mode, WindowPlan::Mode::kRequested);
  EXPECT_TRUE(r.sampled());
  EXPECT_EQ(DescribeWindowPlan(r), "requested");
  EXPECT_EQ(Plan(DescribeWindowPlan(r)).mode, WindowPlan::Mode::kRequested) << "round trip";
  WindowPlan keep;
  keep.slow_factor = 5;
  keep.request_steps = 9;
  std::string why;
  ASSERT_TRUE(ParseWindowPlan("steps:3", &keep, &why));
  EXPECT_EQ(keep.slow_factor, 5) << "the requested-window settings are not the text's";
  EXPECT_EQ(keep.request_steps, 9u);
  const WindowPlan s = Plan("steps:10");
  EXPECT_EQ(s.every_steps, 10u);
  EXPECT_EQ(s.window_steps, 1u);
  EXPECT_EQ(DescribeWindowPlan(Plan("steps:10:3")), "steps:10:3");
  const WindowPlan t = Plan("time:100:1000");
  EXPECT_EQ(t.on_ns, 100 * kMs);
  EXPECT_EQ(t.period_ns, 1000 * kMs);
  EXPECT_EQ(DescribeWindowPlan(t), "time:100:1000");
  for (const char* bad : {"", "some", "steps", "steps:0", "steps:3:4", "steps:x", "time:5",
                          "time:10:5", "time:0:10", "steps:1:1:1",
                          "requested:4"}) {
    WindowPlan p;
    std::string why;
    EXPECT_FALSE(ParseWindowPlan(bad, &p, &why)) << bad;
    EXPECT_FALSE(why.empty());
  }
}

TEST(WindowPlan, ConfigWarnsByNameAndKeepsAll) {
  std::vector<std::string> w;
  Config c = ParseConfig([](const char* n) -> const char* {
    return std::string(n) == "TRUFFLD_DEVICE_WINDOWS" ? "steps:0" : nullptr;
  }, &w);
  EXPECT_EQ(c.device_windows.mode, WindowPlan::Mode::kAll);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("TRUFFLD_DEVICE_WINDOWS"), std::string::npos);
}

TEST(StepPrefixes, DefaultsAreTheMergesStepNames) {
  const auto p = SplitPrefixes(kDefaultStepPrefixes);
  EXPECT_TRUE(HasPrefix(p, "step_execute_model[request_ids:a_b][phase:decode]"));
  EXPECT_TRUE(HasPrefix(p, "ProfilerStep#12"));
  EXPECT_TRUE(HasPrefix(p, "step[DECODE bs=32]"));
  EXPECT_FALSE(HasPrefix(p, "aten::mm"));
  EXPECT_FALSE(HasPrefix(p, "step"));
  EXPECT_EQ(SplitPrefixes(",a,,b,"), (std::vector<std::string>{"a", "b"}));
}

// Runs `steps` steps of `len` ns starting every `every` ns; returns the edges as "+k@t" / "-k@t"
// (t in ms) and whether any edge fell inside a step.
std::string Drive(DeviceWindows& w, int steps, int64_t every, int64_t len, bool tick = false) {
  std::string out;
  DeviceWindows::Edge e;
  auto note = [&](int64_t t) {
    out += (e.open ? "+" : "-") + std::to_string(e.index) + "@" + std::to_string(t / kMs) + " ";
  };
  for (int i = 0; i < steps; ++i) {
    const int64_t t0 = i * every, t1 = t0 + len;
    if (tick && w.Tick(t0 - 1, &e)) note(t0 - 1);
    if (w.StepBegin(t0, &e)) note(t0);
    if (w.StepEnd(t1, &e)) note(t1);
  }
  return out;
}

TEST(DeviceWindows, EveryNthStepIsOneWindow) {
  DeviceWindows w(Plan("steps:3"), 0);
  EXPECT_EQ(Drive(w, 7, 10 * kMs, 5 * kMs), "+0@0 -0@5 +1@30 -1@35 +2@60 -2@65 ");
}

TEST(DeviceWindows, WindowsOfSeveralStepsStayOpenBetweenThem) {
  DeviceWindows w(Plan("steps:4:2"), 0);
  EXPECT_EQ(Drive(w, 8, 10 * kMs, 5 * kMs), "+0@0 -0@15 +1@40 -1@55 ");
}

TEST(DeviceWindows, AllAndOffNeverSwitch) {
  for (const char* p : {"all", "off"}) {
    DeviceWindows w(Plan(p), 0);
    EXPECT_EQ(Drive(w, 5, 10 * kMs, 5 * kMs, true), "") << p;
    DeviceWindows::Edge e;
    EXPECT_FALSE(w.Finish(&e));
  }
}

TEST(DeviceWindows, TimeEdgesWaitForTheStepInProgress) {
  // 30 ms on every 100 ms; 20 ms steps every 25 ms: the window planned to close at 30 ms
  // closes when the step begun at 25 ms ends (45 ms); the one planned at 100 ms opens with the
  // step begun at 100 ms.
  DeviceWindows w(Plan("time:30:100"), 0);
  EXPECT_EQ(Drive(w, 6, 25 * kMs, 20 * kMs), "+0@0 -0@45 +1@100 -1@145 ");
}

TEST(DeviceWindows, TimeEdgesBetweenStepsComeFromTicks) {
  DeviceWindows w(Plan("time:10:100"), 0);
  DeviceWindows::Edge e;
  EXPECT_TRUE(w.Tick(1 * kMs, &e));
  EXPECT_TRUE(e.open);
  EXPECT_EQ(w.NextTimeEdgeIn(1 * kMs), 9 * kMs);
  EXPECT_FALSE(w.StepBegin(5 * kMs, &e)) << "already open";
  EXPECT_FALSE(w.Tick(50 * kMs, &e)) << "a step is in progress: no edge";
  EXPECT_TRUE(w.StepEnd(60 * kMs, &e));
  EXPECT_FALSE(e.open);
  EXPECT_EQ(w.NextTimeEdgeIn(60 * kMs), 40 * kMs);
  EXPECT_TRUE(w.Tick(105 * kMs, &e));
  EXPECT_EQ(e.index, 1u);
  EXPECT_TRUE(w.Finish(&e));
  EXPECT_EQ(e.trigger, DeviceWindows::Trigger::kExit);
}

TEST(DeviceWindows, OverlappingStepsOfSeveralThreadsCountAsOneStepInProgress) {
  DeviceWindows w(Plan("steps:2"), 0);
  DeviceWindows::Edge e;
  EXPECT_TRUE(w.StepBegin(0, &e));   // thread A, step 0: opens
  EXPECT_FALSE(w.StepBegin(1, &e));  // thread B while A is in its step: same step
  EXPECT_FALSE(w.StepEnd(2, &e));    // A ends, B still in progress: no edge
  EXPECT_TRUE(w.StepEnd(3, &e));     // B ends: closes (next step, 1, is not sampled)
  EXPECT_FALSE(w.StepBegin(4, &e));
  EXPECT_FALSE(w.StepEnd(5, &e));
  EXPECT_TRUE(w.StepBegin(6, &e));
}

}  // namespace
}  // namespace truffld::inject
