// The time no operator range covers (read/outside_time.h): host gaps between operators, the
// time between consecutive steps, calls issued directly under the step, and how the what-if
// replay treats the time between steps when the previous step's device work was still running.
#include <gtest/gtest.h>

#include <string>

#include "peer/replay.h"
#include "read/tree_reader.h"
#include "../tree_line.h"

namespace truffld::diagnose {
namespace {

using testing::OneLine;

std::string Op(const std::string& name, int64_t start, int64_t end, const std::string& children = "") {
  return R"({"name":")" + name + R"(","layer":"backend_op","family":")" + name + R"(","start":)" +
         std::to_string(start) + R"(,"end":)" + std::to_string(end) + R"(,"thread_id":7,"children":[)" + children + "]}";
}

std::string Call(const std::string& name, int64_t start, int64_t end, const std::string& children = "") {
  return R"({"name":")" + name + R"(","layer":"runtime_call","family":")" + name + R"(","start":)" +
         std::to_string(start) + R"(,"end":)" + std::to_string(end) + R"(,"thread_id":7,"children":[)" + children + "]}";
}

std::string Device(const std::string& layer, int64_t start, int64_t end) {
  return R"({"name":"k","layer":")" + layer + R"(","family":"k","bytes":4096,"copy_kind":"HtoD","start":)" +
         std::to_string(start) + R"(,"end":)" + std::to_string(end) + "}";
}

std::string Step(int64_t index, int64_t start, int64_t end, const std::string& requests, const std::string& children) {
  return OneLine(R"({"schema":"truffld.trees/1","rank":0,"process_id":1,"step_index":)" + std::to_string(index) +
                 R"(,"step":"s","requests":[)" + requests + R"(],"view":"vertical","start":)" + std::to_string(start) +
                 R"(,"end":)" + std::to_string(end) + R"(,"root":{"name":"s","layer":"step","family":"step","start":)" +
                 std::to_string(start) + R"(,"end":)" + std::to_string(end) + R"(,"children":[)" + children + "]}}");
}

// The instance of `family` in step unit `u`, or -1.
int Find(const InstanceTable& t, uint32_t u, const char* family) {
  const StepInfo& s = t.steps[u];
  for (uint32_t i = s.first_instance; i < s.first_instance + s.instance_count; ++i)
    if (t.strings.Get(t.family[i]) == family) return static_cast<int>(i);
  return -1;
}

TEST(OutsideTime, HostGapsAreOneInstanceAtTheLargestGap) {
  TreeReader r;
  r.ParseLine(Step(0, 0, 1000, R"("a")", Op("aten::mm", 100, 300) + "," + Op("aten::add", 500, 900)), "t:1");
  r.ParseLine(Step(0, 0, 1000, R"("b")", Op("aten::mm", 100, 300) + "," + Op("aten::add", 500, 900)), "t:2");
  EXPECT_EQ(r.stats().duplicate_instances, 2u);  // the second request's tree repeats the operators
  const InstanceTable t = r.Finish();
  ASSERT_EQ(t.steps.size(), 1u);
  ASSERT_EQ(t.size(), 3u);
  const int g = Find(t, 0, kHostOutsideFamily);
  ASSERT_EQ(g, 2);  // after the operators, outside their nesting
  EXPECT_FLOAT_EQ(t.detail[g].host_ns, 100 + 200 + 100);
  EXPECT_EQ(t.features[g][kDurationNs], 400);
  EXPECT_EQ(t.start_ns[g], 300);  // the largest gap, where the replay cuts it
  EXPECT_EQ(t.end_ns[g], 500);
  EXPECT_TRUE(t.detail[g].flags & kDetailOutside);
  EXPECT_FALSE(t.detail[g].flags & kDetailHasDevice);
  EXPECT_EQ(t.strings.Get(t.layer[g]), "other");
  EXPECT_EQ(t.detail[g].parent, -1);
  EXPECT_EQ(r.stats().outside_instances, 1u);
}

TEST(OutsideTime, CallsUnderTheStepAreJudgedAndCoverTheirTime) {
  TreeReader r;
  // Times in us (x1000 ns). An input copy issued directly under the step, then a graph launch (its
  // nodes are judged by the operators that captured them: only its host time counts here).
  const std::string copy = Call("cudaMemcpyAsync", 20000, 80000, Device("memcpy", 90000, 190000));
  const std::string graph = Call("cudaGraphLaunch", 700000, 760000, Device("kernel", 770000, 990000));
  r.ParseLine(Step(0, 0, 1000000, R"("a")", copy + "," + Op("aten::mm", 100000, 600000) + "," + graph), "t:1");
  const InstanceTable t = r.Finish();
  const int c = Find(t, 0, kStepCallsFamily);
  ASSERT_GE(c, 0);
  EXPECT_EQ(t.start_ns[c], 20000);
  EXPECT_EQ(t.end_ns[c], 760000);
  EXPECT_FLOAT_EQ(t.detail[c].host_ns, 60000 + 60000);
  EXPECT_FLOAT_EQ(t.detail[c].wait_ns, 0);        // the copy returned before it ran
  EXPECT_FLOAT_EQ(t.detail[c].device_ns, 100000);  // the copy; not the graph's kernel
  EXPECT_EQ(t.detail[c].device_start, 90000);
  EXPECT_EQ(t.detail[c].device_end, 190000);
  EXPECT_TRUE(t.detail[c].flags & kDetailHasDevice);
  EXPECT_EQ(t.features[c][kBytesMoved], 4096);
  // Gaps: [0,20) [80,100) [600,700) [760,1000) us: the calls' time is not a gap.
  const int g = Find(t, 0, kHostOutsideFamily);
  ASSERT_GE(g, 0);
  EXPECT_FLOAT_EQ(t.detail[g].host_ns, 20000 + 20000 + 100000 + 240000);
  EXPECT_EQ(t.start_ns[g], 760000);
}

TEST(OutsideTime, TimeBetweenStepsWhenTheyShareWork) {
  TreeReader r;
  r.ParseLine(Step(0, 0, 1000, R"("a","b")", Op("aten::mm", 0, 1000)), "t:1");
  r.ParseLine(Step(1, 1500, 2500, R"("b","c")", Op("aten::mm", 1500, 2500)), "t:2");  // shares b
  r.ParseLine(Step(2, 2600, 3000, R"("d")", Op("aten::mm", 2600, 3000)), "t:3");      // new work only
  r.ParseLine(Step(4, 3100, 3500, R"("d")", Op("aten::mm", 3100, 3500)), "t:4");      // step 3 missing
  const InstanceTable t = r.Finish();
  ASSERT_EQ(t.steps.size(), 4u);
  EXPECT_EQ(Find(t, 0, kBetweenStepsFamily), -1);  // the first step has no previous one
  const int b = Find(t, 1, kBetweenStepsFamily);
  ASSERT_GE(b, 0);
  EXPECT_EQ(t.start_ns[b], 1000);
  EXPECT_EQ(t.end_ns[b], 1500);
  EXPECT_FLOAT_EQ(t.detail[b].host_ns, 500);
  EXPECT_TRUE(t.detail[b].flags & kDetailGroupCost);  // the whole TP group waits for the scheduler
  EXPECT_EQ(Find(t, 2, kBetweenStepsFamily), -1);  // a and b done: the engine may have had nothing to do
  EXPECT_EQ(Find(t, 3, kBetweenStepsFamily), -1);  // not consecutive
  // A prefill of a new request while an earlier one still runs: the engine had work waiting.
  TreeReader running;
  running.ParseLine(Step(0, 0, 1000, R"("a")", Op("aten::mm", 0, 1000)), "r:1");
  running.ParseLine(Step(1, 1200, 2000, R"("b")", Op("aten::mm", 1200, 2000)), "r:2");
  running.ParseLine(Step(2, 2100, 3000, R"("a","b")", Op("aten::mm", 2100, 3000)), "r:3");
  const InstanceTable rt = running.Finish();
  EXPECT_GE(Find(rt, 1, kBetweenStepsFamily), 0);
  // Steps that name no request (a training loop) carry their work across.
  TreeReader plain;
  plain.ParseLine(Step(0, 0, 1000, "", Op("aten::mm", 0, 1000)), "p:1");
  plain.ParseLine(Step(1, 1200, 2000, R"("*")", Op("aten::mm", 1200, 2000)), "p:2");
  const InstanceTable p = plain.Finish();
  EXPECT_GE(Find(p, 1, kBetweenStepsFamily), 0);
}

// A step that replays a CUDA graph no earlier step replayed follows its capture: the time
// before it is warm-up (reported, not judged), like a kernel's first load.
TEST(OutsideTime, TimeBeforeANewGraphsFirstReplayIsWarmup) {
  auto graph_step = [](int64_t index, int64_t start, int graph_id) {
    const std::string node = R"({"name":"k","layer":"kernel","family":"k","graph_id":)" + std::to_string(graph_id) +
                             R"(,"start":)" + std::to_string(start + 50) + R"(,"end":)" + std::to_string(start + 90) + "}";
    return Step(index, start, start + 100, R"("a")", Call("cudaGraphLaunch", start + 10, start + 40, node));
  };
  TreeReader r;
  r.ParseLine(graph_step(0, 0, 1), "t:1");
  r.ParseLine(graph_step(1, 1000, 1), "t:2");  // the same graph again
  r.ParseLine(graph_step(2, 2000, 2), "t:3");  // a new one: captured since step 1
  const InstanceTable t = r.Finish();
  const int same = Find(t, 1, kBetweenStepsFamily), fresh = Find(t, 2, kBetweenStepsFamily);
  ASSERT_GE(same, 0);
  ASSERT_GE(fresh, 0);
  EXPECT_FALSE(t.detail[same].flags & kDetailLoadsCode);
  EXPECT_TRUE(t.detail[fresh].flags & kDetailLoadsCode);
}

// A pipeline stage that sent its activations to the next stage then waits for the later stages
// before its next step: that time is the pipeline's, not the scheduler's.
TEST(OutsideTime, NotAfterASendToAnotherStage) {
  const std::string send = R"({"name":"nccl:send","layer":"comm","family":"nccl:send","start":800,"end":900,"thread_id":7})";
  TreeReader r;
  r.ParseLine(Step(0, 0, 1000, R"("a")", Op("aten::mm", 0, 800) + "," + send), "t:1");
  r.ParseLine(Step(1, 1500, 2500, R"("a")", Op("aten::mm", 1500, 2500)), "t:2");
  r.ParseLine(Step(2, 2600, 3000, R"("a")", Op("aten::mm", 2600, 3000)), "t:3");
  const InstanceTable t = r.Finish();
  EXPECT_EQ(Find(t, 1, kBetweenStepsFamily), -1);
  EXPECT_GE(Find(t, 2, kBetweenStepsFamily), 0);  // step 1 sent nothing
}

TEST(OutsideTime, OffLeavesOnlyOperators) {
  TreeReader r;
  r.set_outside_time(false);
  r.ParseLine(Step(0, 0, 1000, R"("a")", Call("cudaMemcpyAsync", 20, 80) + "," + Op("aten::mm", 100, 300)), "t:1");
  r.ParseLine(Step(1, 1500, 2500, R"("a")", Op("aten::mm", 1500, 2500)), "t:2");
  const InstanceTable t = r.Finish();
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(r.stats().outside_instances, 0u);
}

// Step 1 follows 500 us after step 0; its gemm starts 70 us after step 0's device work ends and
// its host then blocks on it. Cutting the whole pause between the steps gains only what the
// device gains: 70 us while step 0's kernel still ran until 1.45 ms, the full 500 us when that
// kernel had ended with its step.
double ImpactOfCuttingThePause(int64_t step0_kernel_end) {
  TreeReader r;
  r.ParseLine(Step(0, 0, 1000000, R"("a")", Op("aten::mm", 0, 1000000, Call("cudaLaunchKernel", 10000, 20000,
                                                     Device("kernel", 500000, step0_kernel_end)))), "t:1");
  const std::string mm = Op("aten::mm", 1500000, 1560000, Call("cudaLaunchKernel", 1505000, 1515000,
                                                        Device("kernel", 1520000, 1800000)));
  const std::string item = Op("aten::item", 1560000, 1895000, Call("cudaStreamSynchronize", 1570000, 1890000));
  r.ParseLine(Step(1, 1500000, 1900000, R"("a")", mm + "," + item), "t:2");
  const InstanceTable t = r.Finish();
  std::vector<uint32_t> item_of;
  const StepGraph g = BuildStepGraph(t, 1, {}, &item_of);
  const int b = Find(t, 1, kBetweenStepsFamily);
  EXPECT_GE(b, 0);
  if (b < 0 || item_of[static_cast<size_t>(b)] == UINT32_MAX) return -1;
  // Its own time is what came after step 0's device work ended.
  EXPECT_FLOAT_EQ(t.detail[b].host_ns, static_cast<float>(1500000 - std::max<int64_t>(1000000, step0_kernel_end)));
  return ReplayImpactNs(g, {ReplayCut{item_of[static_cast<size_t>(b)], 500000, 0}});
}

TEST(OutsideTime, APauseBetweenStepsGainsNothingWhileTheDeviceWasBusy) {
  EXPECT_NEAR(ImpactOfCuttingThePause(1450000), 70000, 1);
  EXPECT_NEAR(ImpactOfCuttingThePause(900000), 500000, 1);
}

// A graph launched at 95 us whose first node ran only at 200 us (it queued behind a memset the
// device ran late, after an idle stretch), with an operator beginning at 150 us in between: the
// nodes count as launched by their graph launch call, not by that operator, so cutting the idle
// stretch lets them start right after the memset and saves the cut.
TEST(OutsideTime, GraphNodesAreLaunchedByTheirGraphLaunchCall) {
  TreeReader r;
  r.set_graph_vertical_ops(true);
  const std::string fill = Op("aten::fill_", 10000, 20000, Call("cudaMemsetAsync", 12000, 15000, Device("memset", 180000, 190000)));
  const std::string first = Op("aten::add", 1000, 9000, Call("cudaLaunchKernel", 2000, 4000, Device("kernel", 5000, 15000)));
  const std::string node = R"({"name":"mm_k","layer":"kernel","family":"gemm","start":200000,"end":300000,)"
                           R"("captured_in":{"name":"aten::mm","layer":"backend_op","family":"aten::mm"}})";
  const std::string launch = Call("cudaGraphLaunch", 95000, 100000, node);
  const std::string copy = Op("aten::copy_", 150000, 320000, Call("cudaMemcpy", 150000, 320000, Device("memcpy", 300000, 310000)));
  r.ParseLine(Step(0, 0, 330000, R"("a")", first + "," + fill + "," + launch + "," + copy), "t:1");
  const InstanceTable t = r.Finish();
  const int mm = Find(t, 0, "aten::mm"), idle = Find(t, 0, kDeviceIdleFamily);
  ASSERT_GE(mm, 0);
  ASSERT_GE(idle, 0);
  EXPECT_EQ(t.detail[mm].graph_launch, 95000);
  std::vector<uint32_t> item_of;
  const StepGraph g = BuildStepGraph(t, 0, {}, &item_of);
  EXPECT_EQ(g.items[item_of[static_cast<size_t>(mm)]].launch, 95000);
  // The idle stretch before the memset, [15 us, 180 us): cut by 100 us, the memset and the
  // graph's node run 100 us earlier, and the blocking copy after them with them.
  EXPECT_NEAR(ReplayImpactNs(g, {ReplayCut{item_of[static_cast<size_t>(idle)], 100000, 0}}), 100000, 1);
}

}  // namespace
}  // namespace truffld::diagnose
