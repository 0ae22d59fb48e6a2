// Merge(): what a step's trees and the summary say about the step's own completeness: request
// lists cut in the name (step_names_cut), names the injector cut (injector_names_truncated),
// and steps outside sampled device windows (device_detail, steps_without_device_detail).
#include <gtest/gtest.h>

#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/step_detail.h"
#include "merge_test_util.h"
#include "truffld/merge/pipeline.h"
#include "truffld/merge/writers.h"

namespace truffld::merge {
namespace {

using testing::FileFromLines;

MergeResult MergeStepsText(const std::string& dump) {
  std::vector<TraceFile> files;
  files.push_back(FileFromLines(dump, "steps.jsonl"));
  auto r = Merge(std::move(files), MergeOptions{});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

// META; `windows`: the injector's TRUFFLD_DEVICE_WINDOWS as META.config reports it ("" = no
// config at all).
std::string Meta(const std::string& windows = "") {
  const std::string config =
      windows.empty() ? "" : R"(,"config":{"flush_ms":"500","device_windows":")" + windows + R"("})";
  return R"({"type":"META","schema":"truffld.events/1","host":"h","process_id":7,"rank":0,"clock":"realtime","clock_sync":{"realtime_ns":0,"monotonic_ns":0})" +
         config + "}\n";
}

std::string Edge(const char* edge, int id, int64_t t, const std::string& trigger = "step") {
  return std::string(R"({"type":"DEVICE_WINDOW","edge":")") + edge + R"(","id":)" + std::to_string(id) +
         R"(,"timestamp":)" + std::to_string(t) + R"(,"trigger":")" + trigger +
         R"(","process_id":7,"thread_id":7})" "\n";
}

// device_detail of each step's vertical tree, in step order; the horizontal trees agree.
std::vector<bool> DeviceDetail(const MergeResult& r) {
  std::vector<bool> out, horizontal;
  for (const Tree& t : r.trees) (t.view == View::kVertical ? out : horizontal).push_back(t.device_detail);
  EXPECT_EQ(out, horizontal);
  return out;
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
      R"({"type":"STATS","records_written":{"NVTX_PUSH":3},"records_dropped":{"NVTX_PUSH":0},"names_truncated":2,)"
      R"("api_unpaired":3})" "\n";
  MergeResult r = MergeStepsText(dump);
  EXPECT_EQ(r.summary.total.steps, 3u);
  EXPECT_EQ(r.summary.total.step_names_cut, 2u);
  EXPECT_EQ(r.summary.total.injector_names_truncated, 2u);
  EXPECT_EQ(r.summary.files[0].counters.step_names_cut, 2u);
  const std::string text = FormatTextSummary(r, RunInfo{});
  EXPECT_NE(text.find("truncated names: 2 step(s)"), std::string::npos) << text;
  EXPECT_EQ(r.summary.total.injector_api_unpaired, 3u);
  EXPECT_NE(text.find("API calls left out: 3"), std::string::npos) << text;
}

TEST(StepDetail, WholeNamesCountNothing) {
  // Implicit steps (no step range) have no name to cut.
  MergeResult r = MergeStepsText(Meta() + Step("step_execute_model[request_ids:a]", 1, 2) +
                            Step("ProfilerStep#1", 3, 4));
  EXPECT_EQ(r.summary.total.step_names_cut, 0u);
  EXPECT_EQ(r.summary.total.injector_names_truncated, 0u);
  MergeResult implicit = MergeStepsText(Meta() + Step("request_ids:a_b", 1, 2));
  EXPECT_EQ(implicit.summary.total.implicit_steps, 1u);
  EXPECT_EQ(implicit.summary.total.step_names_cut, 0u);
  EXPECT_EQ(FormatTextSummary(r, RunInfo{}).find("truncated names"), std::string::npos);
  EXPECT_EQ(r.summary.total.injector_api_unpaired, 0u);
  EXPECT_EQ(FormatTextSummary(r, RunInfo{}).find("API calls left out"), std::string::npos);
}

TEST(StepDetail, InjectorCountReadsOnlyACount) {
  EXPECT_EQ(InjectorCount(R"({"type":"STATS","names_truncated":5,"api_unpaired":2})", "names_truncated"), 5u);
  EXPECT_EQ(InjectorCount("", "names_truncated"), 0u);
  EXPECT_EQ(InjectorCount("not json", "names_truncated"), 0u);
  EXPECT_EQ(InjectorCount(R"({"names_truncated":-1})", "names_truncated"), 0u);
  EXPECT_EQ(InjectorCount(R"({"names_truncated":"7"})", "names_truncated"), 0u);
  EXPECT_EQ(InjectorCount("[1]", "names_truncated"), 0u);
  EXPECT_EQ(InjectorCount(R"({"type":"STATS","names_truncated":5,"api_unpaired":2})", "api_unpaired"), 2u);
}

TEST(StepDetail, StepsOutsideSampledWindowsHaveNoDeviceDetail) {
  // Windows [90, 210] and [690, end of file); steps at 100-200, 300-400, 500-600, 700-800. A
  // window's edges are paired by id, whatever order they come in.
  const std::string dump = Meta("steps:3:1") + Edge("end", 0, 210) + Edge("start", 0, 90) +
                           Step("step_execute_model[request_ids:a]", 100, 200) +
                           Step("step_execute_model[request_ids:b]", 300, 400) +
                           Step("step_execute_model[request_ids:c]", 500, 600) + Edge("start", 1, 690) +
                           Step("step_execute_model[request_ids:d]", 700, 800);
  for (bool fast : {true, false}) {  // both raw readers see DEVICE_WINDOW and META.config
    std::vector<TraceFile> files;
    files.push_back(FileFromLines(dump, "steps.jsonl", fast));
    auto merged = Merge(std::move(files), MergeOptions{});
    ASSERT_TRUE(merged.ok());
    const MergeResult& r = *merged;
    EXPECT_EQ(DeviceDetail(r), (std::vector<bool>{true, false, false, true})) << fast;
    EXPECT_EQ(r.summary.total.steps_without_device_detail, 2u);
    EXPECT_EQ(r.summary.total.malformed_lines, 0u) << "DEVICE_WINDOW is a known record type";
    EXPECT_EQ(r.files[0].stats.Get(Problem::kUnknownType), 0u);
  }
  MergeResult r = MergeStepsText(dump);
  JsonOut out;
  WriteTreesJsonl(r, &out);
  std::istringstream lines(out.text());
  std::string line;
  std::vector<std::string> marked;
  while (std::getline(lines, line)) {
    const auto t = nlohmann::json::parse(line);
    if (t.contains("device_detail")) {
      EXPECT_EQ(t["device_detail"], false);
      marked.push_back(t["requests"][0].get<std::string>() + "/" + t["view"].get<std::string>());
    }
  }
  EXPECT_EQ(marked, (std::vector<std::string>{"b/vertical", "b/horizontal", "c/vertical", "c/horizontal"}));
  EXPECT_NE(FormatTextSummary(r, RunInfo{}).find("device detail: 2 step(s)"), std::string::npos);
}

// TRUFFLD_DEVICE_WINDOWS=requested: windows opened by a slow step or the control file (and
// triggers this reader does not know yet) count like any other window.
TEST(StepDetail, RequestedWindowsOfEveryTriggerGiveDeviceDetail) {
  const std::string dump = Meta("requested") + Step("step_execute_model[request_ids:a]", 100, 200) +
                           Edge("start", 0, 250, "slow_step") + Step("step_execute_model[request_ids:b]", 300, 400) +
                           Edge("end", 0, 450, "slow_step") + Edge("start", 1, 480, "request") +
                           Step("step_execute_model[request_ids:c]", 500, 600) + Edge("end", 1, 650, "request") +
                           Edge("start", 2, 680, "not_yet_known") + Step("step_execute_model[request_ids:d]", 700, 800) +
                           Step("step_execute_model[request_ids:e]", 900, 1000) + Edge("end", 2, 1050, "exit");
  for (bool fast : {true, false}) {
    std::vector<TraceFile> files;
    files.push_back(FileFromLines(dump, "steps.jsonl", fast));
    auto merged = Merge(std::move(files), MergeOptions{});
    ASSERT_TRUE(merged.ok());
    EXPECT_EQ(DeviceDetail(*merged), (std::vector<bool>{false, true, true, true, true})) << fast;
    EXPECT_EQ(merged->summary.total.malformed_lines, 0u) << fast;
    EXPECT_EQ(merged->summary.total.steps_without_device_detail, 1u) << fast;
  }
}

TEST(StepDetail, AStepCrossingAWindowEdgeHasNoDeviceDetail) {
  MergeResult r = MergeStepsText(Meta("time:10:100") + Edge("start", 0, 150) + Edge("end", 0, 450) +
                            Step("step_execute_model[request_ids:a]", 100, 200) +
                            Step("step_execute_model[request_ids:b]", 300, 400) +
                            Step("step_execute_model[request_ids:c]", 400, 500));
  EXPECT_EQ(DeviceDetail(r), (std::vector<bool>{false, true, false}));
}

TEST(StepDetail, UnsampledFilesAndSampledFilesWithoutWindows) {
  // Without sampling (the default "all", or no config and no window records) every step has
  // its device detail; under "all" stray window records change nothing.
  for (const std::string& meta : {Meta(), Meta("all")}) {
    const std::string stray = meta == Meta() ? "" : Edge("start", 0, 300);
    MergeResult r = MergeStepsText(meta + Step("step_execute_model[request_ids:a]", 100, 200) + stray);
    EXPECT_EQ(DeviceDetail(r), (std::vector<bool>{true})) << meta;
    EXPECT_EQ(r.summary.total.steps_without_device_detail, 0u);
    EXPECT_EQ(FormatTextSummary(r, RunInfo{}).find("device detail"), std::string::npos);
  }
  // Sampled, but no window ever opened, or device activity off: no step has device detail,
  // implicit steps included.
  for (const std::string& meta : {Meta("steps:100"), Meta("off")}) {
    MergeResult r = MergeStepsText(meta + Step("step_execute_model[request_ids:a]", 100, 200));
    EXPECT_EQ(DeviceDetail(r), (std::vector<bool>{false})) << meta;
    MergeResult implicit = MergeStepsText(meta + Step("aten::mm", 100, 200));
    EXPECT_EQ(DeviceDetail(implicit), (std::vector<bool>{false})) << meta;
  }
}

TEST(StepDetail, WindowsAreMappedOntoTheMergedAxis) {
  // A monotonic_raw file 1000 ns behind realtime: window and step are compared on one axis.
  const std::string meta =
      R"({"type":"META","host":"h","process_id":7,"rank":0,"clock":"monotonic_raw","clock_sync":{"realtime_ns":1000,"monotonic_ns":0},"config":{"device_windows":"steps:2"}})" "\n";
  MergeResult r = MergeStepsText(meta + Edge("start", 0, 90) + Edge("end", 0, 210) +
                            Step("step_execute_model[request_ids:a]", 100, 200) +
                            Step("step_execute_model[request_ids:b]", 300, 400));
  EXPECT_EQ(DeviceDetail(r), (std::vector<bool>{true, false}));
  ClockMap shift;
  shift.offset = 1000;
  TraceFile f = FileFromLines(meta + Edge("start", 3, 90) + Edge("end", 3, 210) + Edge("start", 4, 500));
  const DeviceWindows w = DeviceWindowsOf(f.meta, shift);
  ASSERT_EQ(w.spans.size(), 2u);
  EXPECT_EQ(w.spans[0], std::make_pair(TimeNs{1090}, TimeNs{1210}));
  EXPECT_EQ(w.spans[1], std::make_pair(TimeNs{1500}, std::numeric_limits<TimeNs>::max()));
  EXPECT_TRUE(InsideAWindow(w, 1090, 1210));
  EXPECT_FALSE(InsideAWindow(w, 1089, 1200));
  EXPECT_FALSE(InsideAWindow(w, 1200, 1211));
  EXPECT_TRUE(InsideAWindow(w, 1600, 99999));
}

TEST(StepDetail, AWindowRecordWithoutIdOrTimestampIsReported) {
  MergeResult r = MergeStepsText(Meta("steps:2") + R"({"type":"DEVICE_WINDOW","edge":"start","timestamp":5})" "\n" +
                            Step("step_execute_model[request_ids:a]", 100, 200));
  EXPECT_EQ(r.files[0].stats.Get(Problem::kMissingField), 1u);
  EXPECT_EQ(r.summary.total.malformed_lines, 1u);
  EXPECT_EQ(DeviceDetail(r), (std::vector<bool>{false}));
}

// A window end with no start anywhere in the file, and a window with a negative id: each is
// a malformed record (bad_field, with its line), and neither gives the steps before it device
// detail (the lone end was taken for a window from the file's start).
TEST(StepDetail, AWindowEndWithoutStartAndANegativeIdAreReported) {
  for (bool fast : {true, false}) {
    std::vector<TraceFile> files;
    files.push_back(FileFromLines(Meta("steps:2") + Step("step_execute_model[request_ids:a]", 100, 200) +
                                      Edge("end", 0, 250) + Step("step_execute_model[request_ids:b]", 300, 400) +
                                      Edge("start", -1, 450) + Edge("end", -1, 650) +
                                      Step("step_execute_model[request_ids:c]", 500, 600),
                                  "steps.jsonl", fast));
    auto merged = Merge(std::move(files), MergeOptions{});
    ASSERT_TRUE(merged.ok());
    const MergeResult& r = *merged;
    EXPECT_EQ(r.files[0].stats.Get(Problem::kBadField), 3u) << fast;
    EXPECT_EQ(r.summary.total.malformed_lines, 3u) << fast;
    EXPECT_EQ(DeviceDetail(r), (std::vector<bool>{false, false, false})) << fast;
    std::string where;
    for (const auto& i : r.files[0].stats.issues) where += i.where + " ";
    EXPECT_NE(where.find("steps.jsonl:4 "), std::string::npos) << where;  // the lone end's line
  }
}

TEST(StepDetail, WorkloadTagsBecomeTreeFields) {
  // [tokens:N][ctx:N] from the hooks are written as numbers in both views' trees; a step
  // without them (or with a tag that is not a whole number) has no such fields.
  MergeResult r = MergeStepsText(Meta() + Step("step_execute_model[request_ids:a][phase:prefill][tokens:512][ctx:2048]", 1, 2) +
                            Step("step_execute_model[request_ids:b][tokens:x]", 3, 4));
  JsonOut out;
  WriteTreesJsonl(r, &out);
  std::istringstream lines(out.text());
  std::string line;
  int tagged = 0, plain = 0;
  while (std::getline(lines, line)) {
    const auto t = nlohmann::json::parse(line);
    if (t["requests"][0] == "a") {
      EXPECT_EQ(t["tokens"], 512);
      EXPECT_EQ(t["ctx"], 2048);
      EXPECT_EQ(t["phase"], "prefill");
      ++tagged;
    } else {
      EXPECT_FALSE(t.contains("tokens")) << line;
      EXPECT_FALSE(t.contains("ctx")) << line;
      ++plain;
    }
  }
  EXPECT_EQ(tagged, 2);
  EXPECT_EQ(plain, 2);
}

TEST(StepDetail, AWindowEndWithoutItsStartIsNoWindow) {
  // Window 0's end at 250 has no start anywhere in the file: no window (reported, see
  // AWindowEndWithoutStartAndANegativeIdAreReported), so no step before it gains device detail;
  // window 1 still covers step c.
  const std::string dump = Meta("steps:3:1") + Step("step_execute_model[request_ids:a]", 100, 200) +
                           Edge("end", 0, 250) + Step("step_execute_model[request_ids:b]", 300, 400) +
                           Edge("start", 1, 450) + Edge("end", 1, 650) +
                           Step("step_execute_model[request_ids:c]", 500, 600) +
                           Step("step_execute_model[request_ids:d]", 700, 800);
  EXPECT_EQ(DeviceDetail(MergeStepsText(dump)), (std::vector<bool>{false, false, true, false}));
}

TEST(StepDetail, WindowEdgesMeanSamplingWithoutAConfig) {
  // META without config (or an unreadable one): the edges still say the file was sampled.
  const std::string dump = Meta() + Edge("start", 0, 90) + Edge("end", 0, 210) +
                           Step("step_execute_model[request_ids:a]", 100, 200) +
                           Step("step_execute_model[request_ids:b]", 300, 400);
  EXPECT_EQ(DeviceDetail(MergeStepsText(dump)), (std::vector<bool>{true, false}));
}

TEST(StepDetail, ManyWindowsEveryOtherStepInside) {
  // 100,000 one-step windows and twice as many steps, every other one outside (the lookup is a
  // binary search over window starts with the furthest end so far).
  FileMeta meta;
  meta.device_sampled = true;
  for (int64_t w = 0; w < 100000; ++w) {
    meta.device_window_edges.push_back({w, 1000 * w, FileMeta::WindowEdge::kStart});
    meta.device_window_edges.push_back({w, 1000 * w + 500, FileMeta::WindowEdge::kEnd});
  }
  const DeviceWindows windows = DeviceWindowsOf(meta, ClockMap{});
  size_t inside = 0;
  for (int64_t s = 0; s < 200000; ++s) inside += InsideAWindow(windows, 500 * s + 10, 500 * s + 400);
  EXPECT_EQ(inside, 100000u);
  EXPECT_FALSE(InsideAWindow(windows, -5, 10));
  EXPECT_FALSE(InsideAWindow(DeviceWindows{}, 0, 1));
}

}  // namespace
}  // namespace truffld::merge
