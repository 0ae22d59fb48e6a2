// Folding NVTX_POP records into their push while reading (RawLineParser::set_fold_push_pop,
// ImportOptions::fold_push_pop): what the parser folds and keeps, and that a folded read merges
// to exactly the same trees, trace and counters as an unfolded one, also on files whose threads
// step back in time (which makes the importer read the file again without folding).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "../../common/test_files.h"
#include "merge_test_util.h"
#include "core/host_ranges.h"
#include "truffld/merge/import.h"
#include "truffld/merge/pipeline.h"
#include "truffld/merge/writers.h"

namespace truffld::merge {
namespace {


std::string Push(const std::string& name, int64_t ts, int tid = 1) {
  return "{\"type\":\"NVTX_PUSH\",\"name\":\"" + name + "\",\"timestamp\":" + std::to_string(ts) +
         ",\"process_id\":1,\"thread_id\":" + std::to_string(tid) + ",\"domain\":\"d\"}\n";
}
std::string Pop(int64_t ts, int tid = 1, const std::string& payload = "") {
  return "{\"type\":\"NVTX_POP\",\"timestamp\":" + std::to_string(ts) + ",\"process_id\":1,\"thread_id\":" +
         std::to_string(tid) + (payload.empty() ? "" : ",\"payload\":" + payload) + "}\n";
}

TraceFile Parse(const std::string& text, bool fold, bool* conflict = nullptr) {
  TraceFile f;
  f.meta.path = "mem.jsonl";
  RawLineParser p(&f, "mem.jsonl");
  p.set_fold_push_pop(fold);
  std::istringstream in(text);
  std::string line;
  uint64_t n = 0;
  while (std::getline(in, line)) p.ParseLine(line, ++n);
  if (conflict) *conflict = p.fold_conflict();
  return f;
}

TEST(FoldPushPop, InOrderPopsFoldIntoTheirPushes) {
  // outer [10, 50] holding inner [20, 30]; then a and b at t=60, b inside a (file order).
  bool conflict = true;
  TraceFile f = Parse(Push("outer", 10) + Push("inner", 20) + Pop(30) + Pop(50) + Push("a", 60) + Push("b", 60) +
                          Pop(60) + Pop(60),
                      true, &conflict);
  EXPECT_FALSE(conflict);
  ASSERT_EQ(f.events.size(), 4u);
  EXPECT_EQ(f.folded_pops, 4u);
  const int64_t ends[] = {50, 30, 60, 60};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(f.events[i].kind, EventKind::kNvtxRange) << i;
    EXPECT_EQ(f.events[i].end, ends[i]) << i;
  }
  EXPECT_EQ(f.LineOf(1), 2u);  // the push's own line
  // Off (the parser's default): every record is stored.
  TraceFile plain = Parse(Push("outer", 10) + Pop(50), false);
  ASSERT_EQ(plain.events.size(), 2u);
  EXPECT_EQ(plain.events[0].kind, EventKind::kNvtxPush);
  EXPECT_EQ(plain.folded_pops, 0u);
}

TEST(FoldPushPop, PayloadPopsUnmatchedPopsAndOpenPushesAreStored) {
  TraceFile f = Parse(Pop(5) + Push("never closed", 10) + Push("comm", 12) + Pop(14, 1, "{\"bytes\":8}") +
                          Push("ok", 15) + Pop(16),
                      true);
  // stored: the unmatched pop, the open push, the push and pop of the payload pair, ok (folded)
  ASSERT_EQ(f.events.size(), 5u);
  EXPECT_EQ(f.events[0].kind, EventKind::kNvtxPop);
  EXPECT_EQ(f.events[1].kind, EventKind::kNvtxPush);
  EXPECT_EQ(f.events[2].kind, EventKind::kNvtxPush);
  EXPECT_EQ(f.events[3].kind, EventKind::kNvtxPop);
  EXPECT_EQ(f.events[4].kind, EventKind::kNvtxRange);
  EXPECT_EQ(f.folded_pops, 1u);
  // Range reconstruction pairs what was stored as before, the payload joins its push.
  RangeCounters c;
  std::vector<RangeClose> closes;
  auto r = BuildHostRanges(f, &c, &f.stats, &closes);
  EXPECT_EQ(c.unmatched_pops, 1u);
  EXPECT_EQ(c.unclosed_ranges, 1u);
  ASSERT_EQ(r.size(), 3u);
  ASSERT_EQ(closes.size(), 1u);
  EXPECT_EQ(closes[0].range, 1u);
  EXPECT_EQ(closes[0].close_event, 3u);
  EXPECT_EQ(r[2].end, 16);
  EXPECT_EQ(JoinClosingPayloads(closes, f, &f.strings).size(), 1u);
}

TEST(FoldPushPop, AThreadSteppingBackStopsFoldingOrConflicts) {
  // Thread 2 steps back before it folded anything: it just stops folding. Thread 1 steps back
  // after a fold: the read is marked as a conflict.
  bool conflict = true;
  TraceFile f = Parse(Push("x", 20, 2) + Push("y", 10, 2) + Pop(30, 2) + Pop(40, 2) + Push("a", 1) + Pop(2), true,
                      &conflict);
  EXPECT_FALSE(conflict);
  EXPECT_EQ(f.folded_pops, 1u);  // only thread 1's
  EXPECT_EQ(f.events.size(), 5u);
  Parse(Push("a", 10) + Pop(20) + Push("b", 15) + Pop(30), true, &conflict);
  EXPECT_TRUE(conflict);
}

// A random dump: per thread, steps (with request ids) holding random nests of ranges, runtime
// calls with kernels, payload pops; unmatched pops, ranges left open at the end, equal
// timestamps. `disorder`: some threads' records are written in shuffled chunks.
std::string RandomDump(uint32_t seed, bool disorder) {
  std::mt19937 rng(seed);
  std::string out = "{\"type\":\"META\",\"host\":\"h\",\"process_id\":1,\"rank\":0,\"clock\":\"realtime\"}\n";
  std::vector<std::vector<std::string>> per_thread;
  int corr = 0;
  for (int tid = 1; tid <= 3; ++tid) {
    std::vector<std::string> lines;
    int64_t ts = 1000;
    auto tick = [&] { return ts += int64_t(rng() % 3); };  // 0: equal timestamps
    if (rng() % 2) lines.push_back(Pop(tick(), tid));     // unmatched
    for (int step = 0; step < 4; ++step) {
      std::string ids = std::to_string(step * 3) + "_" + std::to_string(step * 3 + 1);
      lines.push_back(Push("step_execute_model[request_ids:" + ids + "]", tick(), tid));
      int depth = 0;
      for (int k = 0; k < 30; ++k) {
        const unsigned roll = rng() % 10;
        if (roll < 4 && depth < 5) {
          lines.push_back(Push(roll == 0 ? "nccl:all_reduce" : "aten::mm", tick(), tid));
          ++depth;
        } else if (roll < 7 && depth > 0) {
          lines.push_back(Pop(tick(), tid, rng() % 6 == 0 ? "{\"k\":" + std::to_string(k) + "}" : ""));
          --depth;
        } else {
          ++corr;
          const int64_t s = tick(), e = s + 1 + int64_t(rng() % 4);
          const std::string c = std::to_string(corr);
          lines.push_back("{\"type\":\"RUNTIME\",\"name\":\"cudaLaunchKernel\",\"cbid\":211,\"start\":" + std::to_string(s) +
                          ",\"end\":" + std::to_string(e) + ",\"correlation_id\":" + c +
                          ",\"process_id\":1,\"thread_id\":" + std::to_string(tid) + "}\n");
          lines.push_back("{\"type\":\"KERNEL\",\"name\":\"k\",\"gpu_start\":" + std::to_string(e + 2) + ",\"gpu_end\":" +
                          std::to_string(e + 5) + ",\"correlation_id\":" + c + ",\"device\":0,\"stream\":7}\n");
          ts = e;
        }
      }
      while (depth-- > 0) lines.push_back(Pop(tick(), tid));
      if (step < 3 || rng() % 2) lines.push_back(Pop(tick(), tid));  // the last step may stay open
    }
    per_thread.push_back(std::move(lines));
  }
  std::vector<std::vector<std::vector<std::string>>> chunks(per_thread.size());  // per thread, in order
  for (size_t t = 0; t < per_thread.size(); ++t)
    for (size_t i = 0; i < per_thread[t].size();) {
      const size_t n = std::min(per_thread[t].size() - i, size_t(1 + rng() % 12));
      chunks[t].emplace_back(per_thread[t].begin() + long(i), per_thread[t].begin() + long(i + n));
      i += n;
    }
  // Threads interleaved chunk by chunk, each thread's chunks in order; disorder: shuffled too.
  std::vector<std::vector<std::string>> order;
  std::vector<size_t> next(chunks.size(), 0);
  for (size_t left = 0; ; left = 0) {
    for (size_t t = 0; t < chunks.size(); ++t) left += chunks[t].size() - next[t];
    if (!left) break;
    size_t t = rng() % chunks.size();
    while (next[t] == chunks[t].size()) t = (t + 1) % chunks.size();
    order.push_back(chunks[t][next[t]++]);
  }
  if (disorder) std::shuffle(order.begin(), order.end(), rng);
  for (auto& c : order)
    for (auto& l : c) out += l;
  return out;
}

class FoldMergeTest : public truffld::testing::TempDirTest {
 protected:
  // Trees, trace and the summary's counters of one merge of `path`.
  std::string MergeText(const std::string& path, bool fold, uint64_t* folded, uint64_t* retried) {
    ImportOptions io;
    io.fold_push_pop = fold;
    auto tf = ImportFile(path, io);
    EXPECT_TRUE(tf.ok());
    if (!tf.ok()) return "";
    *folded = tf->folded_pops;
    *retried = tf->stats.Get(Problem::kFoldRetried);
    std::vector<TraceFile> files;
    files.push_back(std::move(*tf));
    auto r = Merge(std::move(files), {});
    EXPECT_TRUE(r.ok());
    if (!r.ok()) return "";
    JsonOut trees, trace, summary;
    WriteTreesJsonl(*r, &trees);
    WriteChromeTrace(*r, &trace);
    RunInfo run;
    WriteSummaryJson(*r, run, &summary);
    // The per-file ingest table is the only place the two reads may differ (fold_retried).
    nlohmann::json s = nlohmann::json::parse(summary.text());
    for (auto& f : s["files"]) f["ingest"].erase("fold_retried");
    return trees.text() + "\n--\n" + trace.text() + "\n--\n" + s.dump(1);
  }
  // Not EXPECT_EQ: the texts run to tens of kilobytes.
  static void ExpectSame(const std::string& plain, const std::string& folded, const std::string& what) {
    const size_t at = size_t(std::mismatch(plain.begin(), plain.end(), folded.begin(), folded.end()).first - plain.begin());
    EXPECT_TRUE(plain == folded) << what << ": first difference at byte " << at << " of " << plain.size() << ": ..."
                                 << plain.substr(at < 200 ? 0 : at - 200, 400);
  }
};

using truffld::testing::Gzip;

std::string Rec(const std::string& type, const std::string& fields) { return "{\"type\":\"" + type + "\"," + fields + "}\n"; }

TEST_F(FoldMergeTest, ThreadsThatStopFoldingAndMixedRecordsMergeIdentically) {
  const std::string p1t1 = ",\"process_id\":1,\"thread_id\":1";
  const std::string text =
      Rec("META", "\"host\":\"h\",\"process_id\":1,\"rank\":0,\"clock\":\"realtime\"") +
      // pid 1, tid 1, in order: start/end mixed with push/pop, a pop carrying id, category, domain
      Rec("NVTX_PUSH", "\"name\":\"step_execute_model[request_ids:1_2]\",\"timestamp\":100" + p1t1) +
      Rec("NVTX_START", "\"name\":\"req\",\"id\":7,\"timestamp\":105" + p1t1) +
      Rec("NVTX_PUSH", "\"name\":\"aten::mm\",\"timestamp\":110" + p1t1) +
      Rec("RUNTIME", "\"name\":\"cudaLaunchKernel\",\"cbid\":211,\"start\":111,\"end\":113,\"correlation_id\":1" + p1t1) +
      Rec("KERNEL", "\"name\":\"k\",\"gpu_start\":114,\"gpu_end\":119,\"correlation_id\":1,\"device\":0,\"stream\":7") +
      Rec("NVTX_POP", "\"timestamp\":115,\"id\":3,\"category\":\"c\",\"domain\":\"x\"" + p1t1) +
      Rec("NVTX_END", "\"id\":7,\"timestamp\":118" + p1t1) +
      Rec("NVTX_PUSH", "\"name\":\"nccl:all_reduce\",\"timestamp\":120" + p1t1) +
      Rec("NVTX_POP", "\"timestamp\":125" + p1t1) +
      // pid 1, tid 2 steps back before folding anything: it stops folding, no second read
      Rec("NVTX_PUSH", "\"name\":\"aten::add\",\"timestamp\":60,\"process_id\":1,\"thread_id\":2") +
      Rec("NVTX_PUSH", "\"name\":\"step_execute_model[request_ids:3]\",\"timestamp\":50,\"process_id\":1,\"thread_id\":2") +
      Rec("NVTX_POP", "\"timestamp\":70,\"process_id\":1,\"thread_id\":2") +
      Rec("NVTX_POP", "\"timestamp\":130" + p1t1) +
      Rec("NVTX_POP", "\"timestamp\":80,\"process_id\":1,\"thread_id\":2") +
      // the same thread id under another process, in order
      Rec("NVTX_PUSH", "\"name\":\"step_execute_model[request_ids:4]\",\"timestamp\":200,\"process_id\":2,\"thread_id\":1") +
      Rec("NVTX_PUSH", "\"name\":\"aten::mm\",\"timestamp\":210,\"process_id\":2,\"thread_id\":1") +
      Rec("NVTX_POP", "\"timestamp\":220,\"process_id\":2,\"thread_id\":1") +
      Rec("NVTX_POP", "\"timestamp\":230,\"process_id\":2,\"thread_id\":1") +
      // no host ids at all: an unmatched pop, then a pair
      Rec("NVTX_POP", "\"timestamp\":300") +
      Rec("NVTX_PUSH", "\"name\":\"orphan\",\"timestamp\":310") + Rec("NVTX_POP", "\"timestamp\":320");
  const std::string path = Write("mixed.jsonl", text);
  uint64_t f0 = 0, r0 = 0, f1 = 0, r1 = 0;
  const std::string plain = MergeText(path, false, &f0, &r0);
  const std::string folded = MergeText(path, true, &f1, &r1);
  ExpectSame(plain, folded, "mixed");
  EXPECT_EQ(r1, 0u);
  EXPECT_EQ(f1, 6u);  // tid 1: mm (with extras), nccl, step; pid 2: two; the orphan; not tid 2's
  EXPECT_NE(plain.find("\"NVTX_POP\": 9"), std::string::npos) << "every pop read is counted";
}

TEST_F(FoldMergeTest, ACompressedOrStrictReadIsReadAgainWhenAThreadStepsBack) {
  // One thread folds a pair, then steps back: the file is read a second time without folding.
  const std::string text =
      Rec("META", "\"host\":\"h\",\"process_id\":1,\"rank\":0,\"clock\":\"realtime\"") +
      Push("step_execute_model[request_ids:1]", 10) + Push("aten::mm", 20) + Pop(30) + Push("aten::add", 25) +
      Pop(40) + Pop(50);
  for (const std::string name : {"back.jsonl", "back.jsonl.gz"}) {
    const std::string path = Write(name, name.back() == 'z' ? Gzip(text) : text);
    uint64_t f0 = 0, r0 = 0, f1 = 0, r1 = 0;
    const std::string plain = MergeText(path, false, &f0, &r0);
    const std::string folded = MergeText(path, true, &f1, &r1);
    ExpectSame(plain, folded, name);
    EXPECT_EQ(r1, 1u) << name;
    EXPECT_EQ(f1, 0u) << name;  // the second read's TraceFile
    ImportOptions strict;
    strict.strict = true;
    auto s = ImportFile(path, strict);
    ASSERT_TRUE(s.ok()) << name << ": " << s.status().ToString();  // a second read is no problem in the data
    EXPECT_EQ(s->stats.Get(Problem::kFoldRetried), 1u);
    EXPECT_EQ(s->events.size(), 6u);  // every push and pop stored
  }
}

TEST_F(FoldMergeTest, FoldedAndPlainReadsMergeIdentically) {
  int conflicts = 0;
  uint64_t folded_total = 0;
  for (uint32_t seed = 1; seed <= 24; ++seed) {
    const bool disorder = seed % 2 == 0;
    const std::string path = Write("d" + std::to_string(seed) + ".jsonl", RandomDump(seed, disorder));
    uint64_t f0 = 0, r0 = 0, f1 = 0, r1 = 0;
    const std::string plain = MergeText(path, false, &f0, &r0);
    const std::string folded = MergeText(path, true, &f1, &r1);
    ASSERT_FALSE(plain.empty());
    ASSERT_EQ(r0, 0u);  // (a plain read never retries)
    ExpectSame(plain, folded, "seed " + std::to_string(seed));
    if (!disorder) {
      EXPECT_GT(f1, 0u) << "seed " << seed;  // an in-order dump folds
      EXPECT_EQ(r1, 0u) << "seed " << seed;
    }
    conflicts += r1 > 0;
    folded_total += f1;
  }
  EXPECT_GT(conflicts, 0);  // some shuffled dumps needed the second read
  EXPECT_GT(folded_total, 100u);
}

}  // namespace
}  // namespace truffld::merge
