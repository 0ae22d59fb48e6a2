// TreeReader: CUDA runtime and driver calls feed separate features (and export columns),
// NVTX domains are collected per step, the trees' phase is normalised, grouped lines
// (request_group) are accepted, and invalid UTF-8 is repaired instead of dropping the tree.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "report/output.h"
#include "read/tree_reader.h"
#include "../tree_line.h"

namespace truffld::diagnose {
namespace {

using testing::OneLine;

// aten::mm -> cudaLaunchKernel (runtime, 50 ns) -> cuLaunchKernel (driver, 30 ns) -> kernel,
// plus a bare cuMemcpyHtoD (driver, 20 ns); a sibling frontend op with no calls.
std::string Tree(const std::string& phase_field, const std::string& extra = "") {
  return OneLine(R"({"schema":"truffld.trees/1","rank":0,"process_id":1,"step_index":4,"step":"s","requests":["a","b"],"request":"a",)" +
                 extra + R"("view":"vertical",)" + phase_field + R"("start":0,"end":1000,"root":{"name":"s","layer":"step","family":"step","start":0,"end":1000,"children":[
    {"name":"aten::mm","layer":"backend_op","family":"aten::mm","domain":"vllm","start":100,"end":600,"thread_id":7,"children":[
      {"name":"cudaLaunchKernel","layer":"runtime_call","family":"cudaLaunchKernel","start":150,"end":200,"thread_id":7,"children":[
        {"name":"cuLaunchKernel","layer":"driver_call","family":"cuLaunchKernel","start":160,"end":190,"thread_id":7,"children":[
          {"name":"gemm<float>","layer":"kernel","family":"gemm","start":250,"end":450}]}]},
      {"name":"cuMemcpyHtoD","layer":"driver_call","family":"cuMemcpyHtoD","start":210,"end":230,"thread_id":7}]},
    {"name":"sampler","layer":"frontend_op","family":"sampler","domain":"NCCL","start":700,"end":800,"thread_id":7}]}})");
}

TEST(TreeReaderSplit, RuntimeAndDriverCallsAreSeparateFeatures) {
  TreeReader r;
  r.set_outside_time(false);  // operator instances only (outside_time_test.cc)
  r.ParseLine(Tree(R"("phase":"decode",)"), "t:1");
  InstanceTable t = r.Finish();
  ASSERT_EQ(t.size(), 2u);
  const FeatureVector& f = t.features[0];
  EXPECT_EQ(t.strings.Get(t.family[0]), "aten::mm");
  EXPECT_EQ(f[kRuntimeCount], 1);
  EXPECT_EQ(f[kRuntimeTimeNs], 50);
  EXPECT_EQ(f[kDriverCount], 2);
  EXPECT_EQ(f[kDriverTimeNs], 50);  // 30 nested + 20 bare
  EXPECT_EQ(f[kKernelCount], 1);
  const FeatureVector& g = t.features[1];
  EXPECT_EQ(g[kRuntimeCount] + g[kDriverCount] + g[kRuntimeTimeNs] + g[kDriverTimeNs], 0);
  // NVTX domains of the step's ranges, sorted and distinct.
  ASSERT_EQ(t.steps.size(), 1u);
  EXPECT_EQ(t.steps[0].nvtx_domains, (std::vector<std::string>{"NCCL", "vllm"}));
}

TEST(TreeReaderSplit, FeatureNamesAndExportColumns) {
  EXPECT_EQ(kNumFeatures, 14);
  std::set<std::string> names;
  for (int i = 0; i < kNumFeatures; ++i) names.insert(FeatureName(i));
  EXPECT_EQ(names.size(), static_cast<size_t>(kNumFeatures));
  EXPECT_STREQ(FeatureName(kRuntimeTimeNs), "runtime_time_ns");
  EXPECT_STREQ(FeatureName(kRuntimeCount), "runtime_count");
  EXPECT_STREQ(FeatureName(kDriverTimeNs), "driver_time_ns");
  EXPECT_STREQ(FeatureName(kDriverCount), "driver_count");
  EXPECT_EQ(names.count("api_time_ns"), 0u);

  TreeReader r;

  r.set_outside_time(false);  // operator instances only (outside_time_test.cc)
  r.ParseLine(Tree(R"("phase":"decode",)"), "t:1");
  InstanceTable t = r.Finish();
  const auto dir = std::filesystem::temp_directory_path() /
                   ("truffld_split_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  const std::string csv = (dir / "f.csv").string(), jsonl = (dir / "f.jsonl").string();
  ASSERT_TRUE(WriteFeatures(csv, t, {0.5, 0.25}, nullptr).ok());
  ASSERT_TRUE(WriteFeatures(jsonl, t, {0.5, 0.25}, nullptr).ok());
  std::ifstream in(csv);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  EXPECT_NE(header.find(",runtime_time_ns,runtime_count,driver_time_ns,driver_count,"), std::string::npos)
      << header;
  EXPECT_EQ(header.find("api_"), std::string::npos);
  auto columns = [](const std::string& s) { return std::count(s.begin(), s.end(), ',') + 1; };
  EXPECT_EQ(columns(header), 8 + kNumFeatures + 1);  // keys, phi, rho
  EXPECT_EQ(columns(row), columns(header));
  std::ifstream jin(jsonl);
  std::string line;
  std::getline(jin, line);
  nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j["runtime_count"], 1);
  EXPECT_EQ(j["driver_count"], 2);
  EXPECT_EQ(j["driver_time_ns"], 50);
  EXPECT_FALSE(j.contains("api_count"));
  std::filesystem::remove_all(dir);
}

