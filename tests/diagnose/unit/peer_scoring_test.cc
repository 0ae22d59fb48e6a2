// Peer expectations, source combination, step verdicts and blame on hand-built tables
// (peers.h, scoring.h, decision.h, blame.h, peer_evidence.h).
#include <gtest/gtest.h>

#include <cmath>

#include "../peer_table.h"
#include "peer/alignment.h"
#include "peer/blame.h"
#include "peer/decision.h"
#include "stage2/peer_evidence.h"
#include "peer/scoring.h"
#include "peer/peers.h"

namespace truffld::diagnose {
namespace {

using testing::PeerTableBuilder;

// One unit per (rank, step): four instances of "op" with identical work; rank 1's instances
// cost `slow_rank1` times the others in step `slow_step`.
InstanceTable FourLayers(int ranks, int steps, double slow_rank1, int slow_step) {
  PeerTableBuilder b;
  for (int s = 0; s < steps; ++s) {
    for (int r = 0; r < ranks; ++r) {
      b.Unit(r, s, "vertical", {"q" + std::to_string(s)}, s * 1000000, s * 1000000 + 900000);
      for (int l = 0; l < 4; ++l) {
        PeerTableBuilder::Op op;
        op.family = "op";
        op.start = s * 1000000 + l * 200000;
        op.end = op.start + 10000;
        op.host_ns = 0;
        op.device_ns = 100000 * (1.0 + 0.01 * ((s * 7 + l * 3 + r) % 5)) * (r == 1 && s == slow_step ? slow_rank1 : 1.0);
        op.signature = 42;
        op.position = 7;
        b.Add(op);
      }
    }
  }
  return std::move(b.t);
}

TEST(PeerExpectations, LayersTpPeersAndSimilarSteps) {
  const InstanceTable t = FourLayers(2, 16, 3.0, 5);
  const UnitGroups g = GroupUnits(t);
  const std::vector<CommTiming> comm = MatchCollectives(t, g);
  const std::vector<TestRow> rows = BuildTests(t, g, comm, PeerOptions{});
  // Find rank 1, step 5, first instance, device metric.
  const TestRow* row = nullptr;
  for (const auto& r : rows) {
    const StepInfo& st = t.steps[r.unit];
    if (r.instance != kFamilyRow && r.metric == Metric::kDevice && st.rank == 1 && st.step_index == 5) { row = &r; break; }
  }
  ASSERT_NE(row, nullptr);
  ASSERT_TRUE(row->Has(PeerSource::kLayer));
  ASSERT_TRUE(row->Has(PeerSource::kTp));
  ASSERT_TRUE(row->Has(PeerSource::kTime));
  EXPECT_EQ(row->peers[static_cast<int>(PeerSource::kLayer)], 3);   // its three siblings, all slow
  EXPECT_EQ(row->peers[static_cast<int>(PeerSource::kTp)], 1);      // rank 0's same instance
  EXPECT_NEAR(row->observed / row->expected[static_cast<int>(PeerSource::kLayer)], 1.0, 0.05);
  EXPECT_NEAR(row->observed / row->expected[static_cast<int>(PeerSource::kTp)], 3.0, 0.15);
  EXPECT_NEAR(row->observed / row->expected[static_cast<int>(PeerSource::kTime)], 3.0, 0.15);
  EXPECT_TRUE(row->time_exact);
  // The family row sums the four instances.
  for (const auto& r : rows) {
    if (r.unit == row->unit && r.instance == kFamilyRow && r.metric == Metric::kDevice) {
      EXPECT_NEAR(r.observed / r.expected[static_cast<int>(PeerSource::kTp)], 3.0, 0.15);
    }
  }
}

// Sampled device windows that start one step apart on two ranks: rank 0 has device detail from
// step 4, rank 1 from step 5. In step 4 the ranks' only partner differs in device detail (rank
// 0's host calls are slowed by activity tracing, rank 1's are not): no tensor-parallel peers
// there, either way; from step 5 on both have detail and are peers again.
TEST(PeerExpectations, TpPeersShareDeviceDetail) {
  InstanceTable t = FourLayers(2, 12, 1.0, -1);
  for (StepInfo& s : t.steps) s.device_detail = s.step_index >= 4 + s.rank.value_or(0);
  const UnitGroups g = GroupUnits(t);
  const std::vector<TestRow> rows = BuildTests(t, g, MatchCollectives(t, g), PeerOptions{});
  int offset = 0, both = 0;
  for (const TestRow& r : rows) {
    const int64_t step = t.steps[r.unit].step_index;
    if (step == 4) {
      ++offset;
      EXPECT_FALSE(r.Has(PeerSource::kTp)) << "rank " << t.steps[r.unit].rank.value_or(-1) << " step 4";
    } else if (step == 5 || step == 3) {
      ++both;
      EXPECT_TRUE(r.Has(PeerSource::kTp)) << "step " << step;
    }
  }
  EXPECT_GT(offset, 0);
  EXPECT_GT(both, 0);
}

TestRow Row(double p_layer, double p_tp, double p_time) {
  TestRow r;
  r.observed = 200;
  if (p_layer >= 0) { r.expected[0] = 100; r.p[0] = p_layer; }
  if (p_tp >= 0) { r.expected[1] = 100; r.p[1] = p_tp; }
  if (p_time >= 0) { r.expected[2] = 100; r.p[2] = p_time; }
  return r;
}

TEST(CombineSources, OneWitnessAloneCannotRaiseAnAlarm) {
  EXPECT_NEAR(CombineSources(Row(0.05, 1e-9, 0.04)), 4 * 0.04, 1e-12);    // TP says slow, similar steps do not
  EXPECT_NEAR(CombineSources(Row(-1, 1e-9, 1e-8)), 4 * 1e-8, 1e-20);     // both agree: uniform slowdown
  EXPECT_NEAR(CombineSources(Row(1e-7, 0.3, 1e-9)), 4 * 1e-7, 1e-18);    // partial: layers + one witness
  EXPECT_NEAR(CombineSources(Row(-1, -1, 1e-9)), 4 * 1e-9, 1e-20);       // only similar steps: that source
  EXPECT_EQ(CombineSources(Row(1e-12, -1, -1)), 1.0);                    // layers alone: not judged
  TestRow r = Row(1e-12, -1, -1);
  r.unit_judged = true;                                                   // ... unless the unit is judged
  EXPECT_FALSE(Judged(r));
  EXPECT_TRUE(Tested(r));
  EXPECT_NEAR(CombineSources(r), 4e-12, 1e-24);
}

TEST(CombineSources, GroupWideSlowdownNeedsExactShapesAndContext) {
  TestRow r = Row(-1, 0.05, 1e-10);
  r.p_group = 1e-9;  // the TP peers are as slow against similar steps
  EXPECT_NEAR(CombineSources(r), 4 * 0.05, 1e-12);
  r.time_exact = true;
  EXPECT_NEAR(CombineSources(r), 4 * 0.05, 1e-12);  // context length unknown: not trusted
  r.context_known = true;
  EXPECT_NEAR(CombineSources(r), 4 * 1e-9, 1e-20);
}

// A fitted similar-steps expectation is trusted as far as the steps it was fitted on follow its
// line: the same 1.35x slowdown is strong evidence for a cost its size determines within 1%, and
// weak for one that scatters by 15% around it.
TEST(ScoreRows, FittedExpectationTrustedToItsNeighboursScatter) {
  PeerTableBuilder b;
  for (int s = 0; s < 40; ++s) {
    const int64_t t0 = int64_t{s} * 1000000;
    b.Unit(0, s, "vertical", {"q" + std::to_string(s)}, t0, t0 + 900000);
    const float blocks = static_cast<float>(100 + 7 * s);  // every step a new size: no exact shape
    const double noise = static_cast<double>((s * 37) % 11 - 5) / 5.0;  // in [-1, 1]
    const double slow = s == 20 ? 1.35 : 1.0;
    for (int k = 0; k < 2; ++k) {
      PeerTableBuilder::Op op;
      op.family = k == 0 ? "tight" : "loose";
      op.start = t0 + k * 300000;
      op.end = op.start + 10000;
      op.device_ns = 100.0 * blocks * (1.0 + (k == 0 ? 0.01 : 0.15) * noise) * slow;
      op.blocks = blocks;
      op.signature = static_cast<uint64_t>(1000 * (k + 1) + s);
      op.position = static_cast<uint64_t>(k + 1);
      b.Add(op);
    }
  }
  const InstanceTable& t = b.t;
  const UnitGroups g = GroupUnits(t);
  std::vector<TestRow> rows = BuildTests(t, g, MatchCollectives(t, g), PeerOptions{});
  ScoreRows(t, rows, ScoringOptions{});
  const int tm = static_cast<int>(PeerSource::kTime);
  const TestRow* at20[2] = {nullptr, nullptr};
  for (const TestRow& r : rows) {
    if (r.instance == kFamilyRow || r.metric != Metric::kDevice || t.steps[r.unit].step_index != 20) continue;
    at20[t.strings.Get(r.family) == "tight" ? 0 : 1] = &r;
  }
  ASSERT_NE(at20[0], nullptr);
  ASSERT_NE(at20[1], nullptr);
  for (const TestRow* r : at20) {
    ASSERT_TRUE(r->Has(PeerSource::kTime));
    EXPECT_FALSE(r->time_exact);
    EXPECT_NEAR(r->observed / r->expected[tm], 1.35, 0.1);
  }
  EXPECT_LT(at20[0]->fit_scatter, 0.02);
  EXPECT_GT(at20[1]->fit_scatter, 0.05);
  EXPECT_LT(at20[0]->p[tm], 1e-9);   // trusted to the 2% floor: a 1.35x cost is far out
  EXPECT_GT(at20[1]->p[tm], 1e-4);   // trusted to 10%: 1.35x is about three sigmas
}

TEST(BenjaminiHochberg, ThresholdIsTheLargestQualifyingPValue) {
  EXPECT_DOUBLE_EQ(BenjaminiHochbergThreshold({0.001, 0.008, 0.039, 0.041, 0.9}, 0.05), 0.008);
  EXPECT_DOUBLE_EQ(BenjaminiHochbergThreshold({0.2, 0.3}, 0.05), 0.0);
  EXPECT_DOUBLE_EQ(BenjaminiHochbergThreshold({}, 0.05), 0.0);
}

TEST(PeerExpectations, StepDurationsOfSimilarSteps) {
  // 16 steps of 900 us on two ranks; rank 1's step 5 made 3x as long.
  InstanceTable t = FourLayers(2, 16, 1.0, -1);
  uint32_t slow = 0;
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    if (t.steps[u].rank == 1 && t.steps[u].step_index == 5) slow = u;
  }
  t.steps[slow].end_ns = t.steps[slow].start_ns + 2700000;
  const UnitGroups g = GroupUnits(t);
  StepCycles cycles;
  BuildTests(t, g, MatchCollectives(t, g), PeerOptions{}, &cycles);
  ASSERT_EQ(cycles.similar_ns.size(), t.steps.size());
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    EXPECT_DOUBLE_EQ(cycles.similar_ns[u], 900000) << u;  // the slow step is outvoted in its peers' medians
  }
  EXPECT_DOUBLE_EQ(cycles.ns[slow], 2700000);  // no time between steps in this table
  PeerOptions few;
  few.min_time_neighbours = 16;  // more than any unit has
  BuildTests(t, g, MatchCollectives(t, g), few, &cycles);
  EXPECT_TRUE(std::isnan(cycles.similar_ns[slow]));
}

