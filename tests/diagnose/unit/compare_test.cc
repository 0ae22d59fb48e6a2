// Run comparison at equal workload (compare/compare.h) on hand-built tables: a family 1.2x
// slower found with its interval and named as the step time's cause; the same run against
// itself and a noisy copy raise nothing; too few steps are insufficient evidence.
#include <gtest/gtest.h>

#include <cmath>

#include "compare/compare.h"

namespace truffld::diagnose {
namespace {

// 60 decode steps, tokens cycling 8..13; per step one aten::mm whose kernel time is
// (1000 + 50 * tokens) * mm_factor * jitter and one aten::add of 200 ns kernel time.
InstanceTable CmpRun(double mm_factor, uint64_t seed) {
  InstanceTable t;
  const uint32_t mm = t.strings.Intern("aten::mm"), add = t.strings.Intern("aten::add");
  const uint32_t layer = t.strings.Intern("backend_op");
  uint64_t x = seed * 2654435761u + 1;
  auto jitter = [&] {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return 1.0 + 0.02 * (double(x >> 40) / double(1ULL << 24) - 0.5);
  };
  for (int s = 0; s < 60; ++s) {
    StepInfo st;
    st.rank = 0;
    st.step_index = s;
    st.phase = "decode";
    st.tokens = 8 + s % 6;
    st.batch = st.tokens;
    st.start_ns = s * 10000;
    const double mm_ns = (1000 + 50 * double(st.tokens)) * mm_factor * jitter();
    st.end_ns = st.start_ns + int64_t(mm_ns) + 200 + 500;
    st.first_instance = uint32_t(t.family.size());
    t.steps.push_back(st);
    FeatureVector f{};
    f[kKernelTimeNs] = mm_ns;
    f[kDurationNs] = mm_ns;
    t.Add(mm, layer, kNoString, st.start_ns, st.start_ns + int64_t(mm_ns), f);
    f[kKernelTimeNs] = 200 * jitter();
    t.Add(add, layer, kNoString, st.start_ns, st.start_ns + 200, f);
  }
  return t;
}

const FamilyChange* CmpFind(const CompareResult& r, const std::string& family) {
  for (const FamilyChange& f : r.families)
    if (f.family == family) return &f;
  return nullptr;
}

TEST(Compare, ASlowerFamilyIsFoundAtEqualWorkloadAndExplainsTheStepTime) {
  const CompareResult r = CompareRuns(CmpRun(1.2, 2), CmpRun(1.0, 1));
  const FamilyChange* mm = CmpFind(r, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_TRUE(mm->significant);
  EXPECT_NEAR(mm->ratio, 1.2, 0.02);
  EXPECT_LT(mm->ci_low, mm->ratio);
  EXPECT_GT(mm->ci_high, mm->ratio);
  EXPECT_EQ(mm->metric, "device");
  EXPECT_FALSE(CmpFind(r, "aten::add")->significant);
  ASSERT_EQ(r.step_time.size(), 1u);
  EXPECT_TRUE(r.step_time[0].significant);
  EXPECT_NE(r.sentence.find("aten::mm (device, vertical, decode) 1.20x"), std::string::npos) << r.sentence;
  EXPECT_NE(FormatCompare(r).find("significant"), std::string::npos);
  const auto j = CompareJson(r, "t", "b", CompareOptions{});
  EXPECT_EQ(j["schema"], "truffld.compare/1");
}

TEST(Compare, HealthyPairsRaiseNothing) {
  for (uint64_t seed : {3u, 4u, 5u}) {
    const CompareResult r = CompareRuns(CmpRun(1.0, seed), CmpRun(1.0, seed + 10));
    for (const FamilyChange& f : r.families) EXPECT_FALSE(f.significant) << f.family << " seed " << seed;
    for (const StepTimeChange& s : r.step_time) EXPECT_FALSE(s.significant);
    EXPECT_NE(r.sentence.find("no significant change"), std::string::npos) << r.sentence;
  }
}

TEST(Compare, FewStepsAreInsufficientEvidence) {
  InstanceTable small = CmpRun(1.2, 2);
  small.steps.resize(3);
  small.step.resize(6), small.family.resize(6), small.layer.resize(6), small.parent.resize(6);
  small.start_ns.resize(6), small.end_ns.resize(6), small.features.resize(6);
  const CompareResult r = CompareRuns(small, CmpRun(1.0, 1));
  EXPECT_TRUE(CmpFind(r, "aten::mm")->insufficient);
  EXPECT_NE(r.sentence.find("insufficient evidence"), std::string::npos) << r.sentence;
}

TEST(Compare, AWorkloadTheBaselineNeverRanIsLeftOut) {
  InstanceTable t = CmpRun(1.0, 2);
  for (StepInfo& s : t.steps) s.tokens = s.batch = 100;  // the baseline ran 8..13
  const CompareResult r = CompareRuns(t, CmpRun(1.0, 1));
  const FamilyChange* mm = CmpFind(r, "aten::mm");
  EXPECT_EQ(mm->outside_range, 60u);
  EXPECT_TRUE(mm->insufficient);
}

}  // namespace
}  // namespace truffld::diagnose
