// Unit tests of RecordRing and RingRegistry: ordering, compact and full records and their bytes
// across the ring's end, drop-and-count when full, reuse, close reservations, rewind, budget
// tiers, fork reset.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "end_queue.h"
#include "record_ring.h"
#include "ring_registry.h"

namespace truffld::inject {
namespace {

Record Rec(RecordKind k, int64_t t, uint16_t name_len = 0) {
  Record r{};
  r.kind = k;
  r.t0 = t;
  r.name_len = name_len;
  return r;
}

// A record the ring stores in full (a domain makes it so); `Rec` ones of NVTX kinds are compact.
int g_domain;
Record FullRec(RecordKind k, int64_t t, uint16_t name_len = 0) {
  Record r = Rec(k, t, name_len);
  r.domain = &g_domain;
  return r;
}

// Drains `ring` on its own thread until Finish(): counts records and checks their order.
struct OrderedConsumer {
  explicit OrderedConsumer(RecordRing& ring) : thread([this, &ring] {
    std::string scratch;
    while (!done.load() || !ring.empty()) {
      ring.Drain([&](const Record& r, std::string_view) {
        if (r.t0 <= last) in_order = false;
        last = r.t0;
        ++consumed;
      }, scratch);
    }
  }) {}
  void Finish() {
    done = true;
    thread.join();
  }
  std::atomic<bool> done{false};
  uint64_t consumed = 0;
  int64_t last = -1;
  bool in_order = true;
  std::thread thread;  // last: starts after the fields above are set
};

TEST(RecordRing, DeliversRecordsInOrderWithTheirBytes) {
  RecordRing ring(64);
  std::string long_name(300, 'x');
  long_name[0] = 'A';
  long_name[299] = 'Z';
  Record a = Rec(RecordKind::kNvtxPush, 1, 5);
  Record b = Rec(RecordKind::kNvtxPush, 2, static_cast<uint16_t>(long_name.size()));
  Record c = Rec(RecordKind::kNvtxPop, 3);
  ASSERT_TRUE(ring.TryPush(a, "short", 5));
  ASSERT_TRUE(ring.TryPush(b, long_name.data(), long_name.size()));
  ASSERT_TRUE(ring.TryPush(c, nullptr, 0));
  std::vector<std::pair<int64_t, std::string>> got;
  std::string scratch;
  EXPECT_EQ(ring.Drain([&](const Record& r, std::string_view d) { got.emplace_back(r.t0, std::string(d)); }, scratch), 3u);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], (std::pair<int64_t, std::string>{1, "short"}));
  EXPECT_EQ(got[1].second, long_name);
  EXPECT_EQ(got[2].first, 3);
  EXPECT_TRUE(ring.empty());
}

TEST(RecordRing, FullRingDropsAndCountsInsteadOfBlocking) {
  RecordRing ring(64);  // 64 slots of 128 bytes: 512 units, a compact mark each
  ASSERT_EQ(ring.capacity_units(), 512u);
  int pushed = 0;
  for (int i = 0; i < 600; ++i) {
    Record r = Rec(RecordKind::kNvtxMark, i);
    if (ring.TryPush(r, nullptr, 0)) ++pushed; else ring.CountDrop(RecordKind::kNvtxMark);
  }
  EXPECT_EQ(pushed, 512);
  EXPECT_EQ(ring.dropped(RecordKind::kNvtxMark), 88u);
  EXPECT_EQ(ring.dropped(RecordKind::kNvtxPush), 0u);
  std::string scratch;
  EXPECT_EQ(ring.Drain([](const Record&, std::string_view) {}, scratch), 512u);
  Record r = Rec(RecordKind::kNvtxMark, 1000);
  EXPECT_TRUE(ring.TryPush(r, nullptr, 0)) << "space is reusable after a drain";
}

