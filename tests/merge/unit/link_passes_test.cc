// Passes 4-7 on hand-built inputs: API attribution, the correlation index, device linking and
// CUDA-graph capture owners.
#include <gtest/gtest.h>

#include "core/api_calls.h"
#include "core/correlation.h"
#include "core/device_links.h"
#include "core/graph_capture.h"
#include "pass_inputs.h"

namespace truffld::merge {
namespace {

using testing::FileBuilder;
using testing::RangesOf;

// Nesting by hand: every range in step `step` (kNoRange: in none), parents as given.
Nesting Nest(const std::vector<HostRange>& ranges, std::vector<uint32_t> parent, uint32_t step, int64_t process = 1) {
  Nesting n;
  n.real_ranges = uint32_t(ranges.size());
  n.parent = std::move(parent);
  n.step.assign(ranges.size(), step);
  n.layer.assign(ranges.size(), Layer::kBackend);
  for (uint32_t i = 0; i < ranges.size(); ++i) n.order.push_back(i);
  std::sort(n.order.begin(), n.order.end(), [&](uint32_t a, uint32_t b) { return NestingLess(ranges[a], ranges[b]); });
  if (step != kNoRange) {
    n.layer[step] = Layer::kStep;
    n.steps.push_back({process, ranges[step].start, ranges[step].end, step});
  }
  return n;
}

TEST(ApiCallsPass, ACallBelongsToTheInnermostRangeHoldingAllOfIt) {
  FileBuilder b;
  b.Range(0, 100, 1, 1, "step");        // 0
  b.Range(10, 40, 1, 1, "op");          // 1
  const uint32_t inside = b.Call(20, 30, 1, 1, 1);
  const uint32_t straddling = b.Call(35, 45, 1, 1, 2);   // runs past op's end: the step's
  const uint32_t other_thread = b.Call(50, 60, 1, 2, 3);  // no range on its thread: adopted
  const uint32_t outside = b.Call(200, 210, 1, 1, 4);
  TraceFile f = b.Finish();
  const auto ranges = RangesOf(f);
  const Nesting n = Nest(ranges, {kNoRange, 0}, 0);
  const ApiCalls a = AttachApiCalls(f, ranges, {}, n, true);
  auto owner = [&](uint32_t e) { return a.owner[a.calls.Rank(e)]; };
  EXPECT_EQ(owner(inside), 1u);
  EXPECT_EQ(owner(straddling), 0u);
  EXPECT_EQ(owner(other_thread), 0u);
  EXPECT_EQ(owner(outside), kNoRange);
  EXPECT_EQ(a.adopted, 1u);
  EXPECT_EQ(a.outside_step, 1u);
  EXPECT_EQ(a.capture[a.calls.Rank(other_thread)], kNoRange);  // capture ranges: its own thread only
  EXPECT_EQ(a.capture[a.calls.Rank(inside)], 1u);
  EXPECT_EQ(a.order, (std::vector<uint32_t>{inside, straddling, outside, other_thread}));  // thread, start
  EXPECT_TRUE(AttachApiCalls(f, ranges, {}, n, false).capture.empty());
}

TEST(ApiCallsPass, CaptureRangesAreKeptOutsideSteps) {
  FileBuilder b;
  b.Range(0, 10, 1, 1, "warmup");
  const uint32_t call = b.Call(2, 3, 1, 1, 1);
  TraceFile f = b.Finish();
  const auto ranges = RangesOf(f);
  const ApiCalls a = AttachApiCalls(f, ranges, {}, Nest(ranges, {kNoRange}, kNoRange), true);
  EXPECT_EQ(a.owner[a.calls.Rank(call)], kNoRange);
  EXPECT_EQ(a.capture[a.calls.Rank(call)], 0u);
  EXPECT_EQ(a.outside_step, 1u);
}

TEST(CorrelationPass, NestedDriverCallsAreNormalOtherSharersAreDuplicates) {
  FileBuilder b;
  const uint32_t runtime = b.Call(10, 50, 1, 1, 7, "cudaMalloc");
  b.Call(20, 30, 1, 1, 7, "cuMemAlloc", EventKind::kDriver);   // nested: normal
  const uint32_t again = b.Call(60, 70, 1, 1, 7, "cudaMemcpy");  // not nested: a duplicate
  b.Call(80, 90, 2, 1, 7, "elsewhere");                         // another process: neither
  b.Call(5, 6, 1, 1, 3);
  TraceFile f = b.Finish();
  std::vector<uint32_t> calls{0, 1, 2, 3, 4};
  IngestStats issues;
  const CorrelationIndex idx = IndexCorrelations(f, calls, &issues);
  EXPECT_EQ(idx.nested_api_calls, 1u);
  EXPECT_EQ(idx.duplicate_correlations, 1u);
  ASSERT_EQ(issues.issues.size(), 1u);
  EXPECT_EQ(issues.issues[0].where, "hand.jsonl:" + std::to_string(again + 1));
  const auto [lo, hi] = idx.Calls(7);
  ASSERT_EQ(hi - lo, 4);
  EXPECT_EQ(lo->event, runtime);  // (correlation, start) order
  EXPECT_EQ(idx.Calls(3).second - idx.Calls(3).first, 1);
  EXPECT_EQ(idx.Calls(99).second - idx.Calls(99).first, 0);
}

TEST(DeviceLinksPass, WorkLinksToTheLatestOutermostCallStartingBeforeIt) {
  FileBuilder b;
  b.Range(0, 1000, 1, 1, "step");
  const uint32_t first = b.Call(10, 20, 1, 1, 5);
  const uint32_t runtime = b.Call(30, 60, 1, 1, 5);
  b.Call(40, 50, 1, 1, 5, "cuLaunchKernel", EventKind::kDriver);  // nested in the runtime call
  const uint32_t k = b.Kernel(70, 80, 5);
  b.Kernel(70, 80, 99);   // no call has 99
  b.Kernel(5, 6, 5);      // before every call of 5
  b.Call(2000, 2010, 1, 1, 6);
  b.Kernel(2020, 2030, 6);  // its call is outside every step
  b.Add(EventKind::kSync, 65, 66, 1, 1, "sync", 5);
  TraceFile f = b.Finish();
  const auto ranges = RangesOf(f);
  const Nesting n = Nest(ranges, {kNoRange}, 0);
  ApiCalls a = AttachApiCalls(f, ranges, {}, n, false);
  IngestStats issues;
  const CorrelationIndex idx = IndexCorrelations(f, a.order, &issues);
  const DeviceLinks d = LinkDeviceWork(f, idx, a, 4, &issues);
  ASSERT_EQ(d.links.size(), 2u);  // the kernel and the SYNC record
  EXPECT_EQ(d.links[0], std::make_pair(runtime, k));
  EXPECT_EQ(d.links[1].first, runtime);
  EXPECT_EQ(d.linked, 1u);
  EXPECT_EQ(d.unattributed, 3u);
  EXPECT_EQ(d.kernels_unattributed, 3u);
  using U = Unattributed;
  EXPECT_EQ(d.reasons.items, (std::vector<std::pair<U, uint64_t>>{{U::kNoLaunchApi, 1}, {U::kStartsBeforeLaunch, 1},
                                                             {U::kLaunchOutsideStep, 1}}));
  EXPECT_EQ(issues.Get(Problem::kDeviceNoLaunchApi), 1u);  // the first two are reported, warm-up is not
  EXPECT_EQ(issues.Get(Problem::kDeviceStartsBeforeLaunch), 1u);
  EXPECT_EQ(issues.Get(Problem::kDuplicateCorrelation), 1u);  // the two calls of 5 (pass 5)
  EXPECT_EQ(issues.issues.size(), 3u);                        // nothing about warm-up work
  (void)first;
}

TEST(GraphCapturePass, ClonesLeadToTheRangeOpenAtCapture) {
  FileBuilder b;
  b.Range(0, 100, 1, 1, "warmup");  // outside every step
  b.Call(10, 20, 1, 1, 40, "cudaGraphAddKernelNode");
  EventExtra original, clone;
  original.graph_node_id = 7;
  clone.graph_node_id = 8;
  clone.original_graph_node_id = 7;
  b.Add(EventKind::kGraphNode, 15, 15, 1, 1, "", 40, original);
  b.Add(EventKind::kGraphNode, 30, 30, 1, 1, "", 41, clone);  // instantiated: a clone of 7
  EventExtra orphan;
  orphan.graph_node_id = 9;
  b.Add(EventKind::kGraphNode, 30, 30, 1, 1, "", 77, orphan);  // no call has 77
  TraceFile f = b.Finish();
  const auto ranges = RangesOf(f);
  ApiCalls a = AttachApiCalls(f, ranges, {}, Nest(ranges, {kNoRange}, kNoRange), true);
  IngestStats issues;
  const CorrelationIndex idx = IndexCorrelations(f, a.order, &issues);
  const auto owners = CaptureOwners(f, idx, a);
  EXPECT_EQ(owners.size(), 2u);
  EXPECT_EQ(owners.at(7), 0u);
  EXPECT_EQ(owners.at(8), 0u);
  EXPECT_EQ(owners.count(9), 0u);
}

}  // namespace
}  // namespace truffld::merge
