// Pass 8 on hand-built inputs: roots per step, the horizontal view, request subsets, calls and
// device work, CUDA-graph anchors, sibling order and merged-axis times.
#include <gtest/gtest.h>

#include <unordered_map>

#include "core/build_trees.h"
#include "pass_inputs.h"

namespace truffld::merge {
namespace {

using testing::FileBuilder;
using testing::RangesOf;

// Everything tree building reads, for a file whose ranges are given with their layers and
// parents, all in step `step`; API owners and device links as given.
struct Fixture {
  TraceFile f;
  std::vector<HostRange> ranges;
  std::vector<JoinedPayload> payloads;
  RangeLayers layers;
  Nesting nest;
  ApiCalls api;
  DeviceLinks links;
  std::unordered_map<int64_t, uint32_t> capture;
  ClockMap clock;
  Rules rules = Rules::Defaults();

  Fixture(TraceFile file, std::vector<Layer> layer, std::vector<uint32_t> parent, std::vector<uint32_t> step)
      : f(std::move(file)), ranges(RangesOf(f)) {
    layers.layer = layer;
    layers.source.assign(layer.size(), RangeClasses::Source::kNone);
    nest.real_ranges = uint32_t(ranges.size());
    nest.parent = std::move(parent);
    nest.step = std::move(step);
    nest.layer = std::move(layer);
    for (uint32_t i = 0; i < ranges.size(); ++i) nest.order.push_back(i);
    std::sort(nest.order.begin(), nest.order.end(), [&](uint32_t a, uint32_t b) { return NestingLess(ranges[a], ranges[b]); });
    api.calls.Build(f.events, [](const Event& e) { return IsApiKind(e.kind); });
    api.owner.assign(api.calls.size(), kNoRange);
  }
  FileTrees Build() {
    BuildInputs in;
    in.clock = &clock;
    in.ranges = &ranges;
    in.payloads = &payloads;
    in.layers = &layers;
    in.nesting = &nest;
    in.api = &api;
    in.links = &links;
    in.capture = &capture;
    RangeClasses classes(rules, f.strings);
    return BuildTrees(f, in, &classes, &f.strings);
  }
};

std::vector<std::string> Children(const TraceFile& f, const FileTrees& t, uint32_t n) {
  std::vector<std::string> out;
  for (uint32_t c = t.nodes[n].first_child; c != kNoNode; c = t.nodes[c].next_sibling)
    out.push_back(t.nodes[c].event == kNoEvent ? "<implicit>" : std::string(f.strings.Get(f.events[t.nodes[c].event].name)));
  return out;
}

TEST(BuildTreesPass, StepsGetTwoRootsCommRangesOpenTheHorizontalView) {
  FileBuilder b;
  b.Range(0, 100, 1, 1, "step_execute_model[request_ids:1_2]");  // 0
  b.Range(10, 30, 1, 1, "attn");                                 // 1
  b.Range(40, 60, 1, 1, "all_reduce");                           // 2: comm, under the step
  b.Range(45, 50, 1, 1, "inner");                                // 3: inside the comm range
  b.Range(70, 80, 1, 1, "sampler[request_ids:2]");              // 4: names a subset
  b.Range(200, 300, 1, 1, "outside");                            // 5: in no step
  Fixture fx(b.Finish(), {Layer::kStep, Layer::kBackend, Layer::kComm, Layer::kBackend, Layer::kOther, Layer::kOther},
             {kNoRange, 0, 0, 2, 0, kNoRange}, {0, 0, 0, 0, 0, kNoRange});
  fx.clock.offset = 1000;  // node times on the merged axis
  const FileTrees t = fx.Build();
  ASSERT_EQ(t.steps.size(), 1u);
  const StepRoot& s = t.steps[0];
  EXPECT_EQ(s.requests, (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(s.start, 1000);
  EXPECT_EQ(s.line, 1u);
  EXPECT_EQ(Children(fx.f, t, s.vertical), (std::vector<std::string>{"attn", "sampler[request_ids:2]"}));
  EXPECT_EQ(Children(fx.f, t, s.horizontal), (std::vector<std::string>{"all_reduce"}));
  const uint32_t comm = t.nodes[s.horizontal].first_child;
  EXPECT_EQ(Children(fx.f, t, comm), (std::vector<std::string>{"inner"}));
  ASSERT_EQ(t.anchors.size(), 1u);  // the comm range, anchored to the step's vertical root
  EXPECT_EQ(t.anchors[0], std::make_pair(comm, s.vertical));
  ASSERT_EQ(t.requests.size(), 1u);
  EXPECT_EQ(t.request_sets[t.requests[0].second], (std::vector<std::string>{"2"}));
  EXPECT_EQ(t.nodes[s.vertical].start, 1000);
  EXPECT_EQ(t.nodes[s.vertical].end, 1100);
  EXPECT_EQ(t.nodes.size(), 6u);  // two roots + four ranges; "outside" has none
  EXPECT_EQ(fx.f.events[1].start, 10);  // the events are only read
}

TEST(BuildTreesPass, CallsAndDeviceWorkHangUnderTheirOwnersInStartOrder) {
  FileBuilder b;
  b.Range(0, 100, 1, 1, "run_batch");   // 0
  b.Range(50, 60, 1, 1, "late_op");     // 1
  const uint32_t call = b.Call(10, 20, 1, 1, 3);  // created after late_op, starts before it
  const uint32_t k = b.Kernel(30, 90, 3);
  Fixture fx(b.Finish(), {Layer::kStep, Layer::kBackend}, {kNoRange, 0}, {0, 0});
  fx.api.owner[fx.api.calls.Rank(call)] = 0;
  fx.links.links.push_back({call, k});
  const FileTrees t = fx.Build();
  const uint32_t root = t.steps[0].vertical;
  EXPECT_EQ(Children(fx.f, t, root), (std::vector<std::string>{"cudaLaunchKernel", "late_op"}));  // by start
  const uint32_t call_node = t.nodes[root].first_child;
  EXPECT_EQ(t.nodes[call_node].layer, Layer::kRuntime);
  EXPECT_EQ(Children(fx.f, t, call_node), (std::vector<std::string>{"k"}));
  EXPECT_EQ(t.nodes[t.nodes[call_node].first_child].layer, Layer::kKernel);
}

TEST(BuildTreesPass, GraphWorkIsAnchoredToItsCapturingRangeEvenOutsideSteps) {
  FileBuilder b;
  b.Range(0, 10, 1, 1, "aten::mm");     // 0: captured the graph, in no step
  b.Range(100, 200, 1, 1, "run_batch"); // 1
  const uint32_t launch = b.Call(110, 120, 1, 1, 9, "cudaGraphLaunch");
  const uint32_t k = b.Kernel(130, 140, 9, kNone, /*graph_node=*/7);
  Fixture fx(b.Finish(), {Layer::kBackend, Layer::kStep}, {kNoRange, kNoRange}, {kNoRange, 1});
  fx.api.owner[fx.api.calls.Rank(launch)] = 1;
  fx.links.links.push_back({launch, k});
  fx.capture[7] = 0;
  const FileTrees t = fx.Build();
  ASSERT_EQ(t.anchors.size(), 1u);
  const Node& anchor = t.nodes[t.anchors[0].second];
  EXPECT_EQ(anchor.event, 0u);  // a node of its own, in no tree
  EXPECT_EQ(anchor.next_sibling, kNoNode);
  EXPECT_EQ(fx.f.strings.Get(anchor.family), "aten::mm");
  EXPECT_EQ(t.counters.capture_ranges_outside_steps, 1u);
  EXPECT_EQ(t.counters.graph_ops_attributed, 1u);
}

TEST(BuildTreesPass, ImplicitStepsAndJoinedPayloads) {
  FileBuilder b;
  b.Range(10, 20, 4, 1, "ncclCommInitRank");
  Fixture fx(b.Finish(), {Layer::kComm}, {1, kNoRange}, {1, 1});
  fx.nest.real_ranges = 1;
  fx.nest.layer.push_back(Layer::kStep);
  fx.layers.implicit = {{4, 10, 20}};
  fx.payloads = {{0, fx.f.strings.Intern("{\"comm\":7}")}};
  const FileTrees t = fx.Build();
  ASSERT_EQ(t.steps.size(), 1u);
  EXPECT_TRUE(t.steps[0].implicit);
  EXPECT_EQ(t.steps[0].requests, (std::vector<std::string>{"*"}));
  EXPECT_EQ(fx.f.strings.Get(t.implicit_name), "<implicit step>");
  EXPECT_EQ(t.counters.implicit_steps, 1u);
  ASSERT_EQ(t.payloads.size(), 1u);
  EXPECT_EQ(fx.f.strings.Get(t.payloads[0].second), "{\"comm\":7}");
  EXPECT_TRUE(t.nodes[t.payloads[0].first].has_payload);
}

}  // namespace
}  // namespace truffld::merge