TEST(RecordRing, AsksForAnEarlyDrainOncePerDrainWhenAnEighthFull) {
  RecordRing ring(64);
  std::string scratch;
  for (int round = 0; round < 3; ++round) {
    int wakes = 0, first_wake = -1;
    for (int i = 0; i < 100; ++i) {
      Record r = Rec(RecordKind::kNvtxMark, i);
      const PushResult pr = ring.TryPush(r, nullptr, 0);
      ASSERT_NE(pr, kPushFull);
      if (pr == kPushOkWake) { ++wakes; if (first_wake < 0) first_wake = i; }
    }
    EXPECT_EQ(wakes, 1) << "round " << round;
    EXPECT_EQ(first_wake, 64) << "the 65th compact record passes an eighth of 512 units";
    ring.Drain([](const Record&, std::string_view) {}, scratch);
  }
}

TEST(RecordRing, CompactAndFullRecordsWrapAroundTheEnd) {
  RecordRing ring(64);  // 512 units
  std::string scratch;
  std::string name(200, 'q');  // compact: 14 units, full: 19; neither divides 512
  size_t seen = 0;
  for (int round = 0; round < 400; ++round) {
    name[round % 200] = static_cast<char>('a' + round % 26);
    const bool full = round % 3 == 0;
    const uint16_t len = static_cast<uint16_t>(round % 5 ? name.size() : 0);
    Record r = full ? FullRec(RecordKind::kNvtxPush, round, len) : Rec(RecordKind::kNvtxPush, round, len);
    r.tid = 7000 + round;
    ASSERT_TRUE(ring.TryPush(r, name.data(), len));
    ring.Drain([&](const Record& rec, std::string_view d) {
      EXPECT_EQ(rec.kind, RecordKind::kNvtxPush);
      EXPECT_EQ(rec.t0, round);
      EXPECT_EQ(rec.tid, static_cast<uint32_t>(7000 + round));
      EXPECT_EQ(rec.domain, full ? &g_domain : nullptr);
      EXPECT_EQ(rec.name_len, len);
      EXPECT_EQ(d, std::string_view(name).substr(0, len));
      ++seen;
    }, scratch);
  }
  EXPECT_EQ(seen, 400u);
}

TEST(RecordRing, PlainNvtxRecordsAreCompactOthersFull) {
  Record push = Rec(RecordKind::kNvtxPush, 1, 20), pop = Rec(RecordKind::kNvtxPop, 2);
  EXPECT_TRUE(RecordRing::IsCompact(push, 0));
  EXPECT_TRUE(RecordRing::IsCompact(pop, 0));
  EXPECT_FALSE(RecordRing::IsCompact(pop, 8)) << "a payload";
  EXPECT_FALSE(RecordRing::IsCompact(FullRec(RecordKind::kNvtxPop, 2), 0)) << "a domain";
  EXPECT_FALSE(RecordRing::IsCompact(Rec(RecordKind::kNvtxStart, 1), 0));
  EXPECT_FALSE(RecordRing::IsCompact(Rec(RecordKind::kRuntime, 1), 0));
  Record colored = push;
  colored.flags = kFlagHasColor;
  EXPECT_FALSE(RecordRing::IsCompact(colored, 0));
  Record registered = push;
  registered.name_ref = "registered";
  EXPECT_FALSE(RecordRing::IsCompact(registered, 0));
  // A pop in one unit, "aten::mm, op_id = 42" pushed in three; a full pop in six.
  EXPECT_EQ(RingUnitsFor(true, 0), 1u);
  EXPECT_EQ(RingUnitsFor(true, 20), 3u);
  EXPECT_EQ(RingUnitsFor(false, 0), kCloseUnits);
  EXPECT_EQ(RingUnitsFor(false, 1), 7u);
}

TEST(RecordRing, ConcurrentProducerAndConsumerLoseNothingUncounted) {
  RecordRing ring(256);
  constexpr int kN = 200000;
  OrderedConsumer consumer(ring);
  for (int i = 0; i < kN; ++i) {
    Record r = Rec(RecordKind::kNvtxPush, i);
    if (!ring.TryPush(r, nullptr, 0)) ring.CountDrop(RecordKind::kNvtxPush);
  }
  consumer.Finish();
  EXPECT_TRUE(consumer.in_order);
  EXPECT_EQ(consumer.consumed + ring.dropped(RecordKind::kNvtxPush), static_cast<uint64_t>(kN));
}

