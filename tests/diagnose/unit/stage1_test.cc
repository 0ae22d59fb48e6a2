// Stage I aggregation and selection on hand-made rho values, and the trees reader.
#include <gtest/gtest.h>

#include "stage2/fusion.h"
#include "legacy/stage1.h"
#include "read/tree_reader.h"

namespace truffld::diagnose {
namespace {

TEST(Stage1, RhoBarAveragesLowestQuantile) {
  EXPECT_DOUBLE_EQ(RhoBar({0.9, 0.1, 0.5, 1.0, 0.3, 0.7, 0.8, 0.2}, 0.25), 0.15);  // lowest 2
  EXPECT_DOUBLE_EQ(RhoBar({0.9, 0.4, 1.0}, 0.25), 0.4);  // floor(0.75) = 0 -> at least 1
  EXPECT_DOUBLE_EQ(RhoBar({0.9, 0.4}, 1.0), 0.65);
  EXPECT_DOUBLE_EQ(RhoBar({}, 0.25), 1.0);
}

// Table with one step and the given (family, rho) instances.
InstanceTable OneStep(const std::vector<std::pair<std::string, int>>& fams) {
  InstanceTable t;
  t.steps.push_back(StepInfo{});
  t.steps.back().view = View::kVertical;
  for (auto& [name, n] : fams) {
    for (int i = 0; i < n; ++i) t.Add(t.strings.Intern(name), t.strings.Intern("backend_op"), kNoString, i, i + 1, {});
  }
  return t;
}

TEST(Stage1, ThresholdMedianPlusLambdaMadAndTopM) {
  InstanceTable t = OneStep({{"a", 4}, {"b", 4}, {"c", 4}, {"d", 4}, {"e", 4}});
  // Scores A: a 0.9, b 0.8, c 0.1, d 0.0, e 0.0 (each family's lowest instance, q = 0.25).
  std::vector<double> rho = {0.1, 1, 1, 1, 0.2, 1, 1, 1, 0.9, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  std::vector<uint8_t> method(rho.size(), 0);
  StageOneOptions o;
  o.lambda = 1.0;
  o.top_m = 1;
  auto steps = SelectCandidates(t, rho, method, {"gmm"}, o);
  ASSERT_EQ(steps.size(), 1u);
  // median 0.1, MAD 0.1 -> theta 0.2: a and b qualify; top_m keeps a.
  EXPECT_NEAR(steps[0].threshold, 0.2, 1e-12);
  EXPECT_EQ(t.strings.Get(steps[0].families[0].family), "a");
  EXPECT_TRUE(steps[0].families[0].candidate);
  EXPECT_FALSE(steps[0].families[1].candidate);
  o.top_m = 5;
  steps = SelectCandidates(t, rho, method, {"gmm"}, o);
  EXPECT_TRUE(steps[0].families[1].candidate);
  EXPECT_FALSE(steps[0].families[2].candidate);  // c: 0.1 < theta
}

TEST(Stage1, FewInstancesFallBackToRobustZ) {
  InstanceTable t = OneStep({{"rare", 3}});
  t.features[2][kDurationNs] = 1e9;  // one enormous outlier among 3
  t.features[0][kDurationNs] = t.features[1][kDurationNs] = 1000;
  StageOneOptions o;
  auto r = RunStageOne(t, nullptr, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->robust_z_groups, 1u);
  EXPECT_EQ(r->steps[0].families[0].method, "robust-z");
  EXPECT_LT(r->rho[2], 1e-6);
  EXPECT_DOUBLE_EQ(r->rho[0], 1.0);
}

TEST(Stage1, CountsStrongAndWeakInstancesPerFamily) {
  InstanceTable t = OneStep({{"a", 4}, {"b", 4}});
  std::vector<double> rho = {1e-9, 5e-7, 0.3, 0.9, 1e-6, 0.49, 0.5, 1.0};
  std::vector<uint8_t> method(rho.size(), 0);
  auto steps = SelectCandidates(t, rho, method, {"gmm"}, StageOneOptions{});
  ASSERT_EQ(steps[0].families.size(), 2u);
  for (const FamilyScore& f : steps[0].families) {
    if (t.strings.Get(f.family) == "a") {
      EXPECT_EQ(f.strong_instances, 2);  // 1e-9 and 5e-7
      EXPECT_EQ(f.weak_instances, 3);    // ... and 0.3
    } else {
      EXPECT_EQ(f.strong_instances, 0);  // 1e-6 is not below 1e-6
      EXPECT_EQ(f.weak_instances, 2);    // 1e-6 and 0.49; 0.5 is normal
    }
  }
  StageOneResult result;
  result.rho = rho;
  result.steps = steps;
  auto ev = BuildEvidence(t, result);
  ASSERT_EQ(ev[0].families.size(), 2u);
  EXPECT_EQ(ev[0].families[0].strong_instances + ev[0].families[1].strong_instances, 2);
}

TEST(Stage1, CalibratedRhoReachesTheStrongBoundForFarOutliers) {
  InstanceTable t = OneStep({{"mm", 60}});
  for (int i = 0; i < 60; ++i) {
    t.features[i][kDurationNs] = 1000.0 * (1.0 + 0.05 * (i % 11));
    t.features[i][kKernelTimeNs] = 800.0 * (1.0 + 0.04 * (i % 7));
  }
  t.features[59][kDurationNs] = 1e6;  // 1000x slower
  t.features[59][kKernelTimeNs] = 9e5;
  StageOneOptions o;
  ASSERT_EQ(o.rho, RhoRule::kCalibrated);  // the default
  auto r = RunStageOne(t, nullptr, o);
  ASSERT_TRUE(r.ok());
  EXPECT_LT(r->rho[59], 1e-6);
  EXPECT_EQ(r->steps[0].families[0].strong_instances, 1);
  int strong_normal = 0;
  for (int i = 0; i < 59; ++i) strong_normal += r->rho[i] < 1e-6;
  EXPECT_EQ(strong_normal, 0);
}

TEST(Stage1, ReferenceModeNeedsReference) {
  InstanceTable t = OneStep({{"a", 3}});
  StageOneOptions o;
  o.mode = ScoringMode::kReference;
  EXPECT_FALSE(RunStageOne(t, nullptr, o).ok());
  o.mode = ScoringMode::kPooled;
  o.q = 0;
  EXPECT_FALSE(RunStageOne(t, nullptr, o).ok());
}

TEST(TreeReader, FeaturesDedupAndBadLines) {
  TreeReader r;
  r.set_outside_time(false);  // operator instances only (outside_time_test.cc)
  const std::string tree = R"({"schema":"truffld.trees/1","rank":0,"process_id":1,"step_index":0,"step":"s","requests":["a","b"],"request":"a","view":"vertical","phase":"decode","start":0,"end":1000,"root":{"name":"s","layer":"step","family":"step","start":0,"end":1000,"children":[
    {"name":"aten::mm, seq = 1","layer":"backend_op","family":"aten::mm","start":100,"end":600,"thread_id":7,"children":[
      {"name":"cudaLaunchKernel","layer":"runtime_call","family":"cudaLaunchKernel","start":150,"end":200,"thread_id":7,"children":[
        {"name":"gemm<float>","layer":"kernel","family":"gemm","start":250,"end":450},
        {"name":"gemm2","layer":"kernel","family":"gemm","start":350,"end":550}]},
      {"name":"aten::view","layer":"backend_op","family":"aten::view","start":560,"end":580,"thread_id":7}]}]}})";
  std::string one_line;
  for (char c : tree) if (c != '\n') one_line += c;
  r.ParseLine(one_line, "t.jsonl:1");
  std::string second = one_line;
  second.replace(second.find(R"("request":"a")"), 13, R"("request":"b")");
  r.ParseLine(second, "t.jsonl:2");   // same operators through request b: deduplicated
  r.ParseLine("{oops", "t.jsonl:3");
  r.ParseLine(R"({"schema":"truffld.trees/2"})", "t.jsonl:4");
  EXPECT_EQ(r.stats().trees, 2u);
  EXPECT_EQ(r.stats().bad_lines, 2u);
  EXPECT_EQ(r.stats().duplicate_instances, 2u);
  EXPECT_EQ(r.stats().inverted_ranges, 0u);
  ASSERT_EQ(r.stats().problems.size(), 2u);
  EXPECT_EQ(r.stats().problems[0].rfind("t.jsonl:3: not JSON", 0), 0u);
  InstanceTable t = r.Finish();
  ASSERT_EQ(t.steps.size(), 1u);
  EXPECT_EQ(t.steps[0].trees, 2);
  EXPECT_EQ(t.steps[0].requests.size(), 2u);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.strings.Get(t.family[0]), "aten::mm");
  const FeatureVector& f = t.features[0];
  EXPECT_EQ(f[kDurationNs], 500);
  EXPECT_EQ(f[kSelfTimeNs], 480);      // minus the nested aten::view
  EXPECT_EQ(f[kRuntimeCount], 1);
  EXPECT_EQ(f[kRuntimeTimeNs], 50);
  EXPECT_EQ(f[kDriverCount], 0);
  EXPECT_EQ(f[kKernelCount], 2);
  EXPECT_EQ(f[kKernelTimeNs], 400);
  EXPECT_DOUBLE_EQ(f[kStreamOverlap], 0.25);   // union 300 of 400
  EXPECT_DOUBLE_EQ(f[kLaunchLatencyNs], 150);  // (100 + 200) / 2
  EXPECT_EQ(f[kPhaseCode], 1);
  EXPECT_EQ(t.strings.Get(t.parent[1]), "aten::mm");
  ASSERT_EQ(t.kernels[0].size(), 1u);
  EXPECT_EQ(t.kernels[0][0].count, 2u);
}

