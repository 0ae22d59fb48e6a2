// What-if replay (peer/replay.h) on hand-built steps: what a cut cost saves depends on whether
// the host or the device bounded the step.
#include "peer/replay.h"
#include "replay_test_util.h"

#include <gtest/gtest.h>

namespace truffld::diagnose {
namespace {

using test::ReplayOp;

StepGraph Step(int64_t end_us, std::vector<ReplayItem> items) {
  StepGraph g;
  g.start = 0;
  g.host_end = end_us * 1000;
  g.items = std::move(items);
  return g;
}

TEST(Replay, NoCutReproducesTheObservedCompletion) {
  StepGraph g = Step(100, {ReplayOp(0, 10, 5, 8, 30), ReplayOp(10, 20, 15, 30, 60), ReplayOp(20, 70, 25, 60, 65, 40), ReplayOp(70, 100)});
  EXPECT_EQ(ObservedCompletion(g), 100000);
  EXPECT_EQ(ReplayedCompletion(g, {}), 100000);
  EXPECT_EQ(ReplayImpactNs(g, {}), 0);
}

// Host-bound: every kernel starts as soon as it is launched; a host stall in op 1 delays all
// that follows, so removing it saves all of it.
TEST(Replay, HostBoundStepSavesTheWholeHostStall) {
  StepGraph g = Step(1300, {ReplayOp(0, 100, 90, 95, 99), ReplayOp(100, 1200, 1190, 1195, 1199), ReplayOp(1200, 1300, 1290, 1295, 1299)});
  EXPECT_DOUBLE_EQ(ReplayImpactNs(g, {{1, 1000e3, 0}}), 1000e3);
}

// Device-bound: the host queued everything early, stalled 1 ms, then blocked in a sync until the
// device finished; the stall was absorbed by the queue and saves nothing.
TEST(Replay, DeviceBoundStepAbsorbsAHostStall) {
  StepGraph g = Step(5010, {ReplayOp(0, 10, 5, 10, 2000), ReplayOp(10, 1020, 1015, 2000, 5000),
                            ReplayOp(1020, 5010, -1, 0, 0, /*wait=*/3980)});
  EXPECT_EQ(ReplayedCompletion(g, {}), 5010000);
  EXPECT_DOUBLE_EQ(ReplayImpactNs(g, {{1, 1000e3, 0}}), 0);
  // A slower kernel, by contrast, costs the step what it lost.
  EXPECT_DOUBLE_EQ(ReplayImpactNs(g, {{1, 0, 1000e3}}), 1000e3);
}

// A blocking copy: the host waited for it; the copy took 500 us too long. After the copy the host
// ran 200 us more. Cutting the copy's device time makes the host leave the copy earlier and
// saves the 500 us; a host stall before the copy's launch also saves its share.
TEST(Replay, BlockingCopySavesWhatTheDeviceGained) {
  StepGraph g = Step(1310, {ReplayOp(0, 100, 95, 100, 300), ReplayOp(300, 1110, 305, 310, 1100, /*wait=*/800), ReplayOp(1110, 1310)});
  EXPECT_DOUBLE_EQ(ReplayImpactNs(g, {{1, 0, 500e3}}), 500e3);
  // The first operator's host stall of 50 us happened while its kernel was not yet running:
  // its launch moves, the kernel and the copy move, all 50 us are saved.
  EXPECT_DOUBLE_EQ(ReplayImpactNs(g, {{0, 50e3, 0}}), 50e3);
}

// A collective on a rank that entered early: another rank entered last, so its end is bounded
// by the peer; a host stall before it costs nothing. On the late rank the same stall costs all.
TEST(Replay, CollectiveWaitingOnALateRank) {
  ReplayItem ar = ReplayOp(200, 210, 205, 210, 1000);
  ar.peer_entry = 900000;  // the peer entered last at 900 us; transfer 100 us
  StepGraph early = Step(1010, {ReplayOp(0, 200, 190, 195, 199), ar, ReplayOp(210, 1010, -1, 0, 0, /*wait=*/790)});
  EXPECT_DOUBLE_EQ(ReplayImpactNs(early, {{0, 150e3, 0}}), 0);
  // However much is cut from this rank's collective, its wait for the late rank stays: at most
  // the whole 100 us transfer is saved.
  EXPECT_DOUBLE_EQ(ReplayImpactNs(early, {{1, 0, 690e3}}), 100e3);
  // A slow transfer, shared by every participant: cutting 60 us of it saves 60 us.
  EXPECT_DOUBLE_EQ(ReplayImpactNs(early, {{1, 0, 60e3}}), 60e3);
  // Ranks in lockstep: this rank entered the first collective last (a slow kernel before it),
  // so everyone left it late, and the peers entered the second one late too. Cutting the slow
  // kernel moves the first collective's end and, through it, the peers' second entry: all
  // 300 us are saved although this rank was early at the second collective.
  ReplayItem first = ReplayOp(10, 20, 15, 400, 500);
  first.collective = true;
  ReplayItem second = ReplayOp(20, 30, 25, 500, 800);
  second.collective = true;
  second.peer_entry = 700000;  // the peers came 200 us after this rank; transfer 100 us
  StepGraph lockstep = Step(810, {ReplayOp(0, 10, 5, 10, 400), first, second, ReplayOp(30, 810, -1, 0, 0, /*wait=*/780)});
  EXPECT_DOUBLE_EQ(ReplayImpactNs(lockstep, {{0, 0, 300e3}}), 300e3);
  // The late rank: stalled 700 us on the host before entering; nothing bounds it.
  StepGraph late = Step(1010, {ReplayOp(0, 890, 885, 888, 889), ReplayOp(890, 900, 895, 900, 1000),
                               ReplayOp(900, 1010, -1, 0, 0, /*wait=*/100)});
  EXPECT_DOUBLE_EQ(ReplayImpactNs(late, {{0, 700e3, 0}}), 700e3);
}

// One anomaly seen on both ranks of a TP pair (a slow input copy on each): cut on this rank
// alone, the late peer still enters the all-reduce late and nothing is saved; with the peer's
// own replay of the same cut (peer_entry_shift) the peer enters earlier too, and the step
// saves what this rank's own work moved (it keeps its observed wait: conservative).
TEST(Replay, AnAnomalyBothRanksShareIsRemovedFromBoth) {
  // This rank: copy [10, 25] (10 us too long), all-reduce launched at 12, entered at 25, the
  // peer entered at 30, end 40; the host then waits for it.
  ReplayItem ar = ReplayOp(10, 12, 12, 25, 40);
  ar.collective = true;
  ar.peer_entry = 30000;
  StepGraph g = Step(41, {ReplayOp(0, 10, 9, 10, 25), ar, ReplayOp(12, 41, -1, 0, 0, /*wait=*/28)});
  EXPECT_DOUBLE_EQ(ReplayImpactNs(g, {{0, 0, 10e3}}), 0);
  // The peer: copy [10, 30] (15 us too long), then its all-reduce entered at 30.
  ReplayItem peer_ar = ReplayOp(10, 12, 12, 30, 40);
  peer_ar.collective = true;
  const StepGraph peer = Step(41, {ReplayOp(0, 10, 9, 10, 30), peer_ar, ReplayOp(12, 41, -1, 0, 0, /*wait=*/28)});
  const std::vector<double> shift = ReplayedDeviceShifts(peer, {{0, 0, 15e3}});
  ASSERT_EQ(shift.size(), 3u);
  EXPECT_DOUBLE_EQ(shift[0], 0);      // the copy itself starts where it did
  EXPECT_DOUBLE_EQ(shift[1], 15e3);   // the peer enters the all-reduce 15 us earlier
  EXPECT_DOUBLE_EQ(shift[2], 0);      // no device work
  g.items[1].peer_entry_shift = shift[1];
  // The peer now enters at 15; this rank's all-reduce starts at 15 and keeps its 15 us: 30.
  EXPECT_DOUBLE_EQ(ReplayImpactNs(g, {{0, 0, 10e3}}), 10e3);
  // Without this rank's own cut nothing of its own moved: nothing is saved.
  EXPECT_DOUBLE_EQ(ReplayImpactNs(g, {}), 0);
}

// A gap between steps judged as the host time at the start of the step: the device idled through
// it, so removing it saves it whole; when the previous step's work still filled the device
// queue (host ahead), it saves only what the queue did not cover.
TEST(Replay, GapBeforeTheStep) {
  StepGraph idle = Step(1100, {ReplayOp(0, 1000), ReplayOp(1000, 1100, 1050, 1055, 1095)});
  EXPECT_DOUBLE_EQ(ReplayImpactNs(idle, {{0, 1000e3, 0}}), 1000e3);
  // The previous step's work (here an item of this graph) ran until 1 ms; a sync waited on it.
  StepGraph busy = Step(1200, {ReplayOp(0, 0, 0, 0, 1000), ReplayOp(1, 700), ReplayOp(700, 1010, -1, 0, 0, /*wait=*/300),
                               ReplayOp(1010, 1200, 1100, 1105, 1190)});
  EXPECT_DOUBLE_EQ(ReplayImpactNs(busy, {{1, 700e3, 0}}), 0);
}

// A pause that starts exactly where a blocking operator ends (every gap between operators does):
// that operator's wait is over before the pause, so the pause is saved whole.
TEST(Replay, APauseRightAfterABlockingOperator) {
  StepGraph g = Step(400, {ReplayOp(0, 100, 10, 20, 90, /*wait=*/70), ReplayOp(100, 300),
                           ReplayOp(300, 400, 310, 320, 390, /*wait=*/60)});
  EXPECT_DOUBLE_EQ(ReplayImpactNs(g, {{1, 200e3, 0}}), 200e3);
}

// The time between steps, which every TP peer spent waiting for the same scheduler: cut on this
// rank alone, the peers would still enter the step's collective late and nothing would be saved;
// as a cost they shared (group_cost), their entry moves too and the whole pause is saved.
TEST(Replay, APauseEveryPeerSharedMovesThePeersToo) {
  ReplayItem pause = ReplayOp(-600, 0);
  ReplayItem ar = ReplayOp(100, 110, 105, 110, 200);
  ar.collective = true;
  ar.peer_entry = 112000;  // the peers entered 2 us after this rank, after the same pause
  StepGraph g = Step(210, {pause, ReplayOp(0, 100, 50, 55, 95), ar, ReplayOp(110, 210, -1, 0, 0, /*wait=*/90)});
  EXPECT_NEAR(ReplayImpactNs(g, {{0, 600e3, 0}}), 0, 1);
  g.items[0].group_cost = true;
  EXPECT_NEAR(ReplayImpactNs(g, {{0, 600e3, 0}}), 600e3, 1);
}

// After a host stall the device ran dry; the next kernel started 60 us after its launch (a slow
// launch path, not a queue): the device waited for the host, so the stall cost the step whole.
// A kernel launched long before the device ran dry that still started after a gap was held by
// something else (another stream's event): the stall before its launch does not move it.
TEST(Replay, WhatTheDeviceWaitedFor) {
  StepGraph slow_launch = Step(1200, {ReplayOp(0, 100, 90, 95, 100), ReplayOp(100, 1100), ReplayOp(1100, 1200, 1110, 1170, 1190)});
  EXPECT_DOUBLE_EQ(ReplayImpactNs(slow_launch, {{1, 1000e3, 0}}), 1000e3);
  StepGraph held = Step(1200, {ReplayOp(0, 10, 5, 10, 100), ReplayOp(10, 20, 15, 700, 1190), ReplayOp(20, 1200, -1, 0, 0, /*wait=*/1000)});
  EXPECT_DOUBLE_EQ(ReplayImpactNs(held, {{1, 5e3, 0}}), 0);
}

// A host stall of 100 us, then a blocking copy whose device end is stamped 0.5 us after its call
// returned (host and device clocks differ): the host waited for that copy, which moves with the
// stall, so cutting the stall saves all of it (not nothing, as when the copy looked unfinished).
TEST(Replay, ABlockingCopyStampedJustAfterItsCallReturned) {
  ReplayItem copy = ReplayOp(110, 120, 112, 113, 120, /*wait=*/5);
  copy.device_end = 120500;
  StepGraph g = Step(200, {ReplayOp(0, 10, 5, 8, 10), ReplayOp(10, 110), copy, ReplayOp(120, 200, 125, 130, 190)});
  EXPECT_EQ(ReplayedCompletion(g, {}), 200000);
  EXPECT_DOUBLE_EQ(ReplayImpactNs(g, {{1, 100e3, 0}}), 100e3);
}

// A CUDA graph's nodes, launched together at 10 us, run back to back; the host then waits for
// them. A slower node delays every node after it (they queued, however soon after the launch
// they started), so cutting it saves all of it.
TEST(Replay, GraphNodesQueueBehindEachOther) {
  StepGraph g = Step(220, {ReplayOp(0, 10, 10, 12, 20), ReplayOp(0, 0, 10, 20, 28), ReplayOp(0, 0, 10, 28, 200),
                           ReplayOp(10, 210, -1, 0, 0, /*wait=*/190), ReplayOp(210, 220)});
  EXPECT_DOUBLE_EQ(ReplayImpactNs(g, {{0, 0, 5e3}}), 5e3);
  EXPECT_DOUBLE_EQ(ReplayImpactNs(g, {{1, 0, 5e3}}), 5e3);
}

TEST(Replay, CutsBeyondTheGraphAreIgnored) {
  StepGraph g = Step(100, {ReplayOp(0, 100)});
  EXPECT_DOUBLE_EQ(ReplayImpactNs(g, {{7, 50e3, 0}}), 0);
  EXPECT_DOUBLE_EQ(ReplayImpactNs(g, {{0, 50e3, 0}}), 50e3);
}

}  // namespace
}  // namespace truffld::diagnose
