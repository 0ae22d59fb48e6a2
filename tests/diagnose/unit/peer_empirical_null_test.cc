// The run's own null (decision.h): it stays the assumed one on well-calibrated unit
// p-values, recovers the centre and spread of inflated ones (even with a minority of faults),
// keeps the false-alarm rate of heavy-tailed healthy runs, and still lets a strong fault through.
#include <gtest/gtest.h>

#include <random>

#include "../peer_table.h"
#include "peer/decision.h"
#include "peer/peers.h"
#include "peer/scoring.h"
#include "peer/stage.h"

namespace truffld::diagnose {
namespace {

using testing::PlantedFault;
using testing::RunSpec;
using testing::SimulatedRun;

TEST(EmpiricalNull, UpperTailZInvertsUpperTailP) {
  for (double z : {0.5, 1.0, 3.0, 8.0, 20.0, 37.0}) EXPECT_NEAR(UpperTailZ(UpperTailP(z)), z, 1e-6) << z;
  EXPECT_EQ(UpperTailZ(0.7), 0);
  EXPECT_EQ(UpperTailZ(1.0), 0);
  EXPECT_GT(UpperTailZ(1e-300), 36.0);
}

TEST(EmpiricalNull, CalibratedPValuesStayAssumedOnes) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int run = 0; run < 50; ++run) {
    std::vector<double> p(200);
    for (double& x : p) x = u(rng);  // healthy and calibrated: uniform
    const EmpiricalNull n = FitEmpiricalNull(p, 20);
    EXPECT_FALSE(n.Active()) << run << ": " << n.centre << " " << n.scale;
    EXPECT_EQ(CalibratedP(n, 1e-5), 1e-5);
  }
  // Conservative p-values (most units at 1, as Bonferroni over unsurprising tests gives).
  std::vector<double> ones(100, 1.0);
  ones[3] = 1e-9;
  EXPECT_FALSE(FitEmpiricalNull(ones, 20).Active());
}

TEST(EmpiricalNull, RecoversAnInflatedNullDespiteAMinorityOfFaults) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> z(10.0, 4.0);
  int false_alarms = 0, nulls = 0;
  for (int run = 0; run < 40; ++run) {
    std::vector<double> p;
    for (int i = 0; i < 180; ++i) p.push_back(UpperTailP(z(rng)));      // healthy, inflated
    for (int i = 0; i < 20; ++i) p.push_back(UpperTailP(37.0));          // 10% far out
    const EmpiricalNull n = FitEmpiricalNull(p, 20);
    ASSERT_TRUE(n.Active());
    EXPECT_NEAR(n.centre, 10.0, 1.5) << run;
    EXPECT_NEAR(n.scale, 4.0, 1.5) << run;
    const double thr = BenjaminiHochbergThreshold([&] {
      std::vector<double> c;
      for (double x : p) c.push_back(CalibratedP(n, x));
      return c;
    }(), 0.01);
    for (int i = 0; i < 180; ++i) false_alarms += thr > 0 && CalibratedP(n, p[static_cast<size_t>(i)]) <= thr;
    nulls += 180;
    EXPECT_LE(CalibratedP(n, UpperTailP(37.0)), 1e-5) << run;  // 6.75 spreads out: still found
  }
  EXPECT_LE(static_cast<double>(false_alarms) / nulls, 0.01) << false_alarms << " of " << nulls;
}

TEST(EmpiricalNull, ManyFaultyUnitsKeepTheAssumedNull) {
  // A stress run: half of the units faulty and very surprising, the others as the null says.
  std::vector<double> p;
  for (int i = 0; i < 100; ++i) p.push_back(i % 2 ? 1e-60 : 0.3 + 0.007 * i);
  EXPECT_FALSE(FitEmpiricalNull(p, 20).Active());
  // The same with three quarters of the units surprising is taken for an inflated run.
  for (size_t i = 0; i < p.size(); i += 4) p[i] = 1e-20;
  EXPECT_TRUE(FitEmpiricalNull(p, 20).Active());
}

TEST(EmpiricalNull, AWideNullCannotFlagALoneStepAndSaysSo) {
  // The null of a real run with long prompts (centre 15.9, spread 12.5, 61 units): the strongest
  // evidence a row can carry (1e-300) recalibrates to about 0.05, above alpha / 61.
  const EmpiricalNull wide{15.9, 12.5};
  EXPECT_GT(CalibratedP(wide, kSmallestRowP), 0.01 / 61);
  const EmpiricalNull usual{11.9, 6.0};  // the eager run that still flags its stalls
  EXPECT_LT(CalibratedP(usual, kSmallestRowP), 0.01 / 58);
}