TEST(DecideUnits, LoneMildInstanceNeedsASecondOrAFamilySum) {
  PeerTableBuilder b;
  b.Unit(0, 0, "vertical", {"a"}, 0, 1000);
  b.Add({"op"});
  b.Add({"op"});
  std::vector<TestRow> rows(2);
  for (uint32_t i = 0; i < 2; ++i) {
    rows[i].unit = 0;
    rows[i].instance = i;
    rows[i].metric = Metric::kDevice;
    rows[i].family = b.t.family[i];
    rows[i].expected[1] = 100;
    rows[i].effective_expected = 100;
  }
  rows[0].observed = 130;  // 1.3x, very surprising, alone
  rows[0].p_value = 1e-12;
  rows[1].observed = 100;
  rows[1].p_value = 0.7;
  DecisionOptions o;
  DecisionResult d = DecideUnits(b.t, rows, o);
  EXPECT_DOUBLE_EQ(d.units[0].p_value, 1.0);  // min over eligible = second smallest = 0.7, x2 tests
  rows[1].observed = 125;
  rows[1].p_value = 1e-10;  // a second instance agrees
  d = DecideUnits(b.t, rows, o);
  EXPECT_NEAR(d.units[0].p_value, 2e-10, 1e-22);
  rows[1].p_value = 0.7;
  rows[0].observed = 250;  // 2.5x alone is strong enough
  d = DecideUnits(b.t, rows, o);
  EXPECT_NEAR(d.units[0].p_value, 2e-12, 1e-24);
  EXPECT_EQ(d.units[0].verdict, Verdict::kAbnormal);
}

