// Per-request breakdown (report/requests.h) on hand-built diagnoses.
#include <gtest/gtest.h>

#include "report/requests.h"

namespace truffld::diagnose {
namespace {

StepDiagnosis Unit(int64_t rank, int64_t step, View view, int64_t start, int64_t end, const std::string& phase,
                   std::vector<std::string> requests) {
  StepDiagnosis d;
  d.evidence.rank = rank;
  d.evidence.step_index = step;
  d.evidence.view = view;
  d.evidence.start_ns = start;
  d.evidence.end_ns = end;
  d.evidence.phase = phase;
  d.evidence.requests = std::move(requests);
  return d;
}

StepDiagnosis Abnormal(StepDiagnosis d, double impact, const std::string& family) {
  d.label = Verdict::kAbnormal;
  d.abnormal = true;
  PeerUnitEvidence p;
  p.impact_ns = impact;
  d.evidence.peer = p;
  FaultyOperator f;
  f.family = family;
  d.faulty.push_back(f);
  return d;
}

TEST(Requests, StepsTimesAndImpactOncePerStep) {
  // Request a: prefill in two chunks (steps 0, 1) on ranks 0 and 1, decode in 2 and 4; b joins
  // at step 3. Rank 1's step 2 and rank 0's step 2 are both abnormal: the larger impact counts.
  std::vector<StepDiagnosis> d;
  for (int64_t rank : {1, 0}) {
    d.push_back(Unit(rank, 0, View::kVertical, 0, 100, "prefill", {"a"}));
    d.push_back(Unit(rank, 1, View::kVertical, 110, 200, "prefill", {"a"}));
    d.push_back(Unit(rank, 2, View::kVertical, 210, 260, "decode", {"a"}));
    d.push_back(Unit(rank, 3, View::kVertical, 300, 400, "prefill", {"b"}));
    d.push_back(Unit(rank, 4, View::kVertical, 410, 460, "decode", {"a", "b"}));
  }
  d[2] = Abnormal(d[2], 30, "aten::mm");                                                   // rank 1, step 2
  d.push_back(Abnormal(Unit(0, 2, View::kHorizontal, 210, 260, "decode", {"a"}), 20, "ncclAllReduce"));
  const auto r = SummariseRequests(d);
  ASSERT_EQ(r.size(), 2u);
  const RequestSummary& a = r[0];
  EXPECT_EQ(a.id, "a");
  EXPECT_EQ(a.lead_rank, 0);
  EXPECT_EQ(a.ranks, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(a.steps, (std::vector<int64_t>{0, 1, 2, 4}));
  EXPECT_EQ(a.prefill_steps, 2);
  EXPECT_EQ(a.decode_steps, 2);
  EXPECT_EQ(a.ttft_ns, 200);
  ASSERT_TRUE(a.tpot_ns.has_value());
  EXPECT_DOUBLE_EQ(*a.tpot_ns, (460.0 - 200.0) / 2);
  EXPECT_EQ(a.in_steps_ns, 100 + 90 + 50 + 50);
  EXPECT_EQ(a.between_steps_ns, 460 - 290);
  EXPECT_EQ(a.abnormal.size(), 2u);
  EXPECT_DOUBLE_EQ(a.impact_ns, 30);  // both on step 2: the larger
  EXPECT_NE(a.reason.find("step 2 on rank 1 added"), std::string::npos) << a.reason;
  const RequestSummary& b = r[1];
  EXPECT_EQ(b.steps, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(b.ttft_ns, 100);
  EXPECT_TRUE(b.abnormal.empty());
  EXPECT_NE(b.reason.find("no abnormal step touched it"), std::string::npos);
  const auto p = RequestTimePercentiles(r);
  EXPECT_EQ(p.with_ttft, 2u);
  EXPECT_DOUBLE_EQ(p.ttft_p50, 150);
  const auto j = RequestJson(a);
  EXPECT_EQ(j["abnormal_units"], 2);
  EXPECT_EQ(j["abnormal"][0]["impact_ns"], 30);  // highest impact first
}

TEST(Requests, ARequestWithoutItsPrefillHasNoTtft) {
  std::vector<StepDiagnosis> d = {Unit(0, 0, View::kVertical, 0, 10, "decode", {"x"}),
                                  Unit(0, 1, View::kVertical, 20, 30, "decode", {"x"})};
  const auto r = SummariseRequests(d);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_FALSE(r[0].ttft_ns.has_value());
  EXPECT_FALSE(r[0].tpot_ns.has_value());
  EXPECT_EQ(RequestJson(r[0])["ttft_ns"], nullptr);
}

}  // namespace
}  // namespace truffld::diagnose
