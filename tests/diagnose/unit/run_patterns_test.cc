// Run findings (peer/run_patterns.h): host stalls in most steps of a lane are reported once; a
// step stays abnormal only when it differs from the run's other steps.
#include "peer/run_patterns.h"

#include <gtest/gtest.h>

namespace truffld::diagnose {
namespace {

// `n` vertical units of rank 0, 100 ms each; the units in `excess_ms` abnormal with that much
// host excess blamed on one family (its impact equal to it).
struct Lane {
  InstanceTable t;
  DecisionResult d;
  std::vector<std::vector<BlamedFamily>> blame;
};

Lane MakeLane(int n, const std::vector<std::pair<int, double>>& excess_ms, Metric metric = Metric::kHost) {
  Lane l;
  const uint32_t fam = l.t.strings.Intern("aten::mm");
  for (int i = 0; i < n; ++i) {
    StepInfo s;
    s.rank = 0;
    s.step_index = i;
    s.start_ns = int64_t{i} * 100000000;
    s.end_ns = s.start_ns + 100000000;
    l.t.steps.push_back(s);
    UnitVerdict v;
    v.verdict = Verdict::kNormal;
    l.d.units.push_back(v);
  }
  l.blame.resize(n);
  for (auto [u, ms] : excess_ms) {
    l.d.units[u].verdict = Verdict::kAbnormal;
    l.d.units[u].impact_ns = ms * 1e6;
    ++l.d.views[0].flagged;
    BlamedFamily b;
    b.family = fam;
    b.metric = metric;
    b.excess_ns = ms * 1e6;
    l.blame[u].push_back(b);
  }
  l.d.views[0].judged = n;
  return l;
}

TEST(RunPatterns, HostStallsInMostStepsAreOneFindingAndAnOutlierStays) {
  Lane l = MakeLane(6, {{0, 2.5}, {1, 2.9}, {2, 2.3}, {4, 2.0}, {5, 9.0}});
  const auto f = FindRunPatterns(l.t, RunPatternOptions{}, &l.d, &l.blame);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].units, 5);
  EXPECT_EQ(f[0].judged, 6);
  EXPECT_DOUBLE_EQ(f[0].typical_excess_ns, 2.5e6);
  EXPECT_EQ(f[0].demoted, 4);
  for (int u : {0, 1, 2, 4}) {
    EXPECT_EQ(l.d.units[u].verdict, Verdict::kNormal) << u;
    EXPECT_EQ(l.d.units[u].run_finding, 0) << u;
    EXPECT_TRUE(l.blame[u].empty());
  }
  // 9 ms is over twice the typical 2.5 ms: this step differs from the run's other steps.
  EXPECT_EQ(l.d.units[5].verdict, Verdict::kAbnormal);
  EXPECT_EQ(l.d.views[0].flagged, 1);
  EXPECT_EQ(l.d.views[0].run_pattern, 4);
  EXPECT_NE(f[0].sentence.find("5 of 6 judged steps"), std::string::npos) << f[0].sentence;
}

TEST(RunPatterns, WhatTheDeviceQueueAbsorbedIsSaid) {
  // Host stalls of 2-3 ms the steps paid only 0.5 ms of each: the rest ran while the device was busy.
  Lane l = MakeLane(5, {{0, 2.5}, {1, 2.9}, {2, 2.3}, {3, 2.0}});
  for (int u = 0; u < 4; ++u) l.d.units[u].impact_ns = 0.5e6;
  const auto f = FindRunPatterns(l.t, RunPatternOptions{}, &l.d, &l.blame);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_DOUBLE_EQ(f[0].impact_ns, 2e6);
  EXPECT_NEAR(f[0].absorbed_ns, 7.7e6, 1);
  EXPECT_NE(f[0].sentence.find("costing each step 0.5-0.5% of its time (the device queue absorbed 7.70 ms"),
            std::string::npos) << f[0].sentence;
  Lane paid = MakeLane(5, {{0, 2.5}, {1, 2.9}, {2, 2.3}, {3, 2.0}});
  const auto g = FindRunPatterns(paid.t, RunPatternOptions{}, &paid.d, &paid.blame);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].absorbed_ns, 0);
  EXPECT_EQ(g[0].sentence.find("absorbed"), std::string::npos) << g[0].sentence;
  // A few hundred ns absorbed out of ms of excess is not worth a word.
  Lane stray = MakeLane(5, {{0, 2.5}, {1, 2.9}, {2, 2.3}, {3, 2.0}});
  stray.d.units[0].impact_ns -= 584;
  const auto h = FindRunPatterns(stray.t, RunPatternOptions{}, &stray.d, &stray.blame);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_NEAR(h[0].absorbed_ns, 584, 1e-6);
  EXPECT_EQ(h[0].sentence.find("absorbed"), std::string::npos) << h[0].sentence;
}

TEST(RunPatterns, AFewStallsAreNotAPattern) {
  Lane l = MakeLane(10, {{3, 2.5}, {7, 2.0}});
  EXPECT_TRUE(FindRunPatterns(l.t, RunPatternOptions{}, &l.d, &l.blame).empty());
  EXPECT_EQ(l.d.units[3].verdict, Verdict::kAbnormal);
  EXPECT_EQ(l.d.views[0].flagged, 2);
}

TEST(RunPatterns, DeviceCostsAreNotFoldedIntoAPattern) {
  Lane l = MakeLane(4, {{0, 2.5}, {1, 2.5}, {2, 2.5}, {3, 2.5}}, Metric::kDevice);
  EXPECT_TRUE(FindRunPatterns(l.t, RunPatternOptions{}, &l.d, &l.blame).empty());
  EXPECT_EQ(l.d.views[0].flagged, 4);
}

}  // namespace
}  // namespace truffld::diagnose