TEST(DecideUnits, NoUnitLevelPeersIsInsufficientEvidence) {
  PeerTableBuilder b;
  b.Unit(0, 0, "vertical", {"a"}, 0, 1000);
  b.Add({"op"});
  std::vector<TestRow> rows(1);
  rows[0].unit = 0;
  rows[0].instance = 0;
  rows[0].expected[0] = 100;  // layers only
  rows[0].p[0] = 1e-30;
  rows[0].p_value = CombineSources(rows[0]);
  const DecisionResult d = DecideUnits(b.t, rows, DecisionOptions{});
  EXPECT_EQ(d.units[0].verdict, Verdict::kInsufficient);
  EXPECT_NE(d.units[0].reason.find("layers"), std::string::npos);
  EXPECT_EQ(d.views[0].insufficient, 1);
  EXPECT_EQ(d.views[0].flagged, 0);
}

TEST(DecideUnits, AnImplicitStepSaysHowToGetSteps) {
  PeerTableBuilder b;
  b.Unit(0, 0, "vertical", {"*"}, 0, 1000);
  b.t.steps[0].step_name = "<implicit step>";
  b.Add({"op"});
  std::vector<TestRow> rows(1);
  rows[0].unit = 0;
  rows[0].instance = 0;
  rows[0].expected[0] = 100;  // layers only
  rows[0].p[0] = 0.5;
  rows[0].p_value = CombineSources(rows[0]);
  const DecisionResult d = DecideUnits(b.t, rows, DecisionOptions{});
  EXPECT_EQ(d.units[0].verdict, Verdict::kInsufficient);
  EXPECT_NE(d.units[0].reason.find("truffld_hooks.step_range"), std::string::npos) << d.units[0].reason;
}

