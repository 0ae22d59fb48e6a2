// Pipeline stages longer than the others (peer/pipeline_stages.h) on hand-built runs of one
// TP2 x PP2 replica: ranks 0-1 on h0 (stage 0) and 2-3 on h1 (stage 1), each step an
// all-reduce per stage, a send/recv from each rank of stage 0 to its partner in stage 1, and
// compute whose device time sets each stage's load; stages and matches come from the real
// alignment (GroupUnits, MatchCollectives).
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "../peer_table.h"
#include "peer/alignment.h"
#include "peer/pipeline_stages.h"

namespace truffld::diagnose {
namespace {

using testing::PeerTableBuilder;

struct PipeSpec {
  int steps = 6;
  std::function<double(int step, int stage)> load = [](int, int stage) { return stage ? 500000.0 : 200000.0; };
  bool p2p = true;
  bool device_detail = true;
};

constexpr int64_t kPipeStepNs = 2000000;

void AddPipeComm(PeerTableBuilder& b, const std::string& family, int64_t dev_start, int64_t dev_end) {
  PeerTableBuilder::Op op;
  op.family = family;
  op.layer = "comm";
  op.device_start = dev_start;
  op.device_end = dev_end;
  op.device_ns = static_cast<double>(dev_end - dev_start);
  op.comm_bytes = 8192;
  op.start = dev_start - 1000;
  op.end = dev_start;
  b.Add(op);
}

InstanceTable PipeRun(const PipeSpec& spec) {
  PeerTableBuilder b;
  for (int s = 0; s < spec.steps; ++s) {
    const int64_t t0 = s * 3 * kPipeStepNs;
    for (int64_t rank = 0; rank < 4; ++rank) {
      const int stage = rank < 2 ? 0 : 1;
      const std::string host = stage ? "h1" : "h0";
      b.Unit(rank, s, "horizontal", {"r" + std::to_string(s)}, t0, t0 + kPipeStepNs, host);
      // Each stage's all-reduce ends at its own time; the send/recv pair ends together.
      const int64_t ar_end = t0 + (stage ? 1500000 : 600000);
      AddPipeComm(b, "ncclAllReduce", ar_end - 40000, ar_end);
      if (spec.p2p) AddPipeComm(b, stage ? "ncclRecv" : "ncclSend", t0 + 700000 - (stage ? 200000 : 20000), t0 + 700000);
    }
    for (int64_t rank = 0; rank < 4; ++rank) {
      const int stage = rank < 2 ? 0 : 1;
      b.Unit(rank, s, "vertical", {"r" + std::to_string(s)}, t0, t0 + kPipeStepNs, stage ? "h1" : "h0");
      b.t.steps.back().device_detail = spec.device_detail;
      PeerTableBuilder::Op mm;
      mm.family = "aten::mm";
      mm.start = t0 + 10000;
      mm.end = t0 + 20000;
      mm.host_ns = 10000;
      mm.device_ns = spec.load(s, stage);
      b.Add(mm);
      AddPipeComm(b, "ncclAllReduce", t0 + 900000, t0 + 1800000);  // communication: never a stage's load
    }
  }
  return std::move(b.t);
}

std::vector<PipelineImbalance> FindIn(const InstanceTable& t) {
  const UnitGroups g = GroupUnits(t);
  return FindPipelineImbalance(t, g, MatchCollectives(t, g));
}

TEST(PipelineStages, TheLongerStageIsNamedWithWhatAnEvenSplitSaves) {
  const InstanceTable t = PipeRun({});
  const std::vector<PipelineImbalance> f = FindIn(t);
  ASSERT_EQ(f.size(), 1u);
  const PipelineImbalance& p = f[0];
  ASSERT_EQ(p.stages.size(), 2u);
  EXPECT_EQ(p.stages[0].ranks, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(p.stages[1].ranks, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(p.stages[1].hosts, (std::vector<std::string>{"h1"}));
  EXPECT_EQ(p.longest, 1u);
  EXPECT_EQ(p.steps, 6);
  EXPECT_EQ(p.steps_longest, 6);
  EXPECT_DOUBLE_EQ(p.stages[0].load_ns, 200000);  // compute only: the all-reduce is left out
  EXPECT_DOUBLE_EQ(p.stages[1].load_ns, 500000);
  EXPECT_DOUBLE_EQ(p.saving_ns, 500000 - 350000);  // the longest minus the stages' mean
  EXPECT_DOUBLE_EQ(p.step_ns, kPipeStepNs);
  EXPECT_DOUBLE_EQ(p.share, 0.075);
  const std::string s = PipelineImbalanceSentence(p);
  EXPECT_NE(s.find("pipeline stage of ranks 2-3 (host h1) was the longest of 2 stages in 6 of 6 steps: 500 us of "
                   "device compute a step against 200 us for ranks 0-1 (host h0)"), std::string::npos) << s;
  EXPECT_NE(s.find("would save about 150 us a step (7.5% of a step)"), std::string::npos) << s;
}

TEST(PipelineStages, BalancedOrSmallDifferencesAreNotReported) {
  EXPECT_TRUE(FindIn(PipeRun({6, [](int, int) { return 300000.0; }})).empty());
  // 330 against 300 us: an even split saves 15 us, 0.75% of a 2 ms step (under 5%).
  EXPECT_TRUE(FindIn(PipeRun({6, [](int, int stage) { return stage ? 330000.0 : 300000.0; }})).empty());
}

TEST(PipelineStages, AStageLongestInOnlyHalfTheStepsIsNotAPattern) {
  const auto alternate = [](int step, int stage) { return (step % 2 == stage) ? 600000.0 : 200000.0; };
  EXPECT_TRUE(FindIn(PipeRun({6, alternate})).empty());
  // 5 of 6 steps is a pattern (at least 3 of 4).
  const auto mostly = [](int step, int stage) { return (stage == 1) != (step == 0) ? 600000.0 : 200000.0; };
  const auto f = FindIn(PipeRun({6, mostly}));
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].steps_longest, 5);
}

TEST(PipelineStages, NeedsASendRecvDeviceDetailAndThreeSteps) {
  PipeSpec no_p2p;
  no_p2p.p2p = false;  // two groups of ranks that never exchanged activations: not a pipeline
  EXPECT_TRUE(FindIn(PipeRun(no_p2p)).empty());
  PipeSpec outside;
  outside.device_detail = false;  // steps outside device windows say nothing about device work
  EXPECT_TRUE(FindIn(PipeRun(outside)).empty());
  PipeSpec short_run;
  short_run.steps = 2;
  EXPECT_TRUE(FindIn(PipeRun(short_run)).empty());
}

}  // namespace
}  // namespace truffld::diagnose