// 40 steps of 4 ms whose one family-sum row each has z ~ 10 +- 8 under the assumed null (a
// loaded host's 100 us hiccups in every step), and step 25, 20 ms long, whose row has p = 1e-150
// (z = 26): the run's own null is too wide to flag it.
// With `gap_ns`, step 25 is 4 ms long instead, after `gap_ns` between steps (a (between steps)
// pseudo-instance, gap_instance).
struct NoisyRunWithALongStep {
  testing::PeerTableBuilder b;
  std::vector<TestRow> rows;
  StepCycles cycles;  // every step's similar steps cost 4 ms
  uint32_t gap_instance = 0;
  explicit NoisyRunWithALongStep(int64_t gap_ns = 0) {
    std::mt19937_64 rng(7);
    std::normal_distribution<double> z(10.0, 8.0);
    for (int s = 0; s < 40; ++s) {
      const int64_t t0 = int64_t{s} * 30000000;
      b.Unit(0, s, "vertical", {"r"}, t0, t0 + (s == 25 && gap_ns == 0 ? 20000000 : 4000000));
      const uint32_t op = b.Add({"op"});
      if (s == 25 && gap_ns > 0) {
        testing::PeerTableBuilder::Op gap;
        gap.family = kBetweenStepsFamily;
        gap.layer = "other";
        gap.start = t0 - gap_ns;
        gap.end = t0;
        gap.host_ns = static_cast<double>(gap_ns);
        gap_instance = b.Add(gap);
        b.t.detail[gap_instance].flags |= kDetailOutside;
      }
      TestRow row;
      row.unit = static_cast<uint32_t>(s);
      row.instance = kFamilyRow;
      row.metric = Metric::kHost;
      row.family = b.t.family[op];
      row.expected[static_cast<int>(PeerSource::kTime)] = 100000;
      row.peers[static_cast<int>(PeerSource::kTime)] = 10;
      row.observed = s == 25 ? 16100000 : 200000;
      row.p_value = s == 25 ? 1e-150 : UpperTailP(std::max(0.0, z(rng)));
      rows.push_back(row);
    }
    for (uint32_t u = 0; u < 40; ++u) cycles.ns.push_back(StepCycleNs(b.t, u));
    cycles.similar_ns.assign(40, 4000000.0);
  }
};

TEST(LongStep, ARunsOwnNullCannotHideAStepFiveTimesItsPeers) {
  NoisyRunWithALongStep run;
  DecisionOptions o;
  const DecisionResult without = DecideUnits(run.b.t, run.rows, o);  // no step durations known
  ASSERT_TRUE(without.Null(0).Active());
  EXPECT_EQ(without.units[25].verdict, Verdict::kNormal) << "the null absorbs it: the case this rule exists for";
  EXPECT_FALSE(without.units[25].long_step);

  const DecisionResult with = DecideUnits(run.b.t, run.rows, o, &run.cycles);
  EXPECT_EQ(with.units[25].verdict, Verdict::kAbnormal);
  EXPECT_TRUE(with.units[25].long_step);
  EXPECT_DOUBLE_EQ(with.units[25].step_ratio, 5.0);
  EXPECT_EQ(with.views[0].long_steps, 1);
  EXPECT_EQ(with.views[0].flagged, 1) << "no other step changes";
  for (uint32_t u = 0; u < 40; ++u) {
    EXPECT_DOUBLE_EQ(with.units[u].step_ratio, u == 25 ? 5.0 : 1.0);
    // A unit's p-value is at or below its own threshold exactly when it passed.
    EXPECT_EQ(with.units[u].p_value <= with.UnitThreshold(0, with.units[u]), with.units[u].verdict == Verdict::kAbnormal) << u;
  }
  EXPECT_TRUE(Significant(with, run.b.t, run.rows, 25));
  // A second row of the long step, less surprising than the first but far below the BH critical
  // value alpha * 1 / 40, is significant too: the stall that made the step long is blamed even
  // when a jittery row of the same step was more surprising.
  TestRow second = run.rows[25];
  second.p_value = 1e-20;
  run.rows.push_back(second);
  const DecisionResult two = DecideUnits(run.b.t, run.rows, o, &run.cycles);
  EXPECT_DOUBLE_EQ(two.views[0].long_step_row_cut, 0.01 / 40);
  EXPECT_TRUE(Significant(two, run.b.t, run.rows, 40));
  run.rows.pop_back();

  o.long_step_ratio = 0;  // off
  EXPECT_EQ(DecideUnits(run.b.t, run.rows, o, &run.cycles).units[25].verdict, Verdict::kNormal);
  o.long_step_ratio = 6;  // 5x is below it
  EXPECT_EQ(DecideUnits(run.b.t, run.rows, o, &run.cycles).units[25].verdict, Verdict::kNormal);
}

