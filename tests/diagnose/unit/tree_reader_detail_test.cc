// TreeReader's per-instance detail for the peer detector: own host and device costs, the time a
// blocking call waited for earlier device work, nesting, work signatures (timing-free, size- and
// position-aware), step-name tags and the device_detail flag of sampled capture windows.
#include <gtest/gtest.h>

#include <string>

#include "read/tree_reader.h"
#include "../tree_line.h"

namespace truffld::diagnose {
namespace {

using testing::OneLine;

// Step 0..1000 on thread 7: aten::linear [100,600) wraps aten::mm [110,590), whose launch runs a
// gemm (grid `grid`) at [300,450); then aten::copy_ [620,900) whose blocking cudaMemcpy [630,880)
// waited for the queue until 800 and copied until 870.
std::string Tree(int64_t step, int grid, int64_t kernel_ns, const std::string& extra = "") {
  const std::string k_end = std::to_string(300 + kernel_ns);
  return OneLine(R"({"schema":"truffld.trees/1","rank":0,"host":"h","process_id":1,"step_index":)" + std::to_string(step) +
                 R"(,"step":"step_execute_model[request_ids:a][phase:decode][tokens:12][ctx:340]","requests":["a"],"request":"a",)" + extra +
                 R"("view":"vertical","start":0,"end":1000,"root":{"name":"s","layer":"step","family":"step","start":0,"end":1000,"children":[
    {"name":"aten::linear","layer":"backend_op","family":"aten::linear","start":100,"end":600,"thread_id":7,"children":[
      {"name":"aten::mm","layer":"backend_op","family":"aten::mm","start":110,"end":590,"thread_id":7,"children":[
        {"name":"cudaLaunchKernel","layer":"runtime_call","family":"cudaLaunchKernel","start":150,"end":200,"thread_id":7,"children":[
          {"name":"gemm<float>","layer":"kernel","family":"gemm","start":300,"end":)" + k_end +
                 R"(,"grid":[)" + std::to_string(grid) + R"(,1,1],"block":[128,1,1]}]}]}]},
    {"name":"aten::copy_","layer":"backend_op","family":"aten::copy_","start":620,"end":900,"thread_id":7,"children":[
      {"name":"cudaMemcpy","layer":"runtime_call","family":"cudaMemcpy","start":630,"end":880,"thread_id":7,"children":[
        {"name":"Memcpy HtoD","layer":"memcpy","family":"Memcpy HtoD","copy_kind":"HtoD","bytes":4096,"start":800,"end":870}]}]}]}})");
}

TEST(TreeReaderDetail, OwnCostsWaitsNestingAndTags) {
  TreeReader r;
  r.set_outside_time(false);  // operator instances only (outside_time_test.cc)
  r.ParseLine(Tree(0, 64, 150), "t:1");
  const InstanceTable t = r.Finish();
  ASSERT_EQ(t.size(), 3u);
  ASSERT_EQ(t.detail.size(), 3u);
  // Sorted by start: linear, mm, copy_.
  EXPECT_EQ(t.strings.Get(t.family[0]), "aten::linear");
  EXPECT_EQ(t.detail[0].parent, -1);
  EXPECT_EQ(t.detail[1].parent, 0);   // mm inside linear
  EXPECT_EQ(t.detail[2].parent, -1);
  EXPECT_FLOAT_EQ(t.detail[0].device_ns, 0);    // the kernel is mm's own, not linear's
  EXPECT_FLOAT_EQ(t.detail[1].device_ns, 150);
  EXPECT_FLOAT_EQ(t.detail[1].blocks, 64);
  EXPECT_EQ(t.detail[1].device_start, 300);
  EXPECT_FLOAT_EQ(t.detail[0].host_ns, 20);     // self time: 500 minus mm's 480
  // The blocking copy waited 630 -> 800 for earlier work: not its own host time.
  EXPECT_FLOAT_EQ(t.detail[2].wait_ns, 170);
  EXPECT_FLOAT_EQ(t.detail[2].host_ns, 280 - 170);
  EXPECT_FLOAT_EQ(t.detail[2].device_ns, 70);
  const StepInfo& s = t.steps[0];
  EXPECT_EQ(s.tokens, 12);
  EXPECT_EQ(s.context, 340);
  EXPECT_EQ(s.host, "h");
  EXPECT_TRUE(s.device_detail);
  EXPECT_DOUBLE_EQ(s.work_blocks, 64);
  EXPECT_DOUBLE_EQ(s.h2d_bytes, 4096);
}

TEST(TreeReaderDetail, SignaturesFollowWorkNotTime) {
  TreeReader r;
  r.set_outside_time(false);  // operator instances only (outside_time_test.cc)
  r.ParseLine(Tree(0, 64, 150), "t:1");
  r.ParseLine(Tree(1, 64, 900), "t:2");   // same work, slower
  r.ParseLine(Tree(2, 128, 150), "t:3");  // bigger grid
  const InstanceTable t = r.Finish();
  ASSERT_EQ(t.size(), 9u);
  const uint64_t mm0 = t.detail[1].signature, mm1 = t.detail[4].signature, mm2 = t.detail[7].signature;
  EXPECT_EQ(mm0, mm1);              // timing never enters the signature
  EXPECT_NE(mm0, mm2);              // the launched grid does
  EXPECT_EQ(t.detail[1].position, t.detail[7].position);  // same place in the layer
  EXPECT_NE(t.detail[1].signature, t.detail[0].signature);
}

TEST(TreeReaderDetail, StepsOutsideADeviceWindowSaySo) {
  TreeReader r;
  r.set_outside_time(false);  // operator instances only (outside_time_test.cc)
  r.ParseLine(Tree(0, 64, 150, R"("device_detail":false,)"), "t:1");
  const InstanceTable t = r.Finish();
  EXPECT_FALSE(t.steps[0].device_detail);
}

TEST(TreeReaderDetail, WorkloadFieldsWinOverTheStepNameTags) {
  // truffld-merge writes the tags as "tokens"/"ctx"; those fields are what counts (the name
  // may be cut by the injector before its tags). Without fields, the name's tags are read.
  TreeReader r;
  r.set_outside_time(false);  // operator instances only (outside_time_test.cc)
  r.ParseLine(Tree(0, 64, 150, R"("tokens":4096,"ctx":9000,)"), "t:1");
  r.ParseLine(Tree(1, 64, 150), "t:2");
  const InstanceTable t = r.Finish();
  ASSERT_EQ(t.steps.size(), 2u);
  EXPECT_EQ(t.steps[0].tokens, 4096);
  EXPECT_EQ(t.steps[0].context, 9000);
  EXPECT_EQ(t.steps[1].tokens, 12);
  EXPECT_EQ(t.steps[1].context, 340);
}

}  // namespace
}  // namespace truffld::diagnose