// A scored device-time row of instance i in unit u, expected from its TP peers.
TestRow DeviceRow(const PeerTableBuilder& b, uint32_t u, uint32_t i, double observed, double expected, double p) {
  TestRow r;
  r.unit = u;
  r.instance = i;
  r.metric = Metric::kDevice;
  r.family = b.t.family[i];
  r.observed = static_cast<float>(observed);
  r.expected[1] = static_cast<float>(expected);
  r.effective_expected = static_cast<float>(expected);
  r.p_value = p;
  return r;
}

// Contention: kernels slowed together in a window. A small kernel 1.5x its expectation (too
// mild to count alone, and the only one of its family) is significant when two other device rows
// in its window are surprising too, even when those two are strong enough on their own: the
// slowest kernels are the best witnesses that the window was slow. Outside the window they are not.
TEST(DecideUnits, StrongKernelsWitnessTheirWindow) {
  for (const int64_t gap : {int64_t{0}, int64_t{5000000}}) {
    PeerTableBuilder b;
    b.Unit(0, 0, "vertical", {"a"}, 0, 10000000);
    const char* families[] = {"mm", "mm", "norm", "quiet"};
    const double device[] = {300000, 280000, 3000, 1000};
    for (int i = 0; i < 4; ++i) {
      PeerTableBuilder::Op op{families[i]};
      op.start = i * 20000 + (i == 2 ? gap : 0);
      op.end = op.start + 10000;
      op.device_ns = device[i];
      b.Add(op);
    }
    // A second unit, mildly abnormal, sets the run's threshold (BH over two units) to 1e-6.
    b.Unit(0, 1, "vertical", {"a"}, 10000000, 20000000);
    PeerTableBuilder::Op other{"mm"};
    other.start = 10000000;
    other.end = other.start + 10000;
    other.device_ns = 300000;
    b.Add(other);
    std::vector<TestRow> rows(5);
    rows[4] = DeviceRow(b, 1, 4, 300000, 100000, 1e-6);
    const double expected[] = {100000, 100000, 2000, 1000};
    const double p[] = {1e-40, 1e-35, 1e-30, 0.5};
    for (uint32_t i = 0; i < 4; ++i) rows[i] = DeviceRow(b, 0, i, device[i], expected[i], p[i]);
    const DecisionResult d = DecideUnits(b.t, rows, DecisionOptions{});
    ASSERT_EQ(d.units[0].verdict, Verdict::kAbnormal);
    EXPECT_DOUBLE_EQ(d.support_p[0], 1e-40);  // strong: stands on its own
    if (gap == 0) {
      EXPECT_DOUBLE_EQ(d.support_p[2], 1e-30) << "witnessed by the two slow mm kernels beside it";
      EXPECT_TRUE(Significant(d, b.t, rows, 2));
    } else {
      EXPECT_DOUBLE_EQ(d.support_p[2], 1.0) << "no witness within the window";
      EXPECT_FALSE(Significant(d, b.t, rows, 2));
    }
    EXPECT_FALSE(Significant(d, b.t, rows, 3));
  }
}

