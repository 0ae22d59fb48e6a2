// Steps outside a detail window (two-tier capture): a step with no device activity and no
// operator range is judged as one piece, (whole step), and never on the time between operators
// or the calls it made, which were not recorded (read/outside_time.h, StepInfo::operator_detail).
#include <gtest/gtest.h>

#include <string>

#include "read/tree_reader.h"
#include "../tree_line.h"

namespace truffld::diagnose {
namespace {

using testing::OneLine;

std::string Node(const std::string& layer, const std::string& name, int64_t start, int64_t end) {
  return R"({"name":")" + name + R"(","layer":")" + layer + R"(","family":")" + name + R"(","start":)" +
         std::to_string(start) + R"(,"end":)" + std::to_string(end) + R"(,"thread_id":7,"children":[]})";
}

// A vertical step of rank 0 for request "a"; `detail` false writes "device_detail": false.
std::string Step(int64_t index, int64_t start, int64_t end, bool detail, const std::string& children) {
  return OneLine(R"({"schema":"truffld.trees/1","rank":0,"process_id":1,"step_index":)" + std::to_string(index) +
                 R"(,"step":"s[tokens:8]","requests":["a"],"view":"vertical","start":)" + std::to_string(start) +
                 R"(,"end":)" + std::to_string(end) + (detail ? "" : R"(,"device_detail":false)") +
                 R"(,"root":{"name":"s","layer":"step","family":"step","start":)" + std::to_string(start) +
                 R"(,"end":)" + std::to_string(end) + R"(,"children":[)" + children + "]}}");
}

int Count(const InstanceTable& t, uint32_t u, const char* family) {
  int n = 0;
  const StepInfo& s = t.steps[u];
  for (uint32_t i = s.first_instance; i < s.first_instance + s.instance_count; ++i)
    n += t.strings.Get(t.family[i]) == family;
  return n;
}

TEST(StepLevel, StepWithoutOperatorsIsJudgedWhole) {
  TreeReader r;
  const std::string sync = Node("runtime_call", "cudaStreamSynchronize", 700, 950);
  r.ParseLine(Step(0, 0, 1000, false, sync), "t:1");
  r.ParseLine(Step(1, 1200, 2000, false, sync), "t:2");
  const InstanceTable t = r.Finish();
  ASSERT_EQ(t.steps.size(), 2u);
  for (uint32_t u = 0; u < 2; ++u) {
    EXPECT_FALSE(t.steps[u].operator_detail);
    EXPECT_EQ(Count(t, u, kWholeStepFamily), 1);
    EXPECT_EQ(Count(t, u, kHostOutsideFamily), 0);  // not the whole step, blamed on nothing recorded
    EXPECT_EQ(Count(t, u, kStepCallsFamily), 0);
  }
  EXPECT_EQ(Count(t, 1, kBetweenStepsFamily), 1);  // the time between steps needs only step ranges
  const StepInfo& s = t.steps[1];
  for (uint32_t i = s.first_instance; i < s.first_instance + s.instance_count; ++i) {
    if (t.strings.Get(t.family[i]) != kWholeStepFamily) continue;
    EXPECT_FLOAT_EQ(t.detail[i].host_ns, 800);
    EXPECT_TRUE(t.detail[i].flags & kDetailGroupCost);  // lockstep ranks end their steps together
  }
  EXPECT_EQ(r.stats().step_level_steps, 2u);
}

TEST(StepLevel, OperatorsWithoutDeviceDetailKeepOperatorJudgement) {
  TreeReader r;  // sampled device windows, one tier: the operators were recorded
  r.ParseLine(Step(0, 0, 1000, false, Node("backend_op", "aten::mm", 100, 600)), "t:1");
  const InstanceTable t = r.Finish();
  ASSERT_EQ(t.steps.size(), 1u);
  EXPECT_TRUE(t.steps[0].operator_detail);
  EXPECT_EQ(Count(t, 0, kWholeStepFamily), 0);
  EXPECT_EQ(Count(t, 0, kHostOutsideFamily), 1);
  EXPECT_EQ(r.stats().step_level_steps, 0u);
}

TEST(StepLevel, StepWithDeviceDetailIsNeverStepLevel) {
  TreeReader r;  // inside a window a step with no operator is what it is, not missing detail
  r.ParseLine(Step(0, 0, 1000, true, Node("runtime_call", "cudaStreamSynchronize", 700, 950)), "t:1");
  const InstanceTable t = r.Finish();
  ASSERT_EQ(t.steps.size(), 1u);
  EXPECT_TRUE(t.steps[0].operator_detail);
  EXPECT_EQ(Count(t, 0, kWholeStepFamily), 0);
  EXPECT_EQ(Count(t, 0, kStepCallsFamily), 1);
}

}  // namespace
}  // namespace truffld::diagnose
