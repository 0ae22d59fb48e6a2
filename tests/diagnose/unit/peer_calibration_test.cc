// The peer-relative detector end to end on simulated runs (peer_table.h): healthy runs keep the
// stated false-alarm rate over many seeds; planted slowdowns are found and blamed with their
// excess; a straggler is named while the ranks that waited for it are not flagged.
#include <gtest/gtest.h>

#include "../peer_table.h"
#include "stage2/peer_evidence.h"
#include "peer/stage.h"

namespace truffld::diagnose {
namespace {

using testing::PlantedFault;
using testing::RunSpec;
using testing::SimulatedRun;

const StepInfo* Unit(const InstanceTable& t, int64_t rank, int64_t step, const char* view, uint32_t* u) {
  for (uint32_t i = 0; i < t.steps.size(); ++i) {
    const StepInfo& s = t.steps[i];
    if (s.rank == rank && s.step_index == step && std::string_view(ViewName(s.view)) == view) {
      *u = i;
      return &s;
    }
  }
  return nullptr;
}

TEST(PeerCalibration, HealthyRunsKeepTheirFalseAlarmRate) {
  int flagged = 0, judged = 0, worst = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    RunSpec spec;
    spec.seed = seed;
    spec.tp = seed % 2 ? 2 : 4;
    const InstanceTable t = SimulatedRun(spec);
    const PeerStageResult r = RunPeerStage(t, PeerStageOptions{});
    const int f = r.decision.views[0].flagged + r.decision.views[1].flagged;
    flagged += f;
    judged += r.decision.views[0].judged + r.decision.views[1].judged;
    worst = std::max(worst, f);
    EXPECT_EQ(r.decision.views[0].insufficient + r.decision.views[1].insufficient, 0) << seed;
  }
  ASSERT_GT(judged, 4000);
  // alpha = 1%: on healthy runs Benjamini-Hochberg flags nothing most of the time.
  EXPECT_LE(static_cast<double>(flagged) / judged, 0.01) << flagged << " of " << judged;
  EXPECT_LE(worst, 3);
}

TEST(PeerCalibration, PlantedSlowdownIsFoundAndBlamedWithItsExcess) {
  int found = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    RunSpec spec;
    spec.seed = seed;
    spec.faults = {PlantedFault{1, 30, "aten::mm", 1.5}};
    const InstanceTable t = SimulatedRun(spec);
    const PeerStageResult r = RunPeerStage(t, testing::StatisticsOnly());
    uint32_t u = 0, peer = 0;
    ASSERT_NE(Unit(t, 1, 30, "vertical", &u), nullptr);
    ASSERT_NE(Unit(t, 0, 30, "vertical", &peer), nullptr);
    EXPECT_NE(r.decision.units[peer].verdict, Verdict::kAbnormal) << seed;  // its healthy TP peer
    if (r.decision.units[u].verdict != Verdict::kAbnormal) continue;
    ++found;
    ASSERT_FALSE(r.blame[u].empty());
    const BlamedFamily& b = r.blame[u][0];
    EXPECT_EQ(t.strings.Get(b.family), "aten::mm");
    EXPECT_EQ(b.metric, Metric::kDevice);
    // 8 layers x 40 us x size x 0.5 excess: between 100 us and 600 us.
    EXPECT_GT(b.excess_ns, 100000);
    EXPECT_LT(b.excess_ns, 600000);
    EXPECT_NEAR(b.ratio[static_cast<int>(PeerSource::kTp)], 1.5, 0.15);
  }
  EXPECT_GE(found, 9);
}

TEST(PeerCalibration, StragglerIsNamedAndTheRanksThatWaitedAreNotFlagged) {
  RunSpec spec;
  spec.seed = 3;
  spec.tp = 4;
  spec.faults = {PlantedFault{2, 20, "", 3.0, /*straggle=*/true}};
  const InstanceTable t = SimulatedRun(spec);
  const PeerStageResult r = RunPeerStage(t, PeerStageOptions{});
  bool named = false;
  for (const auto& s : r.stragglers.stragglers) named = named || (s.rank == 2 && s.step_index == 20);
  EXPECT_TRUE(named);
  for (int64_t rank = 0; rank < 4; ++rank) {
    uint32_t u = 0;
    ASSERT_NE(Unit(t, rank, 20, "horizontal", &u), nullptr);
    EXPECT_NE(r.decision.units[u].verdict, Verdict::kAbnormal) << rank;  // transfers were normal
    if (rank != 2) {
      EXPECT_EQ(r.stragglers.waits[u].waiting_on, 2);
      EXPECT_GT(r.stragglers.waits[u].waited_ns, 8 * 250000.0);
    }
  }
}

