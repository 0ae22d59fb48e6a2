// Steps from a repeated top-level call (core/repeated_steps.h), through the whole merge: a plain
// PyTorch loop traced by the hooks has no step range, only its model's module forwards; each
// outermost call repeated at least 3 times becomes a step. Functional calls never do.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "merge_test_util.h"
#include "truffld/merge/import_kineto.h"
#include "truffld/merge/pipeline.h"

namespace truffld::merge {
namespace {

std::string LoopPush(const std::string& name, long long t, int tid = 1, int pid = 5) {
  return "{\"type\":\"NVTX_PUSH\",\"name\":\"" + name + "\",\"timestamp\":" + std::to_string(t) +
         ",\"process_id\":" + std::to_string(pid) + ",\"thread_id\":" + std::to_string(tid) + "}\n";
}
std::string LoopPop(long long t, int tid = 1, int pid = 5) {
  return "{\"type\":\"NVTX_POP\",\"timestamp\":" + std::to_string(t) + ",\"process_id\":" + std::to_string(pid) +
         ",\"thread_id\":" + std::to_string(tid) + "}\n";
}
std::string LoopRange(const std::string& name, long long s, long long e, int pid = 5) {
  return LoopPush(name, s, 1, pid) + LoopPop(e, 1, pid);
}
std::string LoopMeta(int pid = 5) {
  return "{\"type\":\"META\",\"schema\":\"truffld.events/1\",\"host\":\"h\",\"process_id\":" + std::to_string(pid) +
         ",\"rank\":0,\"clock\":\"realtime\"}\n";
}

// One iteration at t: Net's forward holding two Linear forwards, each an aten::addmm.
std::string LoopModelCall(long long t, int pid = 5) {
  return LoopPush("nn.Module:Net.forward loop.py:20", t, 1, pid) +
         LoopPush("nn.Module:Linear.forward net.py:8", t + 10, 1, pid) + LoopRange("aten::addmm, op_id = 1", t + 20, t + 40, pid) +
         LoopPop(t + 50, 1, pid) + LoopPush("nn.Module:Linear.forward net.py:9", t + 60, 1, pid) +
         LoopRange("aten::addmm, op_id = 2", t + 70, t + 90, pid) + LoopPop(t + 100, 1, pid) + LoopPop(t + 110, 1, pid);
}

using testing::FileFromLines;

MergeResult LoopMerge(const std::string& dump, MergeOptions opt = {}) {
  std::vector<TraceFile> files;
  files.push_back(FileFromLines(dump, "loop.jsonl"));
  auto r = Merge(std::move(files), opt);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

std::vector<std::string> LoopStepNames(const MergeResult& r) {
  std::vector<std::string> out;
  for (const Tree& t : r.trees)
    if (t.view == View::kVertical) out.emplace_back(r.Name(r.node(t.root)));
  return out;
}

TEST(RepeatedCallSteps, EachOutermostModelCallOfALoopIsAStep) {
  std::string d = LoopMeta() + LoopRange("aten::randn, op_id = 0", 0, 50);  // set-up before the loop
  for (int i = 0; i < 5; ++i) d += LoopModelCall(1000 + 1000 * i);
  const MergeResult r = LoopMerge(d);
  EXPECT_EQ(r.summary.total.steps, 5u);
  EXPECT_EQ(r.summary.total.repeated_call_steps, 5u);
  EXPECT_EQ(r.summary.total.implicit_steps, 0u);
  EXPECT_EQ(r.summary.total.ranges_outside_steps, 1u);  // aten::randn
  EXPECT_EQ(LoopStepNames(r), std::vector<std::string>(5, "nn.Module:Net.forward loop.py:20"));
  for (const Tree& t : r.trees) {
    EXPECT_FALSE(t.implicit_step);
    EXPECT_EQ(r.Start(r.node(t.root)), 1000 + 1000 * int64_t(t.step_index));
  }
  // The Linear forwards and their addmm stay operators under the step.
  std::vector<std::string> children;
  r.ForEachChild(r.trees[0].root, [&](uint32_t c) { children.emplace_back(r.Name(r.node(c))); });
  EXPECT_EQ(children, (std::vector<std::string>{"nn.Module:Linear.forward net.py:8", "nn.Module:Linear.forward net.py:9"}));
}

TEST(RepeatedCallSteps, FunctionalCallsAndRareCallsKeepTheImplicitStep) {
  std::string functional = LoopMeta();  // 4 linear calls per iteration, no module: no step per call
  for (int i = 0; i < 5; ++i)
    for (int k = 0; k < 4; ++k) functional += LoopRange("torch.nn.functional.linear loop.py:9", 1000 * i + 100 * k, 1000 * i + 100 * k + 80);
  MergeResult r = LoopMerge(functional);
  EXPECT_EQ(r.summary.total.steps, 1u);
  EXPECT_EQ(r.summary.total.implicit_steps, 1u);
  EXPECT_EQ(r.summary.total.repeated_call_steps, 0u);

  std::string twice = LoopMeta() + LoopModelCall(0) + LoopModelCall(1000);  // 2 < 3 repeats
  r = LoopMerge(twice);
  EXPECT_EQ(r.summary.total.implicit_steps, 1u);
  EXPECT_EQ(r.summary.total.repeated_call_steps, 0u);

  // Three short calls beside a long one-off range: under a quarter of the thread's time.
  std::string minor = LoopMeta() + LoopRange("load_weights", 0, 10000);
  for (int i = 0; i < 3; ++i) minor += LoopModelCall(20000 + 1000 * i);
  r = LoopMerge(minor);
  EXPECT_EQ(r.summary.total.implicit_steps, 1u);
  EXPECT_EQ(r.summary.total.repeated_call_steps, 0u);
}

TEST(RepeatedCallSteps, UserRangesMakeStepsOnlyAtTheTopOfTheirThread) {
  std::string top = LoopMeta();  // a user range per iteration (layer other)
  for (int i = 0; i < 4; ++i)
    top += LoopPush("iteration", 100 + 1000 * i) + LoopModelCall(200 + 1000 * i) + LoopPop(900 + 1000 * i);
  MergeResult r = LoopMerge(top);
  EXPECT_EQ(r.summary.total.repeated_call_steps, 4u);
  EXPECT_EQ(LoopStepNames(r), std::vector<std::string>(4, "iteration"));

  std::string nested = LoopMeta() + LoopPush("main", 0);  // the same loop inside one range
  for (int i = 0; i < 4; ++i)
    nested += LoopPush("iteration", 100 + 1000 * i) + LoopModelCall(200 + 1000 * i) + LoopPop(900 + 1000 * i);
  nested += LoopPop(5000);
  r = LoopMerge(nested);
  EXPECT_EQ(r.summary.total.repeated_call_steps, 0u);
  EXPECT_EQ(r.summary.total.implicit_steps, 1u);
}

// A profiler's Python frames repeat whatever the program does: never steps (a Kineto trace
// recorded with_stack, no ProfilerStep).
TEST(RepeatedCallSteps, PythonFramesOfAProfilerStackAreNotSteps) {
  std::string ev;
  for (int i = 0; i < 4; ++i) {
    const std::string ts = std::to_string(1000 * i);
    ev += R"({"ph":"X","cat":"python_function","name":"torch/_dynamo/eval_frame.py(1039): _fn","pid":7,"tid":7,"ts":)" +
          ts + R"(,"dur":900},)" + "\n";
    ev += R"({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":7,"tid":7,"ts":)" + std::to_string(1000 * i + 10) +
          R"(,"dur":100},)" + "\n";
  }
  ev.erase(ev.size() - 2);
  auto tf = ImportKinetoFromBuffer("{\"traceEvents\": [\n" + ev + "\n]}", "stack.json", ImportOptions{});
  ASSERT_TRUE(tf.ok()) << tf.status().ToString();
  std::vector<TraceFile> files;
  files.push_back(std::move(tf).value());
  auto r = Merge(std::move(files), MergeOptions{});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->summary.total.repeated_call_steps, 0u);
  EXPECT_EQ(r->summary.total.implicit_steps, 1u);
}

TEST(RepeatedCallSteps, PerProcessAndOffWithoutImplicitSteps) {
  std::string a = LoopMeta(5), b = LoopMeta(6);
  for (int i = 0; i < 3; ++i) a += LoopModelCall(1000 * i, 5);
  b += LoopRange("aten::mm, op_id = 1", 0, 10, 6);
  std::vector<TraceFile> files;
  files.push_back(FileFromLines(a, "a.jsonl"));
  files.push_back(FileFromLines(b, "b.jsonl"));
  auto r = Merge(std::move(files), MergeOptions{});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->summary.total.repeated_call_steps, 3u);
  EXPECT_EQ(r->summary.total.implicit_steps, 1u);  // process 6 has no repeated call
  MergeOptions off;
  off.implicit_steps = false;
  EXPECT_TRUE(LoopMerge(a, off).trees.empty());
}

}  // namespace
}  // namespace truffld::merge
