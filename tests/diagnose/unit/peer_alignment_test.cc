// Cross-rank alignment, collective matching, host offsets and stragglers (alignment.h,
// stragglers.h), and the step-name tags and nesting the tree reader derives (truffld/step_tags.h).
#include <gtest/gtest.h>

#include "../peer_table.h"
#include "truffld/step_tags.h"
#include "read/tree_reader_parts.h"
#include "peer/alignment.h"
#include "peer/stragglers.h"

namespace truffld::diagnose {
namespace {

using testing::PeerTableBuilder;

TEST(StepTags, ReadsNumericTagsAfterTheRequestList) {
  const std::string name = "step_execute_model[request_ids:a\\_b_c][phase:mixed][tokens:172][ctx:1400]";
  EXPECT_EQ(StepNameTag(name, "tokens"), 172);
  EXPECT_EQ(StepNameTag(name, "ctx"), 1400);
  EXPECT_EQ(StepNameTag(name, "phase"), -1);  // not a number
  EXPECT_EQ(StepNameTag("step[tokens:]", "tokens"), -1);
  EXPECT_EQ(StepNameTag("step[tokens:12x]", "tokens"), -1);
  EXPECT_EQ(StepNameTag("step[ctokens:5]", "tokens"), -1);  // the whole tag name must match
  EXPECT_EQ(StepNameTag("step[tokens:3][tokens:4]", "tokens"), 4);  // the last one wins
}

detail::PendingInstance Pending(int64_t thread, int64_t start, int64_t end, uint32_t family, bool replay = false) {
  detail::PendingInstance p{};
  p.thread = thread;
  p.start = start;
  p.end = end;
  p.family = family;
  p.detail.flags = replay ? kDetailReplay : 0;
  return p;
}

TEST(Nesting, InnermostEnclosingRangeOnTheSameThread) {
  // thread 1: [0,100) contains [10,50) which contains [20,30); [60,90) is a sibling.
  // thread 2: [15,40) overlaps in time but is on another thread; a replay has no parent.
  std::vector<detail::PendingInstance> ins = {Pending(1, 0, 100, 0), Pending(1, 10, 50, 1), Pending(2, 15, 40, 2),
                                              Pending(1, 20, 30, 3), Pending(1, 60, 90, 4), Pending(1, 70, 80, 5, true)};
  const std::vector<int32_t> p = detail::NestInstances(ins);
  EXPECT_EQ(p, (std::vector<int32_t>{-1, 0, -1, 1, 0, -1}));
  // The top-level instance before each one's top-level ancestor, per thread (replays apart).
  const std::vector<int32_t> before = detail::PrecedingTopLevel(ins, p);
  EXPECT_EQ(before, (std::vector<int32_t>{-1, -1, -1, -1, -1, -1}));
  ins.push_back(Pending(1, 200, 300, 6));
  ins.push_back(Pending(1, 210, 220, 7));
  const std::vector<int32_t> p2 = detail::NestInstances(ins);
  const std::vector<int32_t> before2 = detail::PrecedingTopLevel(ins, p2);
  EXPECT_EQ(before2[6], 0);  // [200,300) follows [0,100) on thread 1
  EXPECT_EQ(before2[7], 0);  // its child inherits the context of its top-level ancestor
}

TEST(GroupUnits, SameRequestsAndOccurrenceAcrossRanksOnly) {
  PeerTableBuilder b;
  // Two TP ranks run two decode steps with the same batch; a DP replica serves other requests.
  for (int64_t rank : {0, 1}) {
    b.Unit(rank, 0, "vertical", {"a", "b"}, 0, 100);
    b.Unit(rank, 1, "vertical", {"a", "b"}, 100, 200);
  }
  b.Unit(2, 0, "vertical", {"x"}, 0, 100);
  b.Unit(0, 0, "horizontal", {"a", "b"}, 0, 100);
  const UnitGroups g = GroupUnits(b.t);
  EXPECT_EQ(g.group[0], g.group[2]);  // rank 0 step 0 with rank 1 step 0
  EXPECT_EQ(g.group[1], g.group[3]);  // the second occurrence of the same batch together
  EXPECT_NE(g.group[0], g.group[1]);
  EXPECT_NE(g.group[4], g.group[0]);  // another replica
  EXPECT_NE(g.group[5], g.group[0]);  // views never mix
}

// Two ranks, one all-reduce each; rank 1 enters 300 us late; both end together.
PeerTableBuilder TwoRankCollective(int64_t late_ns) {
  PeerTableBuilder b;
  for (int64_t rank : {0, 1}) {
    b.Unit(rank, 0, "horizontal", {"r"}, 0, 10000000);
    PeerTableBuilder::Op op;
    op.family = "ncclAllReduce";
    op.layer = "comm";
    op.device_start = 1000000 + (rank == 1 ? late_ns : 0);
    op.device_end = 1000000 + late_ns + 50000;
    op.device_ns = static_cast<double>(op.device_end - op.device_start);
    op.comm_bytes = 4096;
    op.start = op.device_start - 1000;
    op.end = op.device_start;
    b.Add(op);
  }
  return b;
}

TEST(MatchCollectives, WaitAndTransferOfEachParticipant) {
  PeerTableBuilder b = TwoRankCollective(300000);
  const UnitGroups g = GroupUnits(b.t);
  const std::vector<CommTiming> c = MatchCollectives(b.t, g);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].participants, 2);
  EXPECT_EQ(c[1].participants, 2);
  EXPECT_FLOAT_EQ(c[0].wait_ns, 300000);  // rank 0 waited for rank 1
  EXPECT_FLOAT_EQ(c[1].wait_ns, 0);
  EXPECT_FLOAT_EQ(c[0].transfer_ns, 50000);  // both see the same transfer
  EXPECT_FLOAT_EQ(c[1].transfer_ns, 50000);
  EXPECT_EQ(c[0].last_rank, 1);
  EXPECT_EQ(c[1].last_rank, 1);

