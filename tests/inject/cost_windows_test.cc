// Unit tests of cost-planned device windows (`cost:PCT[:M]`, device_windows.h): parsing, the
// period that follows what the windows cost, powers of two that keep ranks aligned.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "device_windows.h"

namespace truffld::inject {
namespace cost_windows_test {

constexpr int64_t kMsNs = 1000000;

WindowPlan CostPlan(const std::string& text) {
  WindowPlan p;
  std::string why;
  EXPECT_TRUE(ParseWindowPlan(text, &p, &why)) << text << ": " << why;
  return p;
}

// Runs `steps` steps of `base` ms each, a step inside a window taking `window_ms` instead; returns
// the steps that began a window (planned or not), in order.
std::vector<uint64_t> RunSteps(DeviceWindows& w, uint64_t steps, int64_t base_ms, int64_t window_ms) {
  std::vector<uint64_t> opened;
  DeviceWindows::Edge e;
  int64_t t = 0;
  for (uint64_t i = 0; i < steps; ++i) {
    if (w.StepBegin(t, &e) && e.open) opened.push_back(i);
    const int64_t len = (w.open() ? window_ms : base_ms) * kMsNs;
    t += len;
    w.StepEnd(t, &e, {0, len});
  }
  return opened;
}

TEST(CostWindows, ParsesAndDescribesBack) {
  const WindowPlan p = CostPlan("cost:0.5:2");
  EXPECT_EQ(p.mode, WindowPlan::Mode::kCost);
  EXPECT_TRUE(p.sampled());
  EXPECT_DOUBLE_EQ(p.cost_percent, 0.5);
  EXPECT_EQ(p.window_steps, 2u);
  EXPECT_EQ(DescribeWindowPlan(p), "cost:0.5:2");
  EXPECT_EQ(DescribeWindowPlan(CostPlan("cost:3")), "cost:3:1");
  EXPECT_EQ(DescribeWindowPlan(CostPlan(DescribeWindowPlan(p))), "cost:0.5:2") << "round trip";
  for (const char* bad : {"cost", "cost:", "cost:0", "cost:-1", "cost:101", "cost:1e-3", "cost:0.5:0",
                          "cost:0.5:x", "cost:1..2", "cost:nan", "cost:inf", "cost:0.5:2:1", "cost:0.5:40000"}) {
    WindowPlan q;
    std::string why;
    EXPECT_FALSE(ParseWindowPlan(bad, &q, &why)) << bad;
    EXPECT_NE(why.find("cost:PCT"), std::string::npos) << bad << ": " << why;
  }
}

TEST(CostWindows, CheapWindowsComeOftenAndCostlyOnesRarely) {
  // Windows that cost nothing: after the first measured one (step 512), every 16 steps.
  DeviceWindows cheap(CostPlan("cost:0.5:2"), 0);
  std::vector<uint64_t> o = RunSteps(cheap, 600, 10, 10);
  ASSERT_GE(o.size(), 4u);
  EXPECT_EQ(o[0], 0u);
  EXPECT_EQ(o[1], 512u);
  EXPECT_EQ(o[2], 528u);
  EXPECT_EQ(cheap.period(), 16u);
  // Window steps taking 3x a step: 4 median steps extra a window; 0.5 % wants >= 800 steps: 1024.
  DeviceWindows costly(CostPlan("cost:0.5:2"), 0);
  o = RunSteps(costly, 5000, 10, 30);
  EXPECT_EQ(costly.period(), 1024u);
  EXPECT_EQ(o, (std::vector<uint64_t>{0, 512, 1024, 2048, 3072, 4096}));
  // What they cost over the measured part of the run stays within the budget.
  const double extra = 4.0 * static_cast<double>(o.size() - 2), steps = 5000 - 512;
  EXPECT_LE(extra / steps, 0.005 + 4.0 / steps);
}

TEST(CostWindows, PeriodFollowsTheMedianOfTheLastWindows) {
  // One window far costlier than the others (a page-cache flush during it) moves nothing.
  DeviceWindows w(CostPlan("cost:1:1"), 0);
  DeviceWindows::Edge e;
  int64_t t = 0;
  int windows = 0;
  for (uint64_t i = 0; i < 4000; ++i) {
    const bool opened = w.StepBegin(t, &e) && e.open;
    if (opened) ++windows;
    // 1 ms steps; window steps 1.5 ms (0.5 extra: 1 % wants 50 steps: 64), the third window's 50 ms.
    const int64_t len = !w.open() ? kMsNs : windows == 3 ? 50 * kMsNs : 3 * kMsNs / 2;
    t += len;
    w.StepEnd(t, &e, {0, len});
    if (windows >= 2 && !w.open()) {
      ASSERT_EQ(w.period(), 64u) << "after window " << windows;
    }
  }
  EXPECT_EQ(w.period(), 64u);
  EXPECT_GT(windows, 40);
}

TEST(CostWindows, RanksWithDifferentCostsShareTheCostlierRanksWindows) {
  DeviceWindows fast(CostPlan("cost:0.5:2"), 0), slow(CostPlan("cost:0.5:2"), 0);
  // Window steps 1.3x and 6x a step: 0.6 and 10 median steps extra a window, periods 128 and 2048.
  const std::vector<uint64_t> a = RunSteps(fast, 9000, 10, 13), b = RunSteps(slow, 9000, 10, 60);
  EXPECT_EQ(fast.period(), 128u);
  EXPECT_EQ(slow.period(), 2048u);
  const std::set<uint64_t> in_a(a.begin(), a.end());
  for (uint64_t s : b) EXPECT_TRUE(in_a.count(s)) << "step " << s << " opens a window on one rank only";
}

TEST(CostWindows, StepsWithoutHistoryOrRequestedWindowsAreNotMeasured) {
  // The window at step 0 meets no history: the period stays at its start value.
  DeviceWindows w(CostPlan("cost:0.5:2"), 0);
  RunSteps(w, 100, 10, 1000);
  EXPECT_EQ(w.period(), kCostStartPeriod);
  // A requested window (the control file) is the operator's, not the plan's: not measured.
  DeviceWindows r(CostPlan("cost:0.5:2"), 0);
  RunSteps(r, 100, 10, 10);
  ASSERT_TRUE(r.Request(DeviceWindows::Trigger::kRequest));
  RunSteps(r, 20, 10, 1000);
  EXPECT_EQ(r.period(), kCostStartPeriod);
  // Many-step windows: the period is at least twice their length.
  DeviceWindows m(CostPlan("cost:50:300"), 0);
  RunSteps(m, 2000, 10, 10);
  EXPECT_EQ(m.period(), 1024u);
}

TEST(CostWindows, TheMostCostlyWindowsWaitTheLongestPeriod) {
  DeviceWindows w(CostPlan("cost:0.01:1"), 0);
  RunSteps(w, 1000, 1, 1000);
  EXPECT_EQ(w.period(), kCostMaxPeriod);
}

}  // namespace cost_windows_test
}  // namespace truffld::inject