// The time no operator range covers is one pseudo-instance per step that already sums its kind of
// time (read/outside_time.h): an input copy issued directly under the step, 1.45x its peers,
// stands on its own like a family sum, where an operator instance that mild needs a witness.
TEST(DecideUnits, OutsideTimeSumsStandOnTheirOwn) {
  for (const bool outside : {true, false}) {
    PeerTableBuilder b;
    b.Unit(0, 0, "vertical", {"a"}, 0, 1000000);
    PeerTableBuilder::Op op{outside ? "(calls under the step)" : "aten::copy_"};
    op.start = 1000;
    op.end = 5000;
    op.device_ns = 61000;
    b.Add(op);
    if (outside) b.t.detail[0].flags |= kDetailOutside;
    const std::vector<TestRow> rows = {DeviceRow(b, 0, 0, 61000, 42000, 1e-6)};
    const DecisionResult d = DecideUnits(b.t, rows, DecisionOptions{});
    if (outside) {
      EXPECT_DOUBLE_EQ(d.support_p[0], 1e-6);
      EXPECT_EQ(d.units[0].verdict, Verdict::kAbnormal);
    } else {
      EXPECT_DOUBLE_EQ(d.support_p[0], 1.0) << "a lone 1.45x kernel is not evidence without a witness";
      EXPECT_EQ(d.units[0].verdict, Verdict::kNormal);
    }
  }
}

