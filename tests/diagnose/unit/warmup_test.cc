// First use of GPU code (warmup.h): the tree reader marks operators whose own calls loaded code,
// their host cost is reported as warm-up and never judged, and everything else in the step is
// still judged as before.
#include <gtest/gtest.h>

#include <string>

#include "../peer_table.h"
#include "../tree_line.h"
#include "stage2/fusion.h"
#include "report/html_report.h"
#include "report/output.h"
#include "report/stats_table.h"
#include "stage2/peer_evidence.h"
#include "peer/stage.h"
#include "read/tree_reader.h"

namespace truffld::diagnose {
namespace {

TEST(Warmup, CodeLoadingCallsAreRecognisedByName) {
  for (const char* api : {"cuModuleLoadData", "cuModuleLoadDataEx", "cuModuleLoadFatBinary", "cuLibraryLoadData",
                          "cuLibraryLoadFromFile", "cudaLibraryLoadData", "cuLinkComplete"}) {
    EXPECT_TRUE(IsCodeLoadCall(api)) << api;
  }
  for (const char* api : {"cuLaunchKernel", "cudaMalloc", "cuModuleGetFunction", "cuLibraryGetKernel", "", "cuModule"}) {
    EXPECT_FALSE(IsCodeLoadCall(api)) << api;
  }
}

// aten::linear wraps aten::mm, whose own driver call loads a library before launching; the load
// marks mm (its own call), not linear (a child operator's call) nor copy_.
TEST(Warmup, TreeReaderMarksTheOperatorWhoseOwnCallLoadedCode) {
  const std::string line = testing::OneLine(R"({"schema":"truffld.trees/1","rank":0,"host":"h","process_id":1,"step_index":0,
    "step":"step_execute_model[request_ids:a][phase:decode][tokens:1]","requests":["a"],"request":"a","view":"vertical",
    "start":0,"end":1000,"root":{"name":"s","layer":"step","family":"step","start":0,"end":1000,"children":[
    {"name":"aten::linear","layer":"backend_op","family":"aten::linear","start":100,"end":600,"thread_id":7,"children":[
      {"name":"aten::mm","layer":"backend_op","family":"aten::mm","start":110,"end":590,"thread_id":7,"children":[
        {"name":"cuLibraryLoadData","layer":"driver_call","family":"cuLibraryLoadData","start":120,"end":140,"thread_id":7},
        {"name":"cudaLaunchKernel","layer":"runtime_call","family":"cudaLaunchKernel","start":150,"end":200,"thread_id":7,"children":[
          {"name":"gemm","layer":"kernel","family":"gemm","start":300,"end":400,"grid":[4,1,1],"block":[128,1,1]}]}]}]},
    {"name":"aten::copy_","layer":"backend_op","family":"aten::copy_","start":620,"end":900,"thread_id":7}]}})");
  TreeReader r;
  r.set_outside_time(false);  // operator instances only (outside_time_test.cc)
  r.ParseLine(line, "t:1");
  const InstanceTable t = r.Finish();
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t.strings.Get(t.family[1]), "aten::mm");
  EXPECT_TRUE(t.detail[1].flags & kDetailLoadsCode);
  EXPECT_FALSE(t.detail[0].flags & kDetailLoadsCode);
  EXPECT_FALSE(t.detail[2].flags & kDetailLoadsCode);
}

uint32_t FindUnit(const InstanceTable& t, int64_t rank, int64_t step) {
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    if (t.steps[u].rank == rank && t.steps[u].step_index == step && t.steps[u].view == View::kVertical) return u;
  }
  return UINT32_MAX;
}