TEST(RingRegistry, ReusesRingsOfExitedThreadsAndRespectsTheBudget) {
  RingRegistry reg(64, 64, 2 * 64 * kSlotBytes);
  RecordRing* a = reg.Acquire();
  RecordRing* b = reg.Acquire();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(reg.Acquire(), nullptr) << "budget of two rings";
  reg.CountNoRing(RecordKind::kNvtxPush);
  EXPECT_EQ(reg.no_ring_dropped(RecordKind::kNvtxPush), 1u);
  Record r = Rec(RecordKind::kNvtxMark, 1);
  ASSERT_TRUE(a->TryPush(r, nullptr, 0));
  reg.Release(a);
  EXPECT_EQ(reg.Acquire(), nullptr) << "not reused before its records are drained";
  std::string scratch;
  a->Drain([](const Record&, std::string_view) {}, scratch);
  EXPECT_EQ(reg.Acquire(), a);
}

TEST(RingRegistry, ResetForChildEmptiesRingsAndCounts) {
  RingRegistry reg(64, 64, 4 * 64 * kSlotBytes);
  RecordRing* a = reg.Acquire();
  Record r = Rec(RecordKind::kNvtxMark, 1);
  ASSERT_TRUE(a->TryPush(r, nullptr, 0));
  a->CountDrop(RecordKind::kNvtxMark);
  reg.LockForFork();
  reg.UnlockForFork();
  reg.ResetForChild();
  EXPECT_TRUE(a->empty());
  EXPECT_EQ(a->dropped(RecordKind::kNvtxMark), 0u);
}

TEST(RingRegistry, LargeRingsUpToHalfTheBudgetThenSmallOnes) {
  // Budget 8 large-ring sizes: large rings while they hold at most half of it (4), then small
  // rings (an eighth of a large one) from the other half (32 of them), then none.
  constexpr size_t kLarge = 1024, kSmall = 128;
  RingRegistry reg(kLarge, kSmall, 8 * kLarge * kSlotBytes, 64);
  std::vector<size_t> sizes;
  while (RecordRing* r = reg.Acquire()) sizes.push_back(r->capacity_slots());
  ASSERT_EQ(sizes.size(), 4u + 32u);
  for (size_t i = 0; i < sizes.size(); ++i) EXPECT_EQ(sizes[i], i < 4 ? kLarge : kSmall) << i;
  EXPECT_EQ(reg.bytes_reserved(), 8 * kLarge * kSlotBytes);
}

TEST(RecordRing, TwoPiecesAreJoinedAcrossSlots) {
  RecordRing ring(64);
  const std::string name(100, 'n'), payload(70, 'p');
  Record r = Rec(RecordKind::kNvtxPush, 1, static_cast<uint16_t>(name.size()));
  r.payload_len = static_cast<uint16_t>(payload.size());
  ASSERT_TRUE(ring.TryPush(r, name.data(), name.size(), payload.data(), payload.size()));
  std::string got, scratch;
  ring.Drain([&](const Record&, std::string_view d) { got = d; }, scratch);
  EXPECT_EQ(got, name + payload);
}

// Fills `ring` with marks until one is refused; returns how many went in.
int FillWithMarks(RecordRing& ring) {
  int n = 0;
  for (;; ++n) {
    Record m = Rec(RecordKind::kNvtxMark, n);
    if (!ring.TryPush(m, nullptr, 0)) return n;
  }
}

TEST(RecordRing, AWrittenPushAlwaysFindsRoomForItsPop) {
  RecordRing ring(64);  // 512 units
  // Ten nested compact pushes (a unit each) reserve room for ten full pops (kCloseUnits each):
  // compact marks fill the other 442 units, then everything but the pops is refused, and the
  // ten pops go in, even as full records (the largest a bare pop can be).
  for (int i = 0; i < 10; ++i) {
    Record p = Rec(RecordKind::kNvtxPush, i);
    ASSERT_TRUE(ring.TryPush(p, nullptr, 0, nullptr, 0, Reserve::kOpen));
  }
  EXPECT_EQ(ring.reserved_pops(), 10u);
  EXPECT_EQ(FillWithMarks(ring), static_cast<int>(512 - 10 - 10 * kCloseUnits));
  Record another = Rec(RecordKind::kNvtxPush, 99);
  EXPECT_FALSE(ring.TryPush(another, nullptr, 0, nullptr, 0, Reserve::kOpen));
  for (int i = 0; i < 10; ++i) {
    Record pop = FullRec(RecordKind::kNvtxPop, 100 + i);
    EXPECT_TRUE(ring.TryPush(pop, nullptr, 0, nullptr, 0, Reserve::kClose)) << i;
  }
  EXPECT_EQ(ring.reserved_pops(), 0u);
  Record late = Rec(RecordKind::kNvtxPop, 200);
  EXPECT_FALSE(ring.TryPush(late, nullptr, 0, nullptr, 0, Reserve::kClose)) << "no slot was left";
}

