// Event keeps its correlation id in 32 bits (wider ids go to TraceFile::wide_correlations) and
// its source line beside it (TraceFile::lines). These tests check that neither move loses
// anything: every int64 id reads back and still links a kernel to its launch, and messages
// name the right line after Merge has dropped the closing events in front of the record.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <sstream>
#include <string>

#include "merge_test_util.h"
#include "truffld/merge/pipeline.h"

namespace truffld::merge {
namespace {

using testing::FileFromLines;

TEST(EventCorrelation, EveryIdReadsBack) {
  TraceFile f;
  const int64_t ids[] = {0, 1, 7, (int64_t{1} << 31) - 1, int64_t{1} << 31, (int64_t{1} << 32) + 5,
                         std::numeric_limits<int64_t>::max(), -2, std::numeric_limits<int64_t>::min(), kNone};
  std::vector<Event> events;
  for (int64_t id : ids) {
    Event e;
    f.SetCorrelation(e, id);
    events.push_back(e);
  }
  for (size_t i = 0; i < std::size(ids); ++i) EXPECT_EQ(f.Correlation(events[i]), ids[i]) << ids[i];
  // Only the ids beyond 31 bits (and the negative ones other than kNone) take a side entry.
  EXPECT_EQ(f.wide_correlations.size(), 5u);
  EXPECT_EQ(f.Correlation(Event{}), kNone);  // a default event has none
}

TEST(EventCorrelation, LinesStayBesideEventsAndUnknownOnesReadZero) {
  TraceFile f;
  Event e;
  f.AddEvent(e, 12);
  f.AddEvent(e, uint64_t{1} << 40);  // saturates, as LineNumber does
  f.events.push_back(e);             // added without a line
  EXPECT_EQ(f.LineOf(0), 12u);
  EXPECT_EQ(f.LineOf(1), UINT32_MAX);
  EXPECT_EQ(f.LineOf(2), 0u);
  EXPECT_EQ(f.LineOf(f.events[0]), 12u);
  EXPECT_EQ(f.LineOf(e), 0u);  // not one of f's events
}

std::string Api(const char* name, long long start, long long end, const std::string& corr) {
  return "{\"type\":\"RUNTIME\",\"name\":\"" + std::string(name) + "\",\"start\":" + std::to_string(start) +
         ",\"end\":" + std::to_string(end) + ",\"correlation_id\":" + corr + ",\"process_id\":1,\"thread_id\":1}\n";
}
std::string Kernel(const char* name, long long start, long long end, const std::string& corr) {
  return "{\"type\":\"KERNEL\",\"name\":\"" + std::string(name) + "\",\"gpu_start\":" + std::to_string(start) +
         ",\"gpu_end\":" + std::to_string(end) + ",\"correlation_id\":" + corr + ",\"device\":0,\"stream\":1}\n";
}
std::string Push(const std::string& name, long long t) {
  return "{\"type\":\"NVTX_PUSH\",\"name\":\"" + name + "\",\"timestamp\":" + std::to_string(t) +
         ",\"process_id\":1,\"thread_id\":1}\n";
}
std::string Pop(long long t) {
  return "{\"type\":\"NVTX_POP\",\"timestamp\":" + std::to_string(t) + ",\"process_id\":1,\"thread_id\":1}\n";
}

// The kernel launched by API call `api` in r's first tree, or "" when it has none.
std::string KernelOf(const MergeResult& r, std::string_view api, int64_t* api_corr, int64_t* kernel_corr) {
  std::string found;
  std::function<void(uint32_t)> walk = [&](uint32_t n) {
    if (r.Name(r.node(n)) == api && r.node(n).first_child != kNoNode) {
      const Node& a = r.node(n);
      const Node& k = r.node(a.first_child);
      found = std::string(r.Name(k));
      *api_corr = r.files[a.file].Correlation(*r.EventOf(a));
      *kernel_corr = r.files[k.file].Correlation(*r.EventOf(k));
    }
    r.ForEachChild(n, walk);
  };
  walk(r.trees[0].root);
  return found;
}

TEST(EventCorrelation, WideAndNegativeIdsLinkKernelsToTheirLaunch) {
  std::string d = Push("step_execute_model[request_ids:0]", 0);
  const std::string ids[] = {"2147483647", "2147483648", "5000000000", "9223372036854775807", "-3"};
  long long t = 10;
  for (const std::string& id : ids) {
    d += Api(("launch" + id).c_str(), t, t + 5, id) + Kernel(("k" + id).c_str(), t + 6, t + 8, id);
    t += 10;
  }
  d += Pop(1000);
  std::vector<TraceFile> files;
  files.push_back(FileFromLines(d));
  auto r = Merge(std::move(files), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->summary.total.device_ops_unattributed, 0u);
  for (const std::string& id : ids) {
    int64_t a = 0, k = 0;
    EXPECT_EQ(KernelOf(*r, "launch" + id, &a, &k), "k" + id);
    EXPECT_EQ(std::to_string(a), id);
    EXPECT_EQ(std::to_string(k), id);
  }
}

TEST(EventCorrelation, MessagesNameTheirLineWhetherPopsWereFoldedOrNot) {
  // 40 ranges (80 records, their pops folded away by the folding reader) before the records the
  // messages are about: a line taken from the event's index would be off by the pops before it.
  std::string d = Push("step_execute_model[request_ids:0]", 0);
  for (int i = 0; i < 40; ++i) d += Push("op" + std::to_string(i), 10 + i * 10) + Pop(15 + i * 10);
  auto line_of_next = [&] { return std::to_string(std::count(d.begin(), d.end(), '\n') + 1); };
  d += Api("a", 500, 510, "7");
  const std::string dup_line = line_of_next();
  d += Api("b", 520, 530, "7");
  const std::string orphan_line = line_of_next();
  d += Kernel("orphan", 540, 550, "99");
  d += Pop(1000);
  std::vector<TraceFile> files;
  // Unfolded, the pops are events (read by the fast path and by the DOM reader); folded (as the
  // importer reads a dump), they never become events.
  for (bool fast : {true, false}) files.push_back(FileFromLines(d, "f.jsonl", fast));
  files.emplace_back().meta.path = "f.jsonl";
  RawLineParser folding(&files.back(), "f.jsonl");
  folding.set_fold_push_pop(true);
  std::istringstream in(d);
  uint64_t n = 0;
  for (std::string line; std::getline(in, line);) folding.ParseLine(line, ++n);
  files.back().SortThreads();
  EXPECT_EQ(files.back().folded_pops, 41u);  // the ops' and the step's
  auto r = Merge(std::move(files), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (const TraceFile& f : r->files) {
    std::string dup, orphan;
    for (const IngestIssue& i : f.stats.issues) {
      if (i.kind == Problem::kDuplicateCorrelation) dup = i.where;
      if (i.kind == Problem::kDeviceNoLaunchApi) orphan = i.where;
    }
    EXPECT_EQ(dup, "f.jsonl:" + dup_line);
    EXPECT_EQ(orphan, "f.jsonl:" + orphan_line);
  }
}

// Steps starting at the same time in one process are numbered in file order: the tie is
// broken by the step's source line.
TEST(EventCorrelation, StepsStartingTogetherAreNumberedInFileOrder) {
  auto step = [](const char* name, int tid, long long start, long long end) {
    const std::string t = std::to_string(tid);
    return "{\"type\":\"NVTX_PUSH\",\"name\":\"" + std::string(name) + "\",\"timestamp\":" +
           std::to_string(start) + ",\"process_id\":1,\"thread_id\":" + t + "}\n" +
           "{\"type\":\"NVTX_POP\",\"timestamp\":" + std::to_string(end) + ",\"process_id\":1,\"thread_id\":" + t + "}\n";
  };
  // Thread 2's step comes first in the file; thread 1 sorts first among the threads.
  for (bool thread2_first : {true, false}) {
    const std::string a = step("step_execute_model[request_ids:1]", 2, 100, 200), b = step("step_execute_model[request_ids:2]", 1, 100, 300);
    std::vector<TraceFile> files;
    files.push_back(FileFromLines(thread2_first ? a + b : b + a));
    auto r = Merge(std::move(files), {});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_GE(r->trees.size(), 2u);
    EXPECT_EQ(r->Name(r->node(r->trees[0].root)), thread2_first ? "step_execute_model[request_ids:1]" : "step_execute_model[request_ids:2]");
  }
}

}  // namespace
}  // namespace truffld::merge
