// Merge(): what a step's trees and the summary say about the step's own completeness: request
// lists cut in the name (step_names_cut) and names the injector cut (injector_names_truncated).
#include <gtest/gtest.h>

#include "core/step_detail.h"
#include "merge_test_util.h"
#include "truffld/merge/pipeline.h"
#include "truffld/merge/writers.h"

namespace truffld::merge {
namespace {

using testing::FileFromLines;

MergeResult MergeText(const std::string& dump) {
  std::vector<TraceFile> files;
  files.push_back(FileFromLines(dump, "steps.jsonl"));
  auto r = Merge(std::move(files), MergeOptions{});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

std::string Meta() {
  return R"({"type":"META","schema":"truffld.events/1","host":"h","process_id":7,"rank":0,"clock":"realtime","clock_sync":{"realtime_ns":0,"monotonic_ns":0}})" "\n";
}

std::string Step(const std::string& name, int64_t start, int64_t end) {
  return R"({"type":"NVTX_PUSH","name":")" + name + R"(","timestamp":)" + std::to_string(start) +
         R"(,"process_id":7,"thread_id":7})" "\n" R"({"type":"NVTX_POP","timestamp":)" +
         std::to_string(end) + R"(,"process_id":7,"thread_id":7})" "\n";
}

TEST(StepDetail, CutRequestListsAndInjectorTruncationAreCounted) {
  const std::string dump =
      Meta() + Step("step_execute_model[request_ids:a_b][phase:decode]", 100, 200) +
      Step("step_execute_model[request_ids:c_d_cm", 300, 400) +        // cut in the list
      Step("step_execute_model[request_ids:e][phase:dec", 500, 600) +  // cut after it
      R"({"type":"STATS","records_written":{"NVTX_PUSH":3},"records_dropped":{"NVTX_PUSH":0},"names_truncated":2})" "\n";
  MergeResult r = MergeText(dump);
  EXPECT_EQ(r.summary.total.steps, 3u);
  EXPECT_EQ(r.summary.total.step_names_cut, 2u);
  EXPECT_EQ(r.summary.total.injector_names_truncated, 2u);
  EXPECT_EQ(r.summary.files[0].counters.step_names_cut, 2u);
  const std::string text = FormatTextSummary(r, RunInfo{});
  EXPECT_NE(text.find("truncated names: 2 step(s)"), std::string::npos) << text;
}

TEST(StepDetail, WholeNamesCountNothing) {
  // Implicit steps (no step range) have no name to cut.
  MergeResult r = MergeText(Meta() + Step("step_execute_model[request_ids:a]", 1, 2) +
                            Step("ProfilerStep#1", 3, 4));
  EXPECT_EQ(r.summary.total.step_names_cut, 0u);
  EXPECT_EQ(r.summary.total.injector_names_truncated, 0u);
  MergeResult implicit = MergeText(Meta() + Step("request_ids:a_b", 1, 2));
  EXPECT_EQ(implicit.summary.total.implicit_steps, 1u);
  EXPECT_EQ(implicit.summary.total.step_names_cut, 0u);
  EXPECT_EQ(FormatTextSummary(r, RunInfo{}).find("truncated names"), std::string::npos);
}

TEST(StepDetail, InjectorNamesTruncatedReadsOnlyACount) {
  EXPECT_EQ(InjectorNamesTruncated(R"({"type":"STATS","names_truncated":5})"), 5u);
  EXPECT_EQ(InjectorNamesTruncated(""), 0u);
  EXPECT_EQ(InjectorNamesTruncated("not json"), 0u);
  EXPECT_EQ(InjectorNamesTruncated(R"({"names_truncated":-1})"), 0u);
  EXPECT_EQ(InjectorNamesTruncated(R"({"names_truncated":"7"})"), 0u);
  EXPECT_EQ(InjectorNamesTruncated("[1]"), 0u);
}

}  // namespace
}  // namespace truffld::merge
