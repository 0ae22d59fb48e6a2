// Stage I populations: graph (decode) vs eager steps, and instances rebuilt from CUDA-graph
// replays vs traced host ranges of the same family, are modelled apart by default.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "legacy/stage1.h"

namespace truffld::diagnose {
namespace {

// 40 steps of aten::mm. Graph steps (odd): 6 replayed instances (~10 us, no API call of their
// own, cudaGraphLaunch as API name) and 1 traced LM-head instance (~1 ms, one runtime call).
// Eager steps (even): 6 traced instances of ~200 us. `slow_step` multiplies the LM-head time.
InstanceTable MixedTable(int slow_step = -1, double factor = 1.0) {
  InstanceTable t;
  std::mt19937_64 rng(7);
  std::normal_distribution<double> jit(0.0, 0.05);
  const uint32_t mm = t.strings.Intern("aten::mm"), layer = t.strings.Intern("backend_op");
  const uint32_t launch = t.strings.Intern("cudaGraphLaunch"), lk = t.strings.Intern("cudaLaunchKernel");
  auto add = [&](double dur, bool replay) {
    FeatureVector f{};
    f[kDurationNs] = dur * std::exp(jit(rng));
    f[kSelfTimeNs] = f[kDurationNs];
    f[kKernelCount] = 1;
    f[kKernelTimeNs] = 0.8 * f[kDurationNs];
    f[kRuntimeCount] = replay ? 0 : 1;
    f[kRuntimeTimeNs] = replay ? 0 : 3000 * std::exp(jit(rng));
    t.Add(mm, layer, kNoString, 0, static_cast<int64_t>(f[kDurationNs]), f);
    t.kernels.push_back({});
    t.api_calls.push_back({NameCount{replay ? launch : lk, 1}});
  };
  for (int s = 0; s < 40; ++s) {
    StepInfo st;
    st.rank = 0;
    st.step_index = s;
    st.view = View::kVertical;
    st.regime = s % 2 ? Regime::kGraph : Regime::kEager;
    st.first_instance = static_cast<uint32_t>(t.size());
    t.steps.push_back(st);
    if (s % 2) {
      for (int i = 0; i < 6; ++i) add(10'000, true);
      add(1'000'000 * (s == slow_step ? factor : 1.0), false);
    } else {
      for (int i = 0; i < 6; ++i) add(200'000, false);
    }
  }
  return t;
}

int StrongIn(const StageOneResult& r, const InstanceTable& t, int step) {
  int n = 0;
  const StepInfo& st = t.steps[static_cast<size_t>(step)];
  for (uint32_t i = st.first_instance; i < st.first_instance + st.instance_count; ++i) n += r.rho[i] < 1e-6;
  return n;
}

TEST(Stage1Regime, RecognisesReplayedInstances) {
  InstanceTable t = MixedTable();
  const StepInfo& g = t.steps[1];
  for (uint32_t i = g.first_instance; i < g.first_instance + 6; ++i) EXPECT_TRUE(IsGraphReplayInstance(t, i));
  EXPECT_FALSE(IsGraphReplayInstance(t, g.first_instance + 6));  // the traced LM-head range
  EXPECT_FALSE(IsGraphReplayInstance(t, t.steps[0].first_instance));
  InstanceTable bare = MixedTable();
  bare.api_calls.clear();  // tables without API names (benchmarks) have no replay instances
  EXPECT_FALSE(IsGraphReplayInstance(bare, g.first_instance));
}

TEST(Stage1Regime, DefaultsModelRegimesAndReplaysApart) {
  StageOneOptions o;
  EXPECT_TRUE(o.split_regime);
  EXPECT_TRUE(o.split_graph_replay);
  InstanceTable t = MixedTable();
  auto r = RunStageOne(t, nullptr, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->models.size(), 3u);  // eager, graph (traced LM head), graph/replay
  o.split_regime = false;
  o.split_graph_replay = false;
  auto pooled = RunStageOne(t, nullptr, o);
  ASSERT_TRUE(pooled.ok());
  EXPECT_EQ(pooled->models.size(), 1u);
}

TEST(Stage1Regime, SlowTracedRangeInAReplayStepIsStrongAndNothingElse) {
  // The LM-head range is 1 of 7 instances of its family in a graph step; 2.5x slower it must be
  // strong against its own population, and no healthy step may hold a strong instance.
  InstanceTable t = MixedTable(21, 2.5);
  StageOneOptions o;
  auto r = RunStageOne(t, nullptr, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(StrongIn(*r, t, 21), 1);
  int healthy_strong = 0;
  for (int s = 0; s < 40; ++s) healthy_strong += s == 21 ? 0 : StrongIn(*r, t, s);
  EXPECT_EQ(healthy_strong, 0);
}

}  // namespace
}  // namespace truffld::diagnose
