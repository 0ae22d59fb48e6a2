// Range reconstruction: push/pop stacks, start/end ids across threads, and the counted cases.
#include "core/host_ranges.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <random>
#include <tuple>

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
  EXPECT_EQ(r[1].start, 15); EXPECT_EQ(r[1].end, 40); EXPECT_EQ(f.threads[r[1].thread].thread_id, 2);
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
  EXPECT_EQ(f.strings.Get(f.events[r[0].event].name), "never closed");
  EXPECT_EQ(r[0].end, 99);  // closed at the file's last timestamp
  EXPECT_EQ(r[1].end, 14);
  EXPECT_EQ(f.stats.Get(Problem::kUnmatchedPop), 1u);
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
  EXPECT_EQ(r[0].start, 10); EXPECT_EQ(r[0].end, 30); EXPECT_EQ(f.threads[r[0].thread].thread_id, 1);
  EXPECT_EQ(c.unmatched_pops, 1u);
  EXPECT_EQ(c.zero_length_ranges, 1u);
}

TEST(HostRanges, EqualTimestampsKeepFileOrder) {
  // push a, push b, pop, pop all at t=5: b nests in a, both zero length, no loss.
  TraceFile f = FileFromLines(Push("a", 5) + Push("b", 5) + Pop(5) + Pop(5));
  RangeCounters c;
  auto r = BuildHostRanges(f, &c, &f.stats);
  ASSERT_EQ(r.size(), 2u);
  // Ranges come out in push order (outer first), each closed by its own pop.
  EXPECT_EQ(f.strings.Get(f.events[r[0].event].name), "a");
  EXPECT_EQ(f.strings.Get(f.events[r[1].event].name), "b");
  EXPECT_EQ(c.unmatched_pops, 0u);
  // Which pop closes which push shows where the pops carry payloads: b gets the first pop's.
  TraceFile g = FileFromLines(Push("a", 5) + Push("b", 5) +
                              "{\"type\":\"NVTX_POP\",\"timestamp\":5,\"payload\":{\"first\":1},\"process_id\":1,\"thread_id\":1}\n"
                              "{\"type\":\"NVTX_POP\",\"timestamp\":5,\"payload\":{\"second\":2},\"process_id\":1,\"thread_id\":1}\n");
  std::vector<RangeClose> closes;
  auto rg = BuildHostRanges(g, &c, &g.stats, &closes);
  ASSERT_EQ(closes.size(), 2u);  // in range order: a (closed by the second pop), then b
  EXPECT_EQ(closes[0].range, 0u); EXPECT_EQ(closes[0].open_event, 0u); EXPECT_EQ(closes[0].close_event, 3u);
  EXPECT_EQ(closes[1].range, 1u); EXPECT_EQ(closes[1].open_event, 1u); EXPECT_EQ(closes[1].close_event, 2u);
  EXPECT_EQ(rg[closes[0].range].event, closes[0].open_event);
}

TEST(HostRanges, ThreadChunksInAnyFileOrderGiveTheSameRanges) {
  // Random well-nested push/pop sequences on 3 processes x 4 threads, written (a) in global time
  // order and (b) in per-thread chunks of random size, interleaved in random order, with some
  // chunks internally reversed. Both files must give the same ranges.
  std::mt19937 rng(7);
  struct Rec { int ts; int pid; int tid; bool push; };
  std::vector<std::vector<Rec>> threads;
  int ts = 1;
  for (int p = 1; p <= 3; ++p)
    for (int t = 1; t <= 4; ++t) {
      std::vector<Rec> v;
      int depth = 0;
      for (int k = 0; k < 200; ++k) {
        bool push = depth == 0 || (depth < 6 && rng() % 2);
        depth += push ? 1 : -1;
        v.push_back({ts += 1 + int(rng() % 3), p, t, push});
      }
      while (depth-- > 0) v.push_back({ts += 1, p, t, false});
      threads.push_back(v);
    }
  auto line = [](const Rec& r) {
    std::string pid = std::to_string(r.pid), tid = std::to_string(r.tid), t = std::to_string(r.ts);
    return r.push ? "{\"type\":\"NVTX_PUSH\",\"name\":\"r" + t + "\",\"timestamp\":" + t + ",\"process_id\":" + pid +
                        ",\"thread_id\":" + tid + "}\n"
                  : "{\"type\":\"NVTX_POP\",\"timestamp\":" + t + ",\"process_id\":" + pid + ",\"thread_id\":" + tid + "}\n";
  };
  std::vector<Rec> all;
  for (auto& v : threads) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end(), [](const Rec& a, const Rec& b) { return a.ts < b.ts; });
  std::string in_time;
  for (auto& r : all) in_time += line(r);
  std::vector<std::vector<Rec>> chunks;
  for (auto& v : threads)
    for (size_t i = 0; i < v.size();) {
      size_t n = std::min(v.size() - i, size_t(1 + rng() % 40));
      chunks.emplace_back(v.begin() + long(i), v.begin() + long(i + n));
      if (rng() % 4 == 0) std::reverse(chunks.back().begin(), chunks.back().end());
      i += n;
    }
  std::shuffle(chunks.begin(), chunks.end(), rng);
  std::string chunked;
  for (auto& c : chunks)
    for (auto& r : c) chunked += line(r);
  auto ranges = [](const std::string& text) {
    TraceFile f = FileFromLines(text);
    RangeCounters c;
    std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t, std::string>> out;
    for (const HostRange& r : BuildHostRanges(f, &c, &f.stats))
      out.emplace_back(f.threads[r.thread].process_id, f.threads[r.thread].thread_id, r.start, r.end, std::string(f.strings.Get(f.events[r.event].name)));
    std::sort(out.begin(), out.end());
    EXPECT_EQ(c.unmatched_pops + c.unclosed_ranges, 0u);
    return out;
  };
  auto a = ranges(in_time), b = ranges(chunked);
  size_t pushes = std::count_if(all.begin(), all.end(), [](const Rec& r) { return r.push; });
  EXPECT_EQ(a.size(), pushes);  // every push closed exactly once
  EXPECT_EQ(a, b);
}

