// End to end on hand-built trees: reader -> Stage I -> offline Stage II -> fusion -> outputs.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "../synthetic_trees.h"
#include "report/html_report.h"
#include "report/output.h"
#include "run/pipeline.h"
#include "read/tree_reader.h"

namespace truffld::diagnose {
namespace {

namespace fs = std::filesystem;

std::string WriteTemp(const std::string& name, const std::string& content) {
  fs::path p = fs::temp_directory_path() / ("truffld_diag_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p) << content;
  return p.string();
}

InstanceTable LoadTrees(const std::string& content, ReadStats* stats = nullptr) {
  std::string path = WriteTemp("trees.jsonl", content);
  TreeReader reader;
  EXPECT_TRUE(reader.Read(path).ok());
  if (stats) *stats = reader.stats();
  fs::remove(path);
  return reader.Finish();
}

StageTwoConfig OfflineConfig() {
  StageTwoConfig c;
  c.mode = LlmMode::kOff;
  return c;
}

const StepDiagnosis* Find(const std::vector<StepDiagnosis>& d, int step, const std::string& view) {
  for (const auto& s : d) {
    if (s.evidence.step_index == step && ViewName(s.evidence.view) == view) return &s;
  }
  return nullptr;
}

class PipelineE2E : public ::testing::TestWithParam<ScoringMode> {};

TEST_P(PipelineE2E, FindsInjectedSlowFamily) {
  testing::SynthSpec spec;
  spec.faults = {{0, 9, "aten::mm", 3.0, 1.0}, {0, 14, "ncclAllReduce", 4.0, 1.0},
                 {0, 14, "ncclAllGather", 4.0, 1.0}, {0, 17, "aten::add", 4.0, 0.15}};
  auto synth = testing::MakeSyntheticTrees(spec);
  if (const char* dump = std::getenv("TRUFFLD_DIAG_DUMP")) {
    std::ofstream(std::string(dump) + "/trees.jsonl") << synth.trees;
    std::ofstream(std::string(dump) + "/labels.jsonl") << synth.labels;
  }
  ReadStats rs;
  InstanceTable t = LoadTrees(synth.trees, &rs);
  ASSERT_EQ(rs.bad_lines, 0u);
  // 2 requests per step share every operator: half of all operator nodes are duplicates.
  EXPECT_EQ(rs.duplicate_instances, rs.instances);
  InstanceTable ref;
  StageOneOptions o;
  o.mode = GetParam();
  if (o.mode == ScoringMode::kReference) {
    testing::SynthSpec healthy = spec;
    healthy.faults.clear();
    healthy.seed = 99;
    ref = LoadTrees(testing::MakeSyntheticTrees(healthy).trees);
  }
  StageTwo stage2(OfflineConfig());
  auto r = RunPipeline(t, &ref, o, stage2);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const StepDiagnosis* v9 = Find(r->diagnoses, 9, "vertical");
  ASSERT_NE(v9, nullptr);
  bool mm_candidate = false;
  for (const auto& f : v9->evidence.families) {
    if (f.family == "aten::mm") mm_candidate = f.candidate;
  }
  // Fitting inside one step cannot see a family that is uniformly slow in that step.
  if (o.mode != ScoringMode::kWithinStep) {
    EXPECT_TRUE(mm_candidate) << ScoringModeName(o.mode);
  }
  // A slowdown of 2 of the 12 instances is visible to every mode.
  const StepDiagnosis* v17 = Find(r->diagnoses, 17, "vertical");
  ASSERT_NE(v17, nullptr);
  EXPECT_EQ(v17->evidence.families.at(0).family, "aten::add") << ScoringModeName(o.mode);
  EXPECT_TRUE(v17->evidence.families.at(0).candidate) << ScoringModeName(o.mode);
  const StepDiagnosis* h14 = Find(r->diagnoses, 14, "horizontal");
  ASSERT_NE(h14, nullptr);
  EXPECT_TRUE(h14->evidence.families.at(0).family.rfind("nccl", 0) == 0);
  int abnormal = 0;
  for (const auto& s : r->diagnoses) {
    abnormal += s.abnormal;
    if (std::getenv("TRUFFLD_DIAG_VERBOSE")) {
      std::printf("%s step %ld %s abnormal=%d thr=%.3f:", ScoringModeName(o.mode), (long)s.evidence.step_index,
                  ViewName(s.evidence.view), s.abnormal, s.threshold);
      for (auto& f : s.evidence.families) std::printf(" %s=%.3g%s", f.family.c_str(), f.probability, f.candidate ? "*" : "");
      std::printf(" | %s\n", s.decision.rationale.c_str());
    }
  }
  if (o.mode != ScoringMode::kWithinStep) {
    // Uniform slowdowns are visible to pooled and reference modes.
    EXPECT_TRUE(v9->abnormal);
    EXPECT_TRUE(h14->abnormal);
    EXPECT_LE(abnormal, 4);
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, PipelineE2E,
                         ::testing::Values(ScoringMode::kPooled, ScoringMode::kReference,
                                           ScoringMode::kWithinStep));

}  // namespace
}  // namespace truffld::diagnose
