// TreeReader on CUDA-graph replays: the device nodes under a cudaGraphLaunch carry
// `captured_in` (the operator open at capture time) and are rebuilt into operator instances.
#include <gtest/gtest.h>

#include <string>

#include "read/tree_reader.h"

namespace truffld::diagnose {
namespace {

// One decode step replayed from a graph: an all-reduce, two kernels captured under one
// attention op, a kernel with no captured_in (ignored), then a second all-reduce.
std::string GraphStep(const char* request, const char* view) {
  const std::string launch =
      R"({"name":"cudaGraphLaunch_v10000","layer":"runtime_call","family":"cudaGraphLaunch","start":10,"end":20,"thread_id":7,"children":[)"
      R"({"name":"nccl1","layer":"kernel","family":"ncclDevKernel_AllReduce","start":30,"end":50,"captured_in":{"name":"ncclAllReduce","layer":"comm","family":"ncclAllReduce"}},)"
      R"({"name":"attn_a","layer":"kernel","family":"flash_fwd","start":60,"end":80,"captured_in":{"name":"vllm::unified_attention_with_output, op_id = 9","layer":"backend_op","family":"vllm::unified_attention_with_output"}},)"
      R"({"name":"attn_b","layer":"kernel","family":"flash_combine","start":85,"end":100,"captured_in":{"name":"vllm::unified_attention_with_output, op_id = 9","layer":"backend_op","family":"vllm::unified_attention_with_output"}},)"
      R"({"name":"loose","layer":"kernel","family":"loose","start":101,"end":105},)"
      R"({"name":"nccl2","layer":"kernel","family":"ncclDevKernel_AllReduce","start":110,"end":140,"captured_in":{"name":"ncclAllReduce","layer":"comm","family":"ncclAllReduce"}}]})";
  const bool vertical = std::string(view) == "vertical";
  return std::string(R"({"schema":"truffld.trees/1","rank":0,"step_index":3,"step":"s","requests":["a","b"],"request":")") +
         request + R"(","view":")" + view +
         R"(","phase":"decode","start":0,"end":200,"root":{"name":"s","layer":"step","family":"step","start":0,"end":200,"children":[)" +
         (vertical ? launch : "") + "]}}";
}

const StepInfo* FindStep(const InstanceTable& t, const char* view) {
  for (const StepInfo& s : t.steps) if (std::string_view(ViewName(s.view)) == view) return &s;
  return nullptr;
}

TEST(TreeReaderGraph, CapturedInBecomesInstancesInTheRightView) {
  TreeReader r;
  r.set_outside_time(false);  // operator instances only (outside_time_test.cc)
  r.set_graph_vertical_ops(true);
  r.ParseLine(GraphStep("a", "vertical"), "t:1");
  r.ParseLine(GraphStep("b", "vertical"), "t:2");  // same graph nodes via request b: deduplicated
  r.ParseLine(GraphStep("a", "horizontal"), "t:3");
  EXPECT_EQ(r.stats().bad_lines, 0u);
  EXPECT_EQ(r.stats().graph_instances, 3u);
  EXPECT_EQ(r.stats().duplicate_instances, 3u);
  InstanceTable t = r.Finish();
  const StepInfo* h = FindStep(t, "horizontal");
  const StepInfo* v = FindStep(t, "vertical");
  ASSERT_NE(h, nullptr);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(h->step_index, 3);
  EXPECT_EQ(h->regime, Regime::kGraph);
  ASSERT_EQ(h->instance_count, 2u);  // two all-reduces, not merged: another capture lies between
  for (uint32_t i = h->first_instance; i < h->first_instance + h->instance_count; ++i) {
    EXPECT_EQ(t.strings.Get(t.family[i]), "ncclAllReduce");
    EXPECT_EQ(t.strings.Get(t.layer[i]), "comm");
    EXPECT_EQ(t.features[i][kKernelCount], 1);
    EXPECT_EQ(t.features[i][kWorldSize], 0);
    EXPECT_EQ(t.features[i][kLaunchLatencyNs], 20);  // launch call start -> first graph node
  }
  EXPECT_EQ(t.features[h->first_instance][kDurationNs], 20);
  EXPECT_EQ(t.features[h->first_instance + 1][kDurationNs], 30);

  ASSERT_EQ(v->instance_count, 1u);
  const uint32_t a = v->first_instance;
  EXPECT_EQ(t.strings.Get(t.family[a]), "vllm::unified_attention_with_output");
  EXPECT_EQ(t.strings.Get(t.layer[a]), "backend_op");
  EXPECT_EQ(t.start_ns[a], 60);
  EXPECT_EQ(t.end_ns[a], 100);
  EXPECT_EQ(t.features[a][kDurationNs], 40);
  EXPECT_EQ(t.features[a][kKernelCount], 2);
  EXPECT_EQ(t.features[a][kKernelTimeNs], 35);
  EXPECT_EQ(t.parent[a], kNoString);
  EXPECT_EQ(t.detail[a].graph_launch, 10);  // the cudaGraphLaunch call's start, for the replay
}

TEST(TreeReaderGraph, DefaultKeepsOnlyCommCapturesAndFillsAMissingHorizontalStep) {
  TreeReader r;  // no horizontal tree for the step is read here
  r.set_outside_time(false);  // operator instances only (outside_time_test.cc)
  r.ParseLine(GraphStep("a", "vertical"), "t:1");
  InstanceTable t = r.Finish();
  const StepInfo* h = FindStep(t, "horizontal");
  const StepInfo* v = FindStep(t, "vertical");
  ASSERT_NE(h, nullptr);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(h->step_index, 3);
  EXPECT_EQ(h->phase, "decode");
  EXPECT_EQ(h->instance_count, 2u);
  EXPECT_EQ(v->instance_count, 0u);  // non-comm captures are opt-in
}

}  // namespace
}  // namespace truffld::diagnose