// One aten::mm range of rank 0, step 30 takes 50x its usual host time. Without the load it is an
// alarm blamed on aten::mm; when that range loaded code it is warm-up: the step is normal, its
// evidence and WarmupCosts carry the excess, and a real device fault in the same step is still
// found.
TEST(Warmup, FirstUseIsReportedNotJudged) {
  testing::RunSpec spec;
  spec.host_jitter = 0.1;
  InstanceTable t = testing::SimulatedRun(spec);
  const uint32_t u = FindUnit(t, 0, 30);
  ASSERT_NE(u, UINT32_MAX);
  uint32_t mm = t.steps[u].first_instance;
  while (t.strings.Get(t.family[mm]) != "aten::mm") ++mm;
  const double usual = t.detail[mm].host_ns;
  t.detail[mm].host_ns = static_cast<float>(50 * usual);
  const PeerStageResult slow = RunPeerStage(t, PeerStageOptions{});
  ASSERT_EQ(slow.decision.units[u].verdict, Verdict::kAbnormal);
  ASSERT_FALSE(slow.blame[u].empty());
  EXPECT_EQ(t.strings.Get(slow.blame[u][0].family), "aten::mm");
  EXPECT_TRUE(slow.warmup[u].empty());

  t.detail[mm].flags |= kDetailLoadsCode;
  const PeerStageResult warm = RunPeerStage(t, PeerStageOptions{});
  EXPECT_EQ(warm.decision.units[u].verdict, Verdict::kNormal);
  ASSERT_EQ(warm.warmup[u].size(), 1u);
  const WarmupCost& c = warm.warmup[u][0];
  EXPECT_EQ(t.strings.Get(c.family), "aten::mm");
  EXPECT_EQ(c.instances, 1);
  EXPECT_NEAR(c.observed_ns, 50 * usual, 1);
  EXPECT_GT(c.excess_ns, 40 * usual);
  EXPECT_LT(c.excess_ns, 50 * usual);
  const auto ev = BuildPeerEvidence(t, warm);
  ASSERT_TRUE(ev[u].peer.has_value());
  EXPECT_NE(ev[u].peer->summary.find("first use of GPU code (warm-up, not judged): aten::mm loaded code"),
            std::string::npos)
      << ev[u].peer->summary;
  ASSERT_EQ(ev[u].peer->warmup.size(), 1u);
  EXPECT_EQ(ev[u].peer->warmup[0].family, "aten::mm");
  // It reaches every output: stats.json, the stdout summary and report.html's run table.
  const nlohmann::json stats = PeerStatsJson(t, warm);
  EXPECT_EQ(stats["vertical"]["warmup"]["units"], 1);
  EXPECT_EQ(stats["vertical"]["warmup"]["above_impact_floor"], 1);
  EXPECT_NE(FormatPeerSummary(warm).find("warm-up (first use of GPU code, not judged): 1 unit(s)"), std::string::npos);
  std::vector<StepDiagnosis> d(ev.size());
  for (size_t i = 0; i < ev.size(); ++i) {
    d[i].evidence = ev[i];
    d[i].label = ev[i].peer ? ev[i].peer->verdict : Verdict::kNormal;
  }
  const ReportRunData run = BuildReportRunData(t, warm, d);
  ReportContext ctx;
  ctx.run = &run;
  const std::string html = RenderHtmlReport(d, ctx);
  EXPECT_NE(html.find("<th>warm-up (not judged)</th><td>1 unit lost"), std::string::npos);
  EXPECT_NE(html.find("rank 0 step 30 v: aten::mm +"), std::string::npos);

  // A slowed kernel of another family in the same step is judged as usual.
  uint32_t silu = t.steps[u].first_instance;
  while (t.strings.Get(t.family[silu]) != "aten::silu") ++silu;
  for (uint32_t i = silu; i < t.steps[u].first_instance + t.steps[u].instance_count; ++i) {
    if (t.family[i] == t.family[silu]) t.detail[i].device_ns *= 3;
  }
  const PeerStageResult both = RunPeerStage(t, testing::StatisticsOnly());
  EXPECT_EQ(both.decision.units[u].verdict, Verdict::kAbnormal);
  ASSERT_FALSE(both.blame[u].empty());
  EXPECT_EQ(t.strings.Get(both.blame[u][0].family), "aten::silu");
  for (const BlamedFamily& b : both.blame[u]) EXPECT_NE(t.strings.Get(b.family), "aten::mm");
}

}  // namespace
}  // namespace truffld::diagnose
