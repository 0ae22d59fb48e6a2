// Slower regimes (peer/slow_regimes.h, ScoringResult::regime_rows): a slower mode a quarter or
// more of the similar steps share is listed by scoring and reported once per lane and family of
// the time no operator covers; a rarer slowdown stays a tail the test flags; operators' own
// modes and regimes below the impact floor are not reported.
#include "peer/slow_regimes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "peer/scoring.h"

namespace truffld::diagnose {
namespace {

// `n` vertical units of rank 0 (1 ms each), one instance of `family` in each (flags `flags`),
// and one similar-steps instance row per unit: expected 100 us, observed 160 us in the units
// `slow` says, else 100 us with +-2% jitter.
struct RegimeRun {
  InstanceTable t;
  std::vector<TestRow> rows;
};

RegimeRun MakeRegimeRun(int n, const std::function<bool(int)>& slow, const char* family = kBetweenStepsFamily,
                        uint8_t flags = kDetailOutside) {
  RegimeRun r;
  const uint32_t fam = r.t.strings.Intern(family);
  for (int u = 0; u < n; ++u) {
    StepInfo s;
    s.rank = 0;
    s.step_index = u;
    s.start_ns = int64_t{u} * 1000000;
    s.end_ns = s.start_ns + 1000000;
    r.t.steps.push_back(s);
    r.t.family.push_back(fam);
    InstanceDetail d;
    d.flags = flags;
    r.t.detail.push_back(d);
    TestRow row;
    row.unit = static_cast<uint32_t>(u);
    row.instance = static_cast<uint32_t>(u);
    row.family = fam;
    row.metric = Metric::kHost;
    row.expected[static_cast<int>(PeerSource::kTime)] = 100000;
    row.time_exact = true;
    row.observed = slow(u) ? 160000.0f : static_cast<float>(100000 * (1.0 + 0.02 * std::sin(u * 1.7)));
    r.rows.push_back(row);
  }
  return r;
}

DecisionResult AllJudged(int n) {
  DecisionResult d;
  d.units.resize(static_cast<size_t>(n));
  for (auto& v : d.units) v.verdict = Verdict::kNormal;
  return d;
}

TEST(SlowRegimes, AThirdOfTheStepsSlowerIsAListedRegimeAndOneFinding) {
  RegimeRun r = MakeRegimeRun(300, [](int u) { return u % 3 == 0; });
  const ScoringResult s = ScoreRows(r.t, r.rows, ScoringOptions{});
  ASSERT_EQ(s.regime_rows.size(), 100u);
  for (const RegimeRow& rr : s.regime_rows) {
    EXPECT_EQ(rr.row % 3, 0u);
    EXPECT_NEAR(rr.excess_ns, 60000, 3000);  // over the main mode's 100 us
  }
  // The regime is the null's: no row of it is surprising on its own.
  for (const TestRow& row : r.rows) EXPECT_GT(row.p[static_cast<int>(PeerSource::kTime)], 1e-3);
  const auto found = FindSlowRegimes(r.t, r.rows, s, AllJudged(300), SlowRegimeOptions{});
  ASSERT_EQ(found.size(), 1u);
  const SlowRegime& g = found[0];
  EXPECT_EQ(g.units(), 100);
  EXPECT_EQ(g.judged, 300);
  EXPECT_EQ(g.rank, 0);
  EXPECT_NEAR(g.typical_excess_ns, 60000, 3000);
  EXPECT_NEAR(g.typical_share, 0.06, 0.003);
  EXPECT_NEAR(g.total_ns, 6e6, 3e5);
  ASSERT_EQ(g.steps.size(), 100u);
  for (size_t k = 0; k < g.steps.size(); ++k) EXPECT_EQ(g.steps[k], static_cast<int64_t>(3 * k));
  EXPECT_NE(g.sentence.find("rank 0, vertical view: (between steps) took +"), std::string::npos) << g.sentence;
  EXPECT_NE(g.sentence.find("in 100 of 300 judged steps"), std::string::npos) << g.sentence;
}

TEST(SlowRegimes, ARareSlowdownIsATailNotARegime) {
  // 1 step in 10: under regime_weight, so the null leaves it out and the rows are surprising.
  RegimeRun r = MakeRegimeRun(300, [](int u) { return u % 10 == 0; });
  const ScoringResult s = ScoreRows(r.t, r.rows, ScoringOptions{});
  EXPECT_TRUE(s.regime_rows.empty());
  EXPECT_LT(r.rows[0].p[static_cast<int>(PeerSource::kTime)], 1e-6);
  EXPECT_TRUE(FindSlowRegimes(r.t, r.rows, s, AllJudged(300), SlowRegimeOptions{}).empty());
}

TEST(SlowRegimes, OperatorsOwnModesAndRegimesUnderTheFloorAreNotReported) {
  // The same regime in an operator family: how healthy runs behave (a second algorithm).
  RegimeRun op = MakeRegimeRun(300, [](int u) { return u % 3 == 0; }, "aten::mm", 0);
  const ScoringResult so = ScoreRows(op.t, op.rows, ScoringOptions{});
  EXPECT_EQ(so.regime_rows.size(), 100u);  // scoring lists it ...
  EXPECT_TRUE(FindSlowRegimes(op.t, op.rows, so, AllJudged(300), SlowRegimeOptions{}).empty());  // ... unreported
  // 60 us of a 1 ms step is 6%: a 10% floor leaves it out.
  RegimeRun r = MakeRegimeRun(300, [](int u) { return u % 3 == 0; });
  const ScoringResult s = ScoreRows(r.t, r.rows, ScoringOptions{});
  SlowRegimeOptions high;
  high.min_share = 0.1;
  EXPECT_TRUE(FindSlowRegimes(r.t, r.rows, s, AllJudged(300), high).empty());
  SlowRegimeOptions many;
  many.min_units = 101;
  EXPECT_TRUE(FindSlowRegimes(r.t, r.rows, s, AllJudged(300), many).empty());
  // 100 units of a lane judged in 1,200 steps: under a tenth of the lane, a handful, not a regime.
  EXPECT_TRUE(FindSlowRegimes(r.t, r.rows, s, AllJudged(300), SlowRegimeOptions{}).size() == 1u);
  DecisionResult wide = AllJudged(300);
  for (int k = 0; k < 900; ++k) {
    r.t.steps.push_back(r.t.steps[0]);
    UnitVerdict v;
    v.verdict = Verdict::kNormal;
    wide.units.push_back(v);
  }
  EXPECT_TRUE(FindSlowRegimes(r.t, r.rows, s, wide, SlowRegimeOptions{}).empty());
}

TEST(SlowRegimes, WhatTheStepsDidNotPayIsNotCounted) {
  // The same regime; in every other regime step the cycle was no longer than its similar steps'
  // (a host gap the device queue absorbed): those steps paid nothing, the others 40 of the 60 us.
  RegimeRun r = MakeRegimeRun(300, [](int u) { return u % 3 == 0; });
  const ScoringResult s = ScoreRows(r.t, r.rows, ScoringOptions{});
  StepCycles c;
  c.ns.assign(300, 1.0e6);
  c.similar_ns.assign(300, 1.0e6);
  for (int u = 0; u < 300; u += 6) c.ns[static_cast<size_t>(u)] = 1.04e6;
  const auto found = FindSlowRegimes(r.t, r.rows, s, AllJudged(300), SlowRegimeOptions{}, &c);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].units(), 50);
  EXPECT_NEAR(found[0].typical_share, 0.04, 1e-9);
  EXPECT_NEAR(found[0].total_ns, 50 * 40000.0, 1);
  EXPECT_NEAR(found[0].absorbed_ns, 50 * 20000.0, 50 * 3000.0);
  EXPECT_NE(found[0].sentence.find("steps 0, 6, 12, 18, 24, ..."), std::string::npos) << found[0].sentence;
  EXPECT_NE(found[0].sentence.find("(the steps did not pay"), std::string::npos) << found[0].sentence;
  // Without similar steps to compare cycles with, the excess counts as paid.
  c.similar_ns.assign(300, std::nan(""));
  const auto all = FindSlowRegimes(r.t, r.rows, s, AllJudged(300), SlowRegimeOptions{}, &c);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].units(), 100);
  EXPECT_EQ(all[0].absorbed_ns, 0);
}