TEST(RecordRing, RewindsToItsFirstSlotsSoBurstsAloneTouchTheRest) {
  RecordRing ring(1024, 64);  // 64 hot slots
  std::string scratch;
  const std::string name(150, 'r');  // 11 units each (compact)
  int64_t next = 0, seen = 0;
  bool in_order = true;
  auto drain = [&] {
    ring.Drain([&](const Record& r, std::string_view d) {
      in_order = in_order && r.t0 == seen && (r.name_len == 0 || d == name);
      ++seen;
    }, scratch);
  };
  // A slow producer: a few records, drained, many times over; a burst of 1800 units in between.
  for (int round = 0; round < 300; ++round) {
    const int n = round == 150 ? 300 : 7;
    for (int i = 0; i < n; ++i) {
      Record r = Rec(RecordKind::kNvtxPush, next++, static_cast<uint16_t>(i % 2 ? name.size() : 0));
      ASSERT_TRUE(ring.TryPush(r, name.data(), r.name_len)) << round;
    }
    drain();
  }
  EXPECT_TRUE(in_order);
  EXPECT_EQ(seen, next);
  // The first push past the hot units (512) that finds the ring empty rewinds: about 12,900
  // units written here, one rewind per ~550 (the hot units and a round), 21 when this was
  // written; without rewinds there are none.
  EXPECT_GE(ring.rewinds(), 18u) << "passes beyond the hot units go back to the start";
}

TEST(RecordRing, RewindsRaceNothingWithAConcurrentConsumer) {
  RecordRing ring(1024, 64);
  constexpr int kN = 300000;
  OrderedConsumer consumer(ring);
  for (int i = 0; i < kN; ++i) {
    Record r = Rec(RecordKind::kNvtxPush, i);
    if (!ring.TryPush(r, nullptr, 0)) ring.CountDrop(RecordKind::kNvtxPush);
    // Now and then 32 records each pushed into an emptied ring: one of them meets a rewind
    // check with the ring empty. In between, bursts race the consumer.
    if (i % 2000 < 32) while (!ring.empty()) std::this_thread::yield();
  }
  consumer.Finish();
  EXPECT_TRUE(consumer.in_order);
  EXPECT_EQ(consumer.consumed + ring.dropped(RecordKind::kNvtxPush), static_cast<uint64_t>(kN));
  EXPECT_GT(ring.rewinds(), 0u);
}

TEST(EndQueue, ManyProducersOneConsumerEveryEndOnceUpToCapacity) {
  EndQueue q(1000);  // rounded to 1024
  ASSERT_EQ(q.capacity(), 1024u);
  constexpr int kThreads = 4, kEach = 256;  // exactly the capacity
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&q, t] {
      for (int i = 0; i < kEach; ++i) {
        QueuedEnd e;
        e.id = static_cast<uint64_t>(t * kEach + i);
        EXPECT_TRUE(q.Push(e));
      }
    });
  }
  for (auto& th : ts) th.join();
  EXPECT_FALSE(q.Push(QueuedEnd{})) << "full";
  std::vector<int> seen(kThreads * kEach, 0);
  QueuedEnd e;
  while (q.Pop(&e)) ++seen[e.id];
  for (int n : seen) EXPECT_EQ(n, 1);
  EXPECT_TRUE(q.Push(QueuedEnd{})) << "room again after the consumer took everything";
}

}  // namespace
}  // namespace truffld::inject
