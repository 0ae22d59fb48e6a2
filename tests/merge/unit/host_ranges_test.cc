// Range reconstruction: push/pop stacks, start/end ids across threads, and the counted cases.
#include "truffld/merge/host_ranges.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "merge_test_util.h"

namespace truffld::merge {
namespace {

using testing::FileFromLines;

std::string Push(const char* name, int ts, int tid = 1) {
  return "{\"type\":\"NVTX_PUSH\",\"name\":\"" + std::string(name) + "\",\"timestamp\":" + std::to_string(ts) +
         ",\"process_id\":1,\"thread_id\":" + std::to_string(tid) + "}\n";
}
std::string Pop(int ts, int tid = 1) {
  return "{\"type\":\"NVTX_POP\",\"timestamp\":" + std::to_string(ts) + ",\"process_id\":1,\"thread_id\":" +
         std::to_string(tid) + "}\n";
}

std::vector<HostRange> Sorted(std::vector<HostRange> v) {
  std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.start != b.start ? a.start < b.start : a.end > b.end; });
  return v;
}

TEST(HostRanges, PushPopNestsPerThreadInTimeOrder) {
  // Written out of time order and interleaved across threads: readers sort.
  TraceFile f = FileFromLines(Pop(50) + Push("outer", 10) + Push("t2", 15, 2) + Push("inner", 20) + Pop(30) +
                              Pop(40, 2));
  RangeCounters c;
  auto r = Sorted(BuildHostRanges(f, &c, &f.stats));
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].start, 10); EXPECT_EQ(r[0].end, 50);
  EXPECT_EQ(r[1].start, 15); EXPECT_EQ(r[1].end, 40); EXPECT_EQ(r[1].thread_id, 2);
  EXPECT_EQ(r[2].start, 20); EXPECT_EQ(r[2].end, 30);
  EXPECT_EQ(c.unmatched_pops + c.unclosed_ranges, 0u);
}

TEST(HostRanges, UnmatchedPopAndUnclosedPushAreCounted) {
  TraceFile f = FileFromLines(Pop(5) + Push("never closed", 10) + Push("ok", 12) + Pop(14) +
                              "{\"type\":\"RUNTIME\",\"name\":\"c\",\"start\":90,\"end\":99,\"correlation_id\":1,\"process_id\":1,\"thread_id\":1}\n");
  RangeCounters c;
  auto r = Sorted(BuildHostRanges(f, &c, &f.stats));
  EXPECT_EQ(c.unmatched_pops, 1u);
  EXPECT_EQ(c.unclosed_ranges, 1u);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].unclosed);
  EXPECT_EQ(r[0].end, 99);  // closed at the file's last timestamp
  EXPECT_EQ(f.stats.Get("unmatched_pop"), 1u);
  EXPECT_EQ(f.stats.issues[0].where, "mem.jsonl:1");
}

TEST(HostRanges, StartEndCrossThreadsAndZeroLength) {
  TraceFile f = FileFromLines(
      "{\"type\":\"NVTX_START\",\"id\":7,\"name\":\"req\",\"timestamp\":10,\"process_id\":1,\"thread_id\":1}\n"
      "{\"type\":\"NVTX_END\",\"id\":7,\"timestamp\":30,\"process_id\":1,\"thread_id\":2}\n"
      "{\"type\":\"NVTX_END\",\"id\":8,\"timestamp\":31,\"process_id\":1,\"thread_id\":2}\n" +
      Push("zero", 40) + Pop(40));
  RangeCounters c;
  auto r = Sorted(BuildHostRanges(f, &c, &f.stats));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].start, 10); EXPECT_EQ(r[0].end, 30); EXPECT_EQ(r[0].thread_id, 1);
  EXPECT_EQ(c.unmatched_pops, 1u);
  EXPECT_EQ(c.zero_length_ranges, 1u);
}

TEST(HostRanges, EqualTimestampsKeepFileOrder) {
  // push a, push b, pop, pop all at t=5: b nests in a, both zero length, no loss.
  TraceFile f = FileFromLines(Push("a", 5) + Push("b", 5) + Pop(5) + Pop(5));
  RangeCounters c;
  auto r = BuildHostRanges(f, &c, &f.stats);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(f.strings.Get(f.events[r[0].event].name), "b");
  EXPECT_EQ(c.unmatched_pops, 0u);
}

}  // namespace
}  // namespace truffld::merge