TEST(PeerCalibration, SlowCollectiveIsAbnormalOnEveryParticipant) {
  RunSpec spec;
  spec.seed = 5;
  spec.faults = {PlantedFault{0, 40, "ncclAllReduce", 3.0}};
  const InstanceTable t = SimulatedRun(spec);
  const PeerStageResult r = RunPeerStage(t, testing::StatisticsOnly());
  for (int64_t rank = 0; rank < 2; ++rank) {
    uint32_t u = 0;
    ASSERT_NE(Unit(t, rank, 40, "horizontal", &u), nullptr);
    EXPECT_EQ(r.decision.units[u].verdict, Verdict::kAbnormal) << rank;
    ASSERT_FALSE(r.blame[u].empty());
    EXPECT_EQ(t.strings.Get(r.blame[u][0].family), "ncclAllReduce");
    EXPECT_EQ(r.blame[u][0].basis, PeerSource::kTime);  // TP peers share the transfer: not a witness
  }
}

// A slowdown that is significant but explains less than the impact floor of its step is labelled
// normal, keeps what it would have explained, and says so in its evidence.
TEST(PeerCalibration, SignificantButImmaterialSlowdownIsNotAnAlarm) {
  RunSpec spec;
  spec.seed = 2;
  spec.faults = {PlantedFault{1, 30, "aten::mm", 1.5}};
  const InstanceTable t = SimulatedRun(spec);
  uint32_t u = 0;
  ASSERT_NE(Unit(t, 1, 30, "vertical", &u), nullptr);
  const PeerStageResult loose = RunPeerStage(t, testing::StatisticsOnly());
  ASSERT_EQ(loose.decision.units[u].verdict, Verdict::kAbnormal);
  ASSERT_FALSE(loose.blame[u].empty());
  const double excess = loose.blame[u][0].excess_ns;
  const double share = loose.blame[u][0].share;
  EXPECT_GT(share, 0.001);  // the default floor keeps it
  EXPECT_EQ(loose.decision.views[0].immaterial, 0);

  PeerStageOptions o;
  o.decision.min_impact_share = std::min(0.99, 1.5 * share);  // now it explains too little
  const PeerStageResult strict = RunPeerStage(t, o);
  const UnitVerdict& v = strict.decision.units[u];
  EXPECT_EQ(v.verdict, Verdict::kNormal);
  EXPECT_TRUE(v.immaterial);
  EXPECT_NEAR(v.immaterial_excess_ns, excess, 1.0);
  EXPECT_EQ(t.strings.Get(v.immaterial_family), "aten::mm");
  EXPECT_TRUE(strict.blame[u].empty());
  EXPECT_EQ(strict.decision.views[0].immaterial, 1);
  EXPECT_EQ(strict.decision.views[0].flagged, loose.decision.views[0].flagged - 1);
  const std::vector<StepEvidence> ev = BuildPeerEvidence(t, strict);
  ASSERT_LT(u, ev.size());
  ASSERT_TRUE(ev[u].peer.has_value());
  const std::string& summary = ev[u].peer->summary;
  EXPECT_NE(summary.find("normal, p = "), std::string::npos) << summary;
  EXPECT_NE(summary.find("but aten::mm explain only +"), std::string::npos) << summary;
  EXPECT_NE(summary.find("impact floor: not an alarm"), std::string::npos) << summary;
}

// A short trace (five steps, one rank, as a profiler's active window gives) is still judged
// against its other steps: the steps left out around a unit shrink to fit.
TEST(PeerCalibration, FiveStepTraceOnOneRankIsJudged) {
  RunSpec spec;
  spec.seed = 4;
  spec.tp = 1;
  spec.steps = 5;
  spec.single_shape = true;
  const InstanceTable t = SimulatedRun(spec);
  const PeerStageResult r = RunPeerStage(t, PeerStageOptions{});
  EXPECT_EQ(r.decision.views[0].insufficient, 0);
  EXPECT_EQ(r.decision.views[0].judged, 5);
  EXPECT_EQ(r.decision.views[0].flagged, 0);
}

}  // namespace
}  // namespace truffld::diagnose