TEST(HostRanges, ClosingPayloadsJoinTheRange) {
  // NCCL: push "ncclCommInitRank" bare, pop with {comm, nranks}; push with a payload, pop with
  // one overlapping key (the opening value wins); a start/end pair across threads.
  TraceFile f = FileFromLines(
      Push("ncclCommInitRank", 10) +
      "{\"type\":\"NVTX_POP\",\"timestamp\":20,\"payload\":{\"comm\":77,\"nranks\":8},\"process_id\":1,\"thread_id\":1}\n"
      "{\"type\":\"NVTX_PUSH\",\"name\":\"ncclCommDestroy\",\"timestamp\":30,\"payload\":{\"comm\":77},\"process_id\":1,\"thread_id\":1}\n"
      "{\"type\":\"NVTX_POP\",\"timestamp\":40,\"payload\":{\"comm\":99,\"rank\":5},\"process_id\":1,\"thread_id\":1}\n"
      "{\"type\":\"NVTX_START\",\"id\":3,\"name\":\"s\",\"timestamp\":50,\"payload\":{\"value\":1},\"process_id\":1,\"thread_id\":1}\n"
      "{\"type\":\"NVTX_END\",\"id\":3,\"timestamp\":60,\"payload\":{\"value\":2,\"x\":3},\"process_id\":1,\"thread_id\":2}\n" +
      Push("plain", 70) + Pop(80));
  RangeCounters c;
  std::vector<RangeClose> closes;
  auto r = Sorted(BuildHostRanges(f, &c, &f.stats, &closes));
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(closes.size(), 3u);  // the plain pop carries nothing
  const std::vector<JoinedPayload> joined = JoinClosingPayloads(closes, f, &f.strings);
  EXPECT_EQ(joined.size(), 3u);
  auto payload = [&](size_t i) {  // the joined payload of range i (none: "")
    for (const JoinedPayload& j : joined)
      if (j.event == r[i].event) return std::string(f.strings.Get(j.payload));
    return std::string();
  };
  EXPECT_EQ(nlohmann::json::parse(payload(0)), nlohmann::json::parse(R"({"comm":77,"nranks":8})"));
  EXPECT_EQ(nlohmann::json::parse(payload(1)), nlohmann::json::parse(R"({"comm":77,"rank":5})"));
  EXPECT_EQ(nlohmann::json::parse(payload(2)), nlohmann::json::parse(R"({"value":1,"x":3})"));
  EXPECT_EQ(payload(3), "");
  EXPECT_EQ(c.unmatched_pops + c.unclosed_ranges, 0u);
}

// Two pushes carry the same payload, so the importer shares one extras record between them;
// only the first is closed with a payload. The join is the pass's output: no event changes.
TEST(HostRanges, JoiningAPayloadLeavesEventsSharingItAlone) {
  TraceFile f = FileFromLines(
      "{\"type\":\"NVTX_PUSH\",\"name\":\"a\",\"timestamp\":10,\"payload\":{\"comm\":7},\"process_id\":1,\"thread_id\":1}\n"
      "{\"type\":\"NVTX_POP\",\"timestamp\":20,\"payload\":{\"rank\":5},\"process_id\":1,\"thread_id\":1}\n"
      "{\"type\":\"NVTX_PUSH\",\"name\":\"b\",\"timestamp\":30,\"payload\":{\"comm\":7},\"process_id\":1,\"thread_id\":1}\n" +
      Pop(40));
  ASSERT_EQ(f.events.size(), 4u);
  ASSERT_NE(f.events[0].extra, kNoExtra);
  EXPECT_EQ(f.events[0].extra, f.events[2].extra);  // shared
  RangeCounters c;
  std::vector<RangeClose> closes;
  auto r = Sorted(BuildHostRanges(f, &c, &f.stats, &closes));
  ASSERT_EQ(r.size(), 2u);
  const std::vector<JoinedPayload> joined = JoinClosingPayloads(closes, f, &f.strings);
  ASSERT_EQ(joined.size(), 1u);
  EXPECT_EQ(joined[0].event, 0u);
  EXPECT_EQ(nlohmann::json::parse(f.strings.Get(joined[0].payload)), nlohmann::json::parse(R"({"comm":7,"rank":5})"));
  // The events, and the extras record both pushes share, are not changed.
  auto payload = [&](size_t ev) { return nlohmann::json::parse(f.strings.Get(f.Extra(f.events[ev]).payload)); };
  EXPECT_EQ(payload(0), nlohmann::json::parse(R"({"comm":7})"));
  EXPECT_EQ(payload(2), nlohmann::json::parse(R"({"comm":7})"));
}

}  // namespace
}  // namespace truffld::merge