// A host-time row of instance i in unit 0, expected 100 us from its TP peers, surely significant.
TestRow SlowHostRow(const PeerTableBuilder& b, uint32_t i, float observed) {
  TestRow r;
  r.unit = 0;
  r.instance = i;
  r.family = b.t.family[i];
  r.metric = Metric::kHost;
  r.expected[1] = 100000;
  r.effective_expected = 100000;
  r.basis = PeerSource::kTp;
  r.p_value = 1e-20;
  r.observed = observed;
  return r;
}

TEST(Blame, DeepestCauseWithItsExcess) {
  // A wrapper (parent) and its child both look slow; the child explains the excess.
  PeerTableBuilder b;
  b.Unit(0, 0, "vertical", {"a"}, 0, 1000000);
  PeerTableBuilder::Op parent{"wrapper"};
  parent.start = 0;
  parent.end = 500000;
  b.Add(parent);
  PeerTableBuilder::Op child{"leaf"};
  child.start = 10;
  child.end = 400000;
  child.parent = 0;
  b.Add(child);
  // Excess 350 us for the wrapper, 300 us for the leaf (at least half of the wrapper's).
  std::vector<TestRow> rows = {SlowHostRow(b, 0, 450000), SlowHostRow(b, 1, 400000)};
  DecisionResult d = DecideUnits(b.t, rows, DecisionOptions{});
  ASSERT_EQ(d.units[0].verdict, Verdict::kAbnormal);
  const auto blamed = BlameUnits(b.t, rows, d, BlameOptions{});
  ASSERT_EQ(blamed[0].size(), 1u);
  EXPECT_EQ(b.t.strings.Get(blamed[0][0].family), "leaf");
  EXPECT_DOUBLE_EQ(blamed[0][0].excess_ns, 300000);
  EXPECT_DOUBLE_EQ(blamed[0][0].expected_ns, 100000);
  EXPECT_NEAR(blamed[0][0].share, 0.3, 1e-12);
  EXPECT_DOUBLE_EQ(blamed[0][0].ratio[static_cast<int>(PeerSource::kTp)], 4.0);
}

// Contention slows every operator in a window: each significant family is listed, highest
// excess first, however many there are (none dropped without a word).
TEST(Blame, EverySignificantFamilyIsListed) {
  PeerTableBuilder b;
  b.Unit(0, 0, "vertical", {"a"}, 0, 10000000);
  constexpr uint32_t kFamilies = 12;
  for (uint32_t i = 0; i < kFamilies; ++i) {
    PeerTableBuilder::Op op{"op" + std::to_string(i)};
    op.start = int64_t(i) * 500000;
    op.end = op.start + 400000;
    b.Add(op);
  }
  std::vector<TestRow> rows;
  for (uint32_t i = 0; i < kFamilies; ++i) rows.push_back(SlowHostRow(b, i, 200000 + 10000 * float(i)));  // op11 slowest
  DecisionResult d = DecideUnits(b.t, rows, DecisionOptions{});
  ASSERT_EQ(d.units[0].verdict, Verdict::kAbnormal);
  const auto blamed = BlameUnits(b.t, rows, d, BlameOptions{});
  ASSERT_EQ(blamed[0].size(), kFamilies);
  EXPECT_EQ(b.t.strings.Get(blamed[0][0].family), "op11");
  EXPECT_EQ(b.t.strings.Get(blamed[0][kFamilies - 1].family), "op0");
  BlameOptions capped;
  capped.top_m = 3;
  EXPECT_EQ(BlameUnits(b.t, rows, d, capped)[0].size(), 3u);
}

TEST(Evidence, DurationsAreWrittenForPeople) {
  EXPECT_EQ(FormatNs(950), "950 ns");
  EXPECT_EQ(FormatNs(4160), "4.16 us");
  EXPECT_EQ(FormatNs(41600), "41.6 us");
  EXPECT_EQ(FormatNs(416000), "416 us");
  EXPECT_EQ(FormatNs(1.2e6), "1.20 ms");
  EXPECT_EQ(FormatNs(3.1e9), "3.1 s");
}

}  // namespace
}  // namespace truffld::diagnose
