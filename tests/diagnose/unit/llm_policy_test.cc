// The offline Stage II decision policy, rule by rule, on hand-built evidence.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "../llm_test_helpers.h"
#include "stage2/llm_policy.h"
#include "stage2/llm_stage2.h"

namespace truffld::diagnose {
namespace {

using Names = std::vector<std::string>;
using truffld::testing::Fam;
using truffld::testing::Step;

TEST(LlmPolicy, ClassifiesStrongWeakNormalAtTheBoundaries) {
  EXPECT_EQ(ClassifyProbability(0.0), AnomalyClass::kStrong);
  EXPECT_EQ(ClassifyProbability(9.99e-7), AnomalyClass::kStrong);
  EXPECT_EQ(ClassifyProbability(1e-6), AnomalyClass::kWeak);  // strictly below 1e-6 is strong
  EXPECT_EQ(ClassifyProbability(0.4999), AnomalyClass::kWeak);
  EXPECT_EQ(ClassifyProbability(0.5), AnomalyClass::kNone);
  EXPECT_EQ(ClassifyProbability(1.0), AnomalyClass::kNone);
  EXPECT_EQ(ClassifyProbability(std::nan("")), AnomalyClass::kNone);
  EXPECT_EQ(ClassifyProbability(-0.1), AnomalyClass::kNone);
  EXPECT_EQ(ClassifyProbability(1.5), AnomalyClass::kNone);
}

TEST(LlmPolicy, HorizontalOneStrongIsNormalWithEmptyList) {
  StageTwoDecision d = DecideOffline(Step("horizontal", {Fam("ncclAllReduce", 1e-12), Fam("ncclAllGather", 0.1)}));
  EXPECT_FALSE(d.abnormal);
  EXPECT_TRUE(d.faulty.empty());
  EXPECT_EQ(d.source, DecisionSource::kOffline);
  EXPECT_NE(d.rationale.find("horizontal"), std::string::npos);
}

TEST(LlmPolicy, HorizontalTwoStrongIsAbnormal) {
  StageTwoDecision d = DecideOffline(
      Step("horizontal", {Fam("ncclAllReduce", 1e-12), Fam("ncclAllGather", 3e-9), Fam("ncclSend", 0.9)}));
  EXPECT_TRUE(d.abnormal);
  EXPECT_EQ(d.faulty, (Names{"ncclAllReduce", "ncclAllGather"}));
}

TEST(LlmPolicy, VerticalTenPercentRuleCountsInstances) {
  // 4 strong instances of 40 = 10%: not below 10%, so abnormal.
  std::vector<FamilyEvidence> fams = {Fam("bad", 0.3)};
  fams[0].strong_instances = 4;
  fams[0].weak_instances = 4;
  for (int i = 0; i < 9; ++i) fams.push_back(Fam("ok" + std::to_string(i), 0.9));  // 4 each
  StageTwoDecision abnormal = DecideOffline(Step("vertical", fams));
  EXPECT_TRUE(abnormal.abnormal);
  EXPECT_EQ(abnormal.faulty, (Names{"bad"}));  // listed although its rho-bar is only weak
  // 4 of 41 = 9.8%: normal under the fraction rule alone (count rule off), list empty.
  fams[1].instances = 5;
  PolicyThresholds fraction_only;
  fraction_only.vertical_min_strong = 0;
  StageTwoDecision d = DecideOffline(Step("vertical", fams), fraction_only);
  EXPECT_FALSE(d.abnormal);
  EXPECT_TRUE(d.faulty.empty());
  // With the default count rule, 4 strong instances are abnormal whatever the step's size.
  EXPECT_TRUE(DecideOffline(Step("vertical", fams)).abnormal);
}

TEST(LlmPolicy, VerticalCountRuleSeesFaultsInLargeSteps) {
  // A prefill-sized step: one family slowed in 3 of its instances among 400 (0.75%).
  StepEvidence s = Step("vertical", {Fam("_C::rms_norm", 0.2), Fam("aten::mm", 0.9)});
  s.families[0].instances = 9;
  s.families[0].strong_instances = 3;
  s.families[0].weak_instances = 3;
  s.families[1].instances = 391;
  StageTwoDecision d = DecideOffline(s);
  EXPECT_TRUE(d.abnormal);
  EXPECT_EQ(d.faulty, (Names{"_C::rms_norm"}));
  EXPECT_NE(d.rationale.find(">= 3 strong"), std::string::npos) << d.rationale;
  // Two strong instances of 400 stay normal (neither 10% nor 3).
  s.families[0].strong_instances = 2;
  d = DecideOffline(s);
  EXPECT_FALSE(d.abnormal);
  EXPECT_NE(d.rationale.find("< 3 strong"), std::string::npos) << d.rationale;
  // Two of 16 is still abnormal by the fraction rule (12.5%).
  s.families[1].instances = 7;
  EXPECT_TRUE(DecideOffline(s).abnormal);
  // The count rule can be turned off.
  PolicyThresholds off;
  off.vertical_min_strong = 0;
  s.families[0].strong_instances = 3;
  s.families[1].instances = 391;
  EXPECT_FALSE(DecideOffline(s, off).abnormal);
}

TEST(LlmPolicy, VerticalRatioIsOverInstancesNotFamilies) {
  // One strong instance in one of two families used to be 50%; over 1000 instances it is 0.1%.
  StepEvidence s = Step("vertical", {Fam("bad", 1e-9), Fam("ok", 0.9)});
  s.families[1].instances = 1000;
  EXPECT_FALSE(DecideOffline(s).abnormal);
  s.families[0].instances = 200;
  s.families[0].strong_instances = 150;  // 150 of 1200 = 12.5%
  EXPECT_TRUE(DecideOffline(s).abnormal);
}

TEST(LlmPolicy, HorizontalManyStrongInstancesOfOneFamilyIsAbnormal) {
  // A slow link slows many all-reduce calls: one family, many strong instances.
  StepEvidence s = Step("horizontal", {Fam("ncclAllReduce", 0.2), Fam("ncclAllGather", 0.9)});
  s.families[0].strong_instances = 3;
  StageTwoDecision d = DecideOffline(s);
  EXPECT_TRUE(d.abnormal);
  EXPECT_EQ(d.faulty, (Names{"ncclAllReduce"}));
  s.families[0].strong_instances = 1;  // a single strong instance stays normal
  EXPECT_FALSE(DecideOffline(s).abnormal);
}

TEST(LlmPolicy, WeakAnomaliesAloneNeverMakeAStepAbnormal) {
  EXPECT_FALSE(DecideOffline(Step("vertical", {Fam("a", 0.01), Fam("b", 0.02)})).abnormal);
  EXPECT_FALSE(DecideOffline(Step("horizontal", {Fam("a", 1e-5), Fam("b", 1e-5)})).abnormal);
}

TEST(LlmPolicy, PropagatesUpwardTransitivelyButNeverDownward) {
  StepEvidence s = Step(
      "vertical", {Fam("root", 0.9), Fam("mid", 0.9, "root"), Fam("leaf", 1e-10, "mid"),
                   Fam("child_of_leaf", 0.9, "leaf"), Fam("x", 0.9, "root")});
  for (FamilyEvidence& f : s.families) f.instances = 1;  // 1 strong of 5 instances: abnormal
  StageTwoDecision d = DecideOffline(s);
  EXPECT_TRUE(d.abnormal);
  EXPECT_EQ(d.faulty, (Names{"leaf", "mid", "root"}));  // child_of_leaf and x not added
}

TEST(LlmPolicy, ParentsAbsentFromTheStepAreNotAdded) {
  StageTwoDecision d = DecideOffline(Step("vertical", {Fam("leaf", 1e-10, "not_in_step"), Fam("ok", 0.9)}));
  EXPECT_EQ(d.faulty, (Names{"leaf"}));
}

TEST(LlmPolicy, RelatedWeakSiblingsAreIncludedUnrelatedWeakAreNot) {
  StepEvidence s = Step("vertical", {Fam("p", 0.9), Fam("strong", 1e-9, "p"), Fam("weak_sibling", 0.2, "p"),
                                     Fam("q", 0.9), Fam("weak_elsewhere", 0.2, "q")});
  for (FamilyEvidence& f : s.families) f.instances = 1;  // 1 strong of 5 instances: abnormal
  EXPECT_EQ(DecideOffline(s).faulty, (Names{"strong", "weak_sibling", "p"}));
  PolicyThresholds strict_only;
  strict_only.include_related_weak = false;
  EXPECT_EQ(DecideOffline(s, strict_only).faulty, (Names{"strong", "p"}));
}

TEST(LlmPolicy, UnknownViewUsesTheVerticalRule) {
  EXPECT_TRUE(DecideOffline(Step("", {Fam("bad", 1e-9)})).abnormal);
  EXPECT_FALSE(DecideOffline(Step("", {Fam("bad", 1e-9)})).faulty.empty());
}

TEST(LlmPolicy, EmptyStepIsNormal) {
  StageTwoDecision d = DecideOffline(Step("vertical", {}));
  EXPECT_FALSE(d.abnormal);
  EXPECT_TRUE(d.faulty.empty());
}

TEST(LlmPolicy, InvalidProbabilitiesAreNotAnomaliesAndAreNoted) {
  StageTwoDecision d = DecideOffline(
      Step("vertical", {Fam("nan", std::numeric_limits<double>::quiet_NaN()), Fam("ok", 0.9)}));
  EXPECT_FALSE(d.abnormal);
  EXPECT_NE(d.note.find("outside [0,1]"), std::string::npos);
}

TEST(LlmPolicy, DuplicateFamiliesAreListedOnce) {
  StageTwoDecision d = DecideOffline(Step("horizontal", {Fam("a", 1e-9), Fam("a", 1e-9), Fam("b", 1e-9)}));
  EXPECT_EQ(d.faulty, (Names{"a", "b"}));
}

TEST(LlmPolicy, PropagateUpwardSurvivesParentCycles) {
  StepEvidence s = Step("vertical", {Fam("a", 0.9, "b"), Fam("b", 0.9, "a")});
  EXPECT_EQ(PropagateUpward(s, {"a"}), (Names{"a", "b"}));
}

TEST(LlmPolicy, DecisionSourceNames) {
  EXPECT_STREQ(DecisionSourceName(DecisionSource::kLlm), "llm");
  EXPECT_STREQ(DecisionSourceName(DecisionSource::kOffline), "offline");
  EXPECT_STREQ(DecisionSourceName(DecisionSource::kLlmFallbackOffline), "offline-fallback");
  EXPECT_STREQ(DecisionSourceName(DecisionSource::kCache), "cache");
}

}  // namespace
}  // namespace truffld::diagnose