  const StragglerResult s = FindStragglers(b.t, g, c, 0.0, 0.0);  // one step: nothing to compare with
  ASSERT_EQ(s.stragglers.size(), 1u);
  EXPECT_EQ(s.stragglers[0].rank, 1);
  EXPECT_DOUBLE_EQ(s.stragglers[0].caused_ns, 300000);
  EXPECT_EQ(s.waits[0].waiting_on, 1);
  EXPECT_DOUBLE_EQ(s.waits[0].waited_ns, 300000);
  EXPECT_DOUBLE_EQ(s.waits[1].waited_ns, 0);
}

// Rank 1 enters the all-reduce 300 us late in every one of 6 steps: no single step is unusual
// for this run (it sets the run's typical delay itself), but the run has a persistent straggler.
TEST(MatchCollectives, AStragglerInEveryStepIsPersistent) {
  PeerTableBuilder b;
  for (int64_t step = 0; step < 6; ++step) {
    for (int64_t rank : {0, 1}) {
      const int64_t t0 = step * 20000000;
      b.Unit(rank, step, "horizontal", {"r" + std::to_string(step)}, t0, t0 + 10000000);
      PeerTableBuilder::Op op;
      op.family = "ncclAllReduce";
      op.layer = "comm";
      op.device_start = t0 + 1000000 + (rank == 1 ? 300000 : 0);
      op.device_end = t0 + 1350000;
      op.device_ns = static_cast<double>(op.device_end - op.device_start);
      op.comm_bytes = 4096;
      op.start = op.device_start - 1000;
      op.end = op.device_start;
      b.Add(op);
    }
  }
  const UnitGroups g = GroupUnits(b.t);
  const StragglerResult s = FindStragglers(b.t, g, MatchCollectives(b.t, g));
  EXPECT_TRUE(s.stragglers.empty());  // never 3x the run's typical delay
  ASSERT_EQ(s.persistent.size(), 1u);
  EXPECT_EQ(s.persistent[0].rank, 1);
  EXPECT_EQ(s.persistent[0].steps, 6);
  EXPECT_EQ(s.persistent[0].logical_steps, 6);
  EXPECT_DOUBLE_EQ(s.persistent[0].typical_caused_ns, 300000);
  EXPECT_DOUBLE_EQ(s.persistent[0].caused_ns, 6 * 300000);
  // Late in 2 steps of 6 only: not how the run behaves.
  for (uint32_t i = 0; i < b.t.size(); ++i)
    if (b.t.steps[b.t.step[i]].step_index >= 2 && b.t.steps[b.t.step[i]].rank == 1) b.t.detail[i].device_start -= 300000;
  EXPECT_TRUE(FindStragglers(b.t, g, MatchCollectives(b.t, g)).persistent.empty());
}

