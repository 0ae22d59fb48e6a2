// ComputeRunStats (truffld/merge/run_stats.h) on a hand-built step whose figures are counted by
// hand below, and run_stats.json (truffld/run_stats.h) written and read back.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "merge_test_util.h"
#include "truffld/merge/pipeline.h"
#include "truffld/merge/run_stats.h"
#include "truffld/run_stats.h"

namespace truffld::merge {
namespace {

using testing::RawKernel;
using testing::RawLaunch;
using testing::RawPop;
using testing::RawPush;

// One step [0, 1000] on rank 1: aten::mm launches two gemm kernels [200, 400] and [350, 520];
// an NCCL range launches a kernel not named nccl* [450, 800] (communication by its range).
RunStats HandStats() {
  std::string d =
      "{\"type\":\"META\",\"schema\":\"truffld.events/1\",\"host\":\"h\",\"process_id\":7,\"rank\":1,"
      "\"clock\":\"realtime\"}\n";
  d += RawPush("step_execute_model[phase:decode]", 0) + RawPush("aten::mm, op_id = 1", 100) + RawLaunch(110, 1) +
       RawLaunch(150, 2) + RawPop(410);
  d += RawPush("ncclAllReduce", 420, ",\"domain\":\"NCCL\"") + RawLaunch(425, 3) + RawPop(440, ",\"domain\":\"NCCL\"");
  d += RawPop(1000);
  d += RawKernel("gemm", 200, 400, 1) + RawKernel("gemm", 350, 520, 2) + RawKernel("ring_reduce", 450, 800, 3);
  std::vector<TraceFile> files;
  files.push_back(testing::FileFromLines(d, "r1.jsonl"));
  auto r = Merge(std::move(files), MergeOptions{});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? ComputeRunStats(*r) : RunStats{};
}

TEST(RunStats, HandCountedStep) {
  const RunStats s = HandStats();
  EXPECT_EQ(s.kernels, 3);
  EXPECT_EQ(s.kernel_total_ns, 200 + 170 + 350);
  ASSERT_EQ(s.kernel_summary.size(), 2u);
  EXPECT_EQ(s.kernel_summary[0].name, "gemm");  // 370 ns before ring_reduce's 350
  EXPECT_EQ(s.kernel_summary[0].count, 2);
  EXPECT_EQ(s.kernel_summary[0].min_ns, 170);
  EXPECT_EQ(s.kernel_summary[0].max_ns, 200);
  EXPECT_DOUBLE_EQ(s.kernel_summary[0].avg_ns, 185);
  EXPECT_DOUBLE_EQ(s.kernel_summary[0].share, 370.0 / 720.0);
  ASSERT_EQ(s.step_idle.size(), 1u);
  EXPECT_EQ(s.step_idle[0].rank, 1);
  EXPECT_EQ(s.step_idle[0].duration_ns, 1000);
  EXPECT_EQ(s.step_idle[0].busy_ns, 600);  // [200, 800]
  EXPECT_DOUBLE_EQ(s.step_idle[0].idle_share, 0.4);
  ASSERT_EQ(s.rank_idle.size(), 1u);
  EXPECT_EQ(s.rank_idle[0].steps, 1);
  ASSERT_EQ(s.launch_latency.size(), 1u);
  const LaunchLatency& l = s.launch_latency[0];
  EXPECT_EQ(l.count, 3);
  EXPECT_EQ(l.min_ns, 450 - 425);
  EXPECT_EQ(l.p50_ns, 200 - 110);
  EXPECT_EQ(l.p90_ns, 350 - 150);
  EXPECT_EQ(l.max_ns, 350 - 150);
  EXPECT_EQ(l.p50_after_end_ns, 200 - 115);
  ASSERT_EQ(s.overlap.size(), 1u);
  EXPECT_EQ(s.overlap[0].compute_ns, 320);  // [200, 520]
  EXPECT_EQ(s.overlap[0].comm_ns, 350);     // [450, 800]
  EXPECT_EQ(s.overlap[0].overlap_ns, 70);   // [450, 520]
  EXPECT_DOUBLE_EQ(s.overlap[0].overlap_share, 0.2);
}

TEST(RunStats, JsonRoundTripsAndBadFilesNameTheProblem) {
  const RunStats s = HandStats();
  auto back = ParseRunStatsJson(RunStatsJson(s), "run_stats.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(RunStatsJson(*back), RunStatsJson(s));
  auto wrong = ParseRunStatsJson(R"({"schema":"truffld.stats-summary/1","kernels":"3"})", "m/run_stats.json");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("m/run_stats.json"), std::string::npos) << wrong.status().message();
  EXPECT_NE(wrong.status().message().find("kernels"), std::string::npos);
  auto item = ParseRunStatsJson(
      R"({"schema":"truffld.stats-summary/1","kernels":1,"kernel_total_ns":1,"kernel_summary":[{"name":5}],)"
      R"("step_idle":[],"launch_latency":[],"overlap":[]})",
      "x.json");
  ASSERT_FALSE(item.ok());
  EXPECT_NE(item.status().message().find("kernel_summary[0]"), std::string::npos) << item.status().message();
  EXPECT_FALSE(ParseRunStatsJson("{\"schema\":\"other/1\"}", "x.json").ok());
  EXPECT_FALSE(ParseRunStatsJson("not json", "x.json").ok());
}

TEST(RunStats, NearestRankPercentiles) {
  const std::vector<int64_t> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(NearestRank(v, 0.5), 5);
  EXPECT_EQ(NearestRank(v, 0.9), 9);
  EXPECT_EQ(NearestRank(v, 0.99), 10);
  EXPECT_EQ(NearestRank({7}, 0.5), 7);
}

}  // namespace
}  // namespace truffld::merge