TEST(LongStep, TheTimeBetweenStepsCountsAndItsGapIsBlamed) {
  // Step 25 is 4 ms long like the others, but the engine spent 12 ms between steps 24 and 25
  // with work pending: its cycle is 16 ms, 4x its peers'. The (between steps) row's family is
  // heavy-tailed on a loaded host, so its own p-value is only 2e-3, far from the Bonferroni
  // cut, while a jittery row of the same step (+200 us) is far more surprising.
  NoisyRunWithALongStep run(12000000);
  EXPECT_DOUBLE_EQ(StepCycleNs(run.b.t, 25), 16000000.0);
  EXPECT_DOUBLE_EQ(StepCycleNs(run.b.t, 26), 4000000.0);
  run.rows[25].observed = 300000;  // the jittery row
  run.rows[25].p_value = 1e-40;
  TestRow row = run.rows[25];
  row.instance = run.gap_instance;
  row.family = run.b.t.family[run.gap_instance];
  row.observed = 12000000;
  row.expected[static_cast<int>(PeerSource::kTime)] = 20000;
  row.p_value = 2e-3;
  run.rows.push_back(row);
  const uint32_t gap_row = static_cast<uint32_t>(run.rows.size() - 1);
  DecisionOptions o;
  const DecisionResult d = DecideUnits(run.b.t, run.rows, o, &run.cycles);
  EXPECT_TRUE(d.units[25].long_step);
  EXPECT_DOUBLE_EQ(d.units[25].step_ratio, 4.0);
  EXPECT_DOUBLE_EQ(d.units[25].gap_before_ns, 12000000.0);
  EXPECT_EQ(d.units[25].verdict, Verdict::kAbnormal);
  EXPECT_GT(d.support_p[gap_row] * d.units[25].tests, d.views[0].long_step_row_cut);
  EXPECT_TRUE(Significant(d, run.b.t, run.rows, gap_row)) << "it explains the extra time";
  o.long_step_row_share = 1.01;  // it explains 12 of the 12 ms extra: just under that share
  EXPECT_FALSE(Significant(DecideUnits(run.b.t, run.rows, o, &run.cycles), run.b.t, run.rows, gap_row));
  run.rows[gap_row].p_value = 0.02;  // not significant at alpha on its own
  EXPECT_FALSE(Significant(DecideUnits(run.b.t, run.rows, DecisionOptions{}, &run.cycles), run.b.t, run.rows,
                           gap_row));
}

TEST(LongStep, ALongStepWithNothingSurprisingStaysNormal) {
  NoisyRunWithALongStep run;
  run.rows[25].p_value = 0.3;  // as long, but no cost beyond its peers
  const DecisionResult d = DecideUnits(run.b.t, run.rows, DecisionOptions{}, &run.cycles);
  EXPECT_TRUE(d.units[25].long_step);
  EXPECT_EQ(d.units[25].verdict, Verdict::kNormal);
  StepCycles unknown = run.cycles;  // fewer than 3 similar steps: no ratio
  unknown.similar_ns.assign(40, std::nan(""));
  EXPECT_EQ(DecideUnits(run.b.t, run.rows, DecisionOptions{}, &unknown).units[25].step_ratio, 0.0);
}

TEST(EmpiricalNull, NeedsEnoughUnits) {
  std::vector<double> p(19, 1e-40);
  EXPECT_FALSE(FitEmpiricalNull(p, 20).Active());
  p.push_back(1e-40);
  EXPECT_TRUE(FitEmpiricalNull(p, 20).Active());
}

// End to end on simulated runs whose host side is heavy-tailed everywhere, as a real eager
// engine's is: half of host ranges delayed by a Pareto factor, so nearly every step holds a
// range the assumed (Gaussian) null calls impossible. Vertical view: its units hold the host
// ranges of three families in eight layers.
int FlaggedVertical(const RunSpec& spec, int min_null_units, int* judged) {
  PeerStageOptions o = testing::StatisticsOnly();
  o.decision.min_null_units = min_null_units;
  const PeerStageResult r = RunPeerStage(SimulatedRun(spec), o);
  *judged += r.decision.views[0].judged;
  return r.decision.views[0].flagged;
}

TEST(EmpiricalNull, PervasivelyHeavyTailedHealthyRunsKeepTheirFalseAlarmRate) {
  int with = 0, without = 0, judged = 0, ignored = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    RunSpec spec;
    spec.seed = seed;
    spec.host_tail = 0.5;
    with += FlaggedVertical(spec, 20, &judged);
    without += FlaggedVertical(spec, 1 << 30, &ignored);  // the assumed null alone
  }
  ASSERT_GT(judged, 1000);
  EXPECT_LE(static_cast<double>(with) / judged, 0.01) << with << " of " << judged;
  // What the empirical null is for: the assumed one cries wolf on such runs.
  EXPECT_GT(static_cast<double>(without) / judged, 0.3) << without << " of " << judged;
}

TEST(EmpiricalNull, StrongFaultIsStillFoundOnAHeavyTailedRun) {
  int found = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    RunSpec spec;
    spec.seed = seed;
    spec.host_tail = 0.5;
    spec.faults = {PlantedFault{1, 30, "aten::mm", 4.0}};
    const InstanceTable t = SimulatedRun(spec);
    const PeerStageResult r = RunPeerStage(t, testing::StatisticsOnly());
    EXPECT_GT(r.decision.views[0].null_centre, 0) << seed;  // the empirical null is in use
    EXPECT_FALSE(r.decision.views[0].single_step_blind) << seed;
    for (uint32_t u = 0; u < t.steps.size(); ++u) {
      const StepInfo& s = t.steps[u];
      if (s.rank == 1 && s.step_index == 30 && s.view == View::kVertical) found += r.decision.units[u].verdict == Verdict::kAbnormal;
    }
  }
  EXPECT_GE(found, 8) << found << " of 10";
}

}  // namespace
}  // namespace truffld::diagnose
