// Evaluation metrics on hand-computed cases, and the labels.jsonl parser.
#include <gtest/gtest.h>

#include "report/metrics.h"

namespace truffld::diagnose {
namespace {

TEST(Metrics, StepLevelHandComputed) {
  StepMetrics m = ComputeStepMetrics(/*tp=*/3, /*fp=*/1, /*tn=*/5, /*fn=*/1);
  EXPECT_DOUBLE_EQ(m.accuracy, 0.8);        // (3+5)/10
  EXPECT_DOUBLE_EQ(m.precision, 0.75);      // 3/4
  EXPECT_DOUBLE_EQ(m.recall, 0.75);         // 3/4
  EXPECT_DOUBLE_EQ(m.f1, 6.0 / 8.0);        // 2*3/(6+1+1)
  StepMetrics none = ComputeStepMetrics(0, 0, 4, 0);
  EXPECT_DOUBLE_EQ(none.accuracy, 1.0);
  EXPECT_DOUBLE_EQ(none.precision, 0.0);    // undefined -> 0
  EXPECT_DOUBLE_EQ(none.f1, 0.0);
}

TEST(Metrics, FamilyLevelWithEpsilon) {
  FamilyMetrics f = ComputeFamilyMetrics("aten::mm", 2, 2, 0, 1e-9);
  EXPECT_NEAR(f.precision, 0.5, 1e-9);
  EXPECT_NEAR(f.recall, 1.0, 1e-9);
  EXPECT_NEAR(f.f1, 2 * 0.5 / 1.5, 1e-9);
  EXPECT_NEAR(f.jaccard, 0.5, 1e-9);
  EXPECT_TRUE(f.positive);
  FamilyMetrics z = ComputeFamilyMetrics("x", 0, 3, 0, 1e-9);
  EXPECT_DOUBLE_EQ(z.precision, 0.0);
  EXPECT_FALSE(z.positive);
}

TEST(Metrics, EvaluatePerViewWithMacroAndMacroPlus) {
  LabelSet labels;
  ParseLabelLine(R"({"rank":0,"step_index":1,"view":"vertical","abnormal":true,"faulty":["aten::mm"],"fault_ids":["f1"]})", "l:1", &labels);
  ParseLabelLine(R"({"rank":0,"step_index":2,"view":"vertical","abnormal":true,"faulty":["aten::add"]})", "l:2", &labels);
  ParseLabelLine(R"({"rank":0,"step_index":5,"view":"horizontal","abnormal":true,"faulty":["ncclAllReduce"]})", "l:3", &labels);
  ASSERT_EQ(labels.bad_lines, 0u);
  std::vector<Prediction> pred = {
      {{0, 0, false}, false, {}},
      {{0, 1, false}, true, {"aten::mm", "torch.nn.functional.linear"}},  // TP, mm TP, linear FP
      {{0, 2, false}, false, {}},                                         // FN, add FN
      {{0, 3, false}, true, {"aten::softmax"}},                           // FP
      {{0, 5, true}, true, {"ncclAllReduce"}},
  };
  auto ev = Evaluate(pred, labels);
  ASSERT_EQ(ev.size(), 2u);
  const ViewEvaluation& v = ev[0];
  EXPECT_EQ(v.view, "vertical");
  EXPECT_EQ(v.steps, 4);
  EXPECT_EQ(v.step.tp, 1); EXPECT_EQ(v.step.fp, 1); EXPECT_EQ(v.step.fn, 1); EXPECT_EQ(v.step.tn, 1);
  EXPECT_DOUBLE_EQ(v.step.accuracy, 0.5);
  // Families: aten::add (R 0), aten::mm (P=R=1), aten::softmax (P 0), linear (P 0).
  ASSERT_EQ(v.families.size(), 4u);
  EXPECT_EQ(v.macro.families, 4);
  EXPECT_NEAR(v.macro.f1, 1.0 / 4, 1e-6);
  EXPECT_NEAR(v.macro.jaccard, 1.0 / 4, 1e-6);
  EXPECT_EQ(v.macro_plus.families, 2);  // aten::mm and aten::add have true faults
  EXPECT_NEAR(v.macro_plus.f1, 0.5, 1e-6);
  EXPECT_NEAR(v.macro_plus.precision, 0.5, 1e-6);
  EXPECT_EQ(ev[1].view, "horizontal");
  EXPECT_DOUBLE_EQ(ev[1].step.f1, 1.0);
}

TEST(Metrics, LabelledStepMissingFromOutputCountsAsPredictedNormal) {
  LabelSet labels;
  ParseLabelLine(R"({"rank":1,"step_index":9,"view":"vertical","abnormal":true,"faulty":["aten::mm"]})", "l:1", &labels);
  auto ev = Evaluate({}, labels);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].labelled_steps_missing, 1);
  EXPECT_EQ(ev[0].step.fn, 1);
}

TEST(Metrics, BadLabelLinesAreCountedWithLocation) {
  LabelSet labels;
  ParseLabelLine("not json", "labels.jsonl:1", &labels);
  ParseLabelLine(R"({"step_index":1,"view":"sideways"})", "labels.jsonl:2", &labels);
  ParseLabelLine(R"({"step_index":-1,"view":"vertical"})", "labels.jsonl:3", &labels);
  ParseLabelLine(R"({"step_index":1,"view":"vertical","faulty":"aten::mm"})", "labels.jsonl:4", &labels);
  ParseLabelLine("", "labels.jsonl:5", &labels);
  EXPECT_EQ(labels.bad_lines, 4u);
  EXPECT_EQ(labels.lines, 4u);
  ASSERT_EQ(labels.problems.size(), 4u);
  EXPECT_NE(labels.problems[1].find("labels.jsonl:2: view"), std::string::npos);
  EXPECT_TRUE(labels.steps.empty());
}

}  // namespace
}  // namespace truffld::diagnose