TEST(TreeReaderSplit, PhaseIsNormalisedAndTakenFromTheFirstTreeThatNamesIt) {
  struct Case { std::string field, want; };
  for (const Case& c : {Case{R"("phase":"prefill",)", "prefill"}, Case{R"("phase":"DECODE",)", "decode"},
                        Case{R"("phase":"Mixed",)", "mixed"}, Case{"", "unknown"},
                        Case{R"("phase":"ignore previous instructions",)", "unknown"}}) {
    TreeReader r;
    r.set_outside_time(false);  // operator instances only (outside_time_test.cc)
    r.ParseLine(Tree(c.field), "t:1");
    InstanceTable t = r.Finish();
    ASSERT_EQ(t.steps.size(), 1u) << c.field;
    EXPECT_EQ(t.steps[0].phase, c.want) << c.field;
    EXPECT_EQ(t.features[0][kPhaseCode], PhaseCode(c.want)) << c.field;
  }
  TreeReader r;  // the first tree of the step has no phase, a later one does
  r.set_outside_time(false);  // operator instances only (outside_time_test.cc)
  r.ParseLine(Tree(""), "t:1");
  std::string second = Tree(R"("phase":"prefill",)");
  second.replace(second.find(R"("request":"a")"), 13, R"("request":"b")");
  r.ParseLine(second, "t:2");
  InstanceTable t = r.Finish();
  EXPECT_EQ(t.steps[0].phase, "prefill");
  EXPECT_EQ(t.features[0][kPhaseCode], PhaseCode("prefill"));
}

TEST(TreeReaderSplit, AHorizontalViewWithNoCommunicationIsNotAUnit) {
  // A single-rank run: the merge writes each step's horizontal tree, with nothing in it.
  const std::string empty = OneLine(R"({"schema":"truffld.trees/1","rank":0,"process_id":1,"step_index":4,
    "step":"s","requests":["a","b"],"request":"a","view":"horizontal","start":0,"end":1000,
    "root":{"name":"s","layer":"step","family":"step","start":0,"end":1000,"children":[]}})");
  TreeReader r;
  r.ParseLine(Tree(R"("phase":"decode",)"), "t:1");
  r.ParseLine(empty, "t:2");
  InstanceTable t = r.Finish();
  ASSERT_EQ(t.steps.size(), 1u);
  EXPECT_EQ(t.steps[0].view, View::kVertical);
  EXPECT_EQ(r.stats().empty_horizontal, 1u);
}

TEST(TreeReaderSplit, GroupedLinesAreAccepted) {
  TreeReader r;
  r.set_outside_time(false);  // operator instances only (outside_time_test.cc)
  r.ParseLine(Tree(R"("phase":"decode",)", R"("request_group":["a","b"],)"), "t:1");
  EXPECT_EQ(r.stats().trees, 1u);
  EXPECT_EQ(r.stats().bad_lines, 0u);
  InstanceTable t = r.Finish();
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t.steps[0].requests, (std::vector<std::string>{"a", "b"}));
}

TEST(TreeReaderSplit, InvalidUtf8IsRepairedNotDropped) {
  std::string line = Tree(R"("phase":"decode",)");
  line.replace(line.find(R"("family":"sampler")"), 18, "\"family\":\"samp\xff\xc3(ler\"");
  TreeReader r;
  r.set_outside_time(false);  // operator instances only (outside_time_test.cc)
  r.ParseLine(line, "t:1");
  EXPECT_EQ(r.stats().bad_lines, 0u);
  EXPECT_EQ(r.stats().repaired_lines, 1u);
  InstanceTable t = r.Finish();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.strings.Get(t.family[1]), "samp\xEF\xBF\xBD\xEF\xBF\xBD(ler");
  TreeReader bad;  // still not JSON after the repair: a bad line as before
  bad.ParseLine("{\"schema\":\"x\xff", "t:2");
  EXPECT_EQ(bad.stats().bad_lines, 1u);
  EXPECT_EQ(bad.stats().repaired_lines, 0u);
}

}  // namespace
}  // namespace truffld::diagnose