TEST(Fusion, IntersectsCandidatesWithStageTwo) {
  StepEvidence e;
  e.view = View::kVertical;
  auto fam = [](const char* name, const char* layer, const char* parent, double p, bool candidate) {
    FamilyEvidence f;
    f.family = name;
    f.layer = layer;
    f.parent = parent;
    f.instances = 4;
    f.probability = p;
    f.score = 1 - p;
    f.candidate = candidate;
    f.method = "gmm";
    return f;
  };
  e.families = {fam("aten::mm", "backend_op", "torch.nn.functional.linear", 1e-9, true),
                fam("torch.nn.functional.linear", "frontend_op", "", 1e-8, false),
                fam("aten::add", "backend_op", "", 0.2, true)};
  StageTwoDecision d;
  d.abnormal = true;
  d.faulty = {"aten::mm", "torch.nn.functional.linear"};
  StepDiagnosis s = Fuse(e, d, 0.5);
  EXPECT_TRUE(s.abnormal);
  ASSERT_EQ(s.faulty.size(), 1u);  // linear is not a Stage I candidate
  EXPECT_EQ(s.faulty[0].family, "aten::mm");
  EXPECT_EQ(s.faulty[0].parent_chain, std::vector<std::string>{"torch.nn.functional.linear"});
  d.faulty = {"torch.nn.functional.linear"};
  EXPECT_FALSE(Fuse(e, d, 0.5).abnormal);  // Stage II alone cannot make a step abnormal
}