TEST(SlowRegimes, EachLaneKeepsItsCostliestRegimes) {
  // Hand-listed regime rows: four families on one lane; the costliest `max_per_lane` are kept.
  InstanceTable t;
  std::vector<TestRow> rows;
  ScoringResult s;
  const char* fams[] = {kBetweenStepsFamily, kHostOutsideFamily, kStepCallsFamily, kDeviceIdleFamily};
  for (int u = 0; u < 10; ++u) {
    StepInfo st;
    st.rank = 3;
    st.step_index = u;
    st.start_ns = int64_t{u} * 1000000;
    st.end_ns = st.start_ns + 1000000;
    t.steps.push_back(st);
    for (int f = 0; f < 4; ++f) {
      const uint32_t i = static_cast<uint32_t>(t.family.size());
      t.family.push_back(t.strings.Intern(fams[f]));
      InstanceDetail d;
      d.flags = kDetailOutside;
      t.detail.push_back(d);
      TestRow row;
      row.unit = static_cast<uint32_t>(u);
      row.instance = i;
      row.family = t.family[i];
      s.regime_rows.push_back({static_cast<uint32_t>(rows.size()), 20000.0f * static_cast<float>(f + 1)});
      rows.push_back(row);
    }
  }
  SlowRegimeOptions o;
  o.max_per_lane = 2;
  const auto found = FindSlowRegimes(t, rows, s, AllJudged(10), o);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(t.strings.Get(found[0].family), kDeviceIdleFamily);  // 80 us a step
  EXPECT_EQ(t.strings.Get(found[1].family), kStepCallsFamily);   // 60 us
  EXPECT_EQ(found[0].rank, 3);
  EXPECT_EQ(found[0].units(), 10);
  EXPECT_DOUBLE_EQ(found[0].total_ns, 800000);
}

}  // namespace
}  // namespace truffld::diagnose