// Steps outside the sampled device windows: collectives without device times. Rank 1's host
// falls 400 us behind before the second of three all-reduces in step 4 and stays behind; in the
// other steps the ranks take turns entering 10 us apart.
TEST(MatchCollectives, WithoutDeviceDetailALateHostIsTheStraggler) {
  PeerTableBuilder b;
  for (int64_t step = 0; step < 6; ++step) {
    for (int64_t rank : {0, 1}) {
      const int64_t t0 = step * 20000000;
      b.Unit(rank, step, "horizontal", {"r" + std::to_string(step)}, t0, t0 + 10000000);
      for (int k = 0; k < 3; ++k) {
        PeerTableBuilder::Op op;
        op.family = "ncclAllReduce";
        op.layer = "comm";
        op.comm_bytes = 4096;
        const int64_t late = step == 4 && rank == 1 && k >= 1 ? 400000 : (rank == step % 2 ? 10000 : 0);
        op.start = t0 + 1000000 * (k + 1) + late;
        op.end = op.start + 5000;
        b.Add(op);
      }
    }
  }
  for (StepInfo& st : b.t.steps) st.device_detail = false;
  const UnitGroups g = GroupUnits(b.t);
  const std::vector<CommTiming> c = MatchCollectives(b.t, g);
  for (const CommTiming& x : c) EXPECT_EQ(x.participants, 0) << "no device times: nothing matched on the device";
  const StragglerResult s = FindStragglers(b.t, g, c);
  ASSERT_EQ(s.stragglers.size(), 1u);
  EXPECT_TRUE(s.stragglers[0].host_entries);
  EXPECT_EQ(s.stragglers[0].rank, 1);
  EXPECT_EQ(s.stragglers[0].step_index, 4);
  // 400 us behind, less rank 0's own 10 us of that step: how far it fell behind, not the sum over collectives.
  EXPECT_DOUBLE_EQ(s.stragglers[0].caused_ns, 390000);
  EXPECT_EQ(s.stragglers[0].last_in, 2);
  EXPECT_EQ(s.stragglers[0].collectives, 3);
  // With device detail the same table has no device times to go by: no straggler.
  for (StepInfo& st : b.t.steps) st.device_detail = true;
  EXPECT_TRUE(FindStragglers(b.t, g, MatchCollectives(b.t, g)).stragglers.empty());
}

TEST(MatchCollectives, DifferentEndsAreDifferentCommunicators) {
  PeerTableBuilder b = TwoRankCollective(0);
  b.t.detail[1].device_end += 5000000;  // ends 5 ms later: another communicator's all-reduce
  const std::vector<CommTiming> c = MatchCollectives(b.t, GroupUnits(b.t));
  EXPECT_EQ(c[0].participants, 1);
  EXPECT_EQ(c[1].participants, 1);
  EXPECT_FLOAT_EQ(c[1].transfer_ns, b.t.detail[1].device_ns);  // unmatched: its device time
}

TEST(MatchCollectives, SendRecvAcrossHostsWithAClockOffset) {
  // Host h1's clock reads 1.1 ms behind h0 on the merged axis; four steps of a pipeline send on
  // h0 and its recv on h1, both ending together in true time.
  PeerTableBuilder b;
  const int64_t off = -1100000;
  for (int64_t step = 0; step < 4; ++step) {
    const int64_t t0 = step * 10000000;
    const std::vector<std::string> req = {"q" + std::to_string(step)};
    b.Unit(0, step, "horizontal", req, t0, t0 + 5000000, "h0");
    PeerTableBuilder::Op send;
    send.family = "nccl:send";
    send.layer = "comm";
    send.comm_bytes = 8192;
    send.device_start = t0 + 1000000;
    send.device_end = t0 + 1800000;  // waited 780 us for the receiver
    send.device_ns = 800000;
    send.start = send.device_start - 1000;
    send.end = send.device_start;
    b.Add(send);
    b.Unit(1, step, "horizontal", req, t0 + off, t0 + off + 5000000, "h1");
    PeerTableBuilder::Op recv = send;
    recv.family = "nccl:recv";
    recv.device_start = t0 + 1780000 + off;
    recv.device_end = t0 + 1800000 + off;
    recv.device_ns = 20000;
    recv.start = recv.device_start - 1000;
    recv.end = recv.device_start;
    b.Add(recv);
  }
  const UnitGroups g = GroupUnits(b.t);
  const auto offsets = EstimateHostOffsets(b.t, g);
  ASSERT_EQ(offsets.size(), 2u);
  EXPECT_EQ(offsets.at("h1") - offsets.at("h0"), off);
  const std::vector<CommTiming> c = MatchCollectives(b.t, g);
  for (uint32_t i = 0; i < b.t.size(); i += 2) {
    EXPECT_EQ(c[i].participants, 2);
    EXPECT_FLOAT_EQ(c[i].transfer_ns, 20000);  // the send's own transfer, not its wait
    EXPECT_FLOAT_EQ(c[i].wait_ns, 780000);
    EXPECT_EQ(c[i].last_rank, 1);
  }
}

}  // namespace
}  // namespace truffld::diagnose