TEST(TreeReader, RegimeFollowsTheVerticalTreesGraphLaunch) {
  auto tree = [](int step, const char* view, bool graph) {
    std::string call = graph ? R"(,"children":[{"name":"cudaGraphLaunch_v10000","layer":"runtime_call","family":"cudaGraphLaunch","start":10,"end":20,"thread_id":7}])" : "";
    // A horizontal view is a unit only with communication in it.
    const std::string comm = R"(,"children":[{"name":"ncclAllReduce","layer":"comm","family":"ncclAllReduce","start":30,"end":60,"thread_id":7}])";
    return std::string(R"({"schema":"truffld.trees/1","rank":0,"step_index":)") + std::to_string(step) +
           R"(,"step":"s","requests":["a"],"request":"a","view":")" + view +
           R"(","phase":"unknown","start":0,"end":100,"root":{"name":"s","layer":"step","family":"step","start":0,"end":100)" +
           (std::string(view) == "vertical" ? call : comm) + "}}";
  };
  TreeReader r;
  r.ParseLine(tree(0, "vertical", false), "t:1");
  r.ParseLine(tree(0, "horizontal", false), "t:2");
  r.ParseLine(tree(1, "vertical", true), "t:3");
  r.ParseLine(tree(1, "horizontal", false), "t:4");
  EXPECT_EQ(r.stats().bad_lines, 0u);
  InstanceTable t = r.Finish();
  ASSERT_EQ(t.steps.size(), 4u);
  for (const StepInfo& s : t.steps) {
    EXPECT_EQ(s.regime, s.step_index == 1 ? Regime::kGraph : Regime::kEager) << s.step_index << " " << ViewName(s.view);
  }
}

}  // namespace
}  // namespace truffld::diagnose
