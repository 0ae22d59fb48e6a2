// Passes 2 and 3 on hand-built ranges: classification (layers, implicit steps) and nesting
// (parents, steps, nested steps, adoption), plus the NVTX pairing rule both folding and range
// reconstruction use.
#include <gtest/gtest.h>

#include "core/classify_ranges.h"
#include "core/nest.h"
#include "core/nvtx_pairing.h"
#include "pass_inputs.h"

namespace truffld::merge {
namespace {

using testing::FileBuilder;
using testing::RangesOf;

TEST(PushPopPairing, APopClosesTheInnermostOpenPush) {
  PushPopPairing p;
  EXPECT_EQ(p.Pop(), PushPopPairing::kUnmatched);  // nothing open
  p.Push(1);
  p.Push(2);
  EXPECT_EQ(p.Pop(), 2u);
  p.Push(3);
  EXPECT_EQ(p.open(), (std::vector<uint32_t>{1, 3}));  // outermost first
  EXPECT_EQ(p.Pop(), 3u);
  EXPECT_EQ(p.Pop(), 1u);
  EXPECT_EQ(p.Pop(), PushPopPairing::kUnmatched);
  p.Push(4);
  p.Reset();
  EXPECT_TRUE(p.open().empty());
  EXPECT_TRUE(InPairingOrder(5, 5));   // equal times: file order
  EXPECT_TRUE(InPairingOrder(5, 6));
  EXPECT_FALSE(InPairingOrder(6, 5));  // a step back in time
}

TEST(ClassifyPass, LayersComeFromTheRules) {
  FileBuilder b;
  b.Range(0, 100, 1, 1, "step_execute_model[request_ids:0]");
  b.Range(10, 20, 1, 1, "aten::mm");
  b.Range(30, 40, 1, 1, "nccl:all_reduce");
  b.Range(50, 60, 1, 1, "torch.nn.functional.linear");
  b.Range(70, 80, 1, 1, "something else");
  TraceFile f = b.Finish();
  const Rules rules = Rules::Defaults();
  RangeClasses classes(rules, f.strings);
  const RangeLayers l = ClassifyRanges(f, RangesOf(f), &classes, true);
  EXPECT_EQ(l.layer, (std::vector<Layer>{Layer::kStep, Layer::kBackend, Layer::kComm, Layer::kFrontend, Layer::kOther}));
  EXPECT_TRUE(l.implicit.empty());  // the file has a step
}

TEST(ClassifyPass, AFileWithoutStepsGetsOneImplicitStepPerProcess) {
  FileBuilder b;
  b.Range(10, 20, 7, 1, "aten::mm");
  b.Call(5, 30, 7, 2, 1);          // an API call widens its process's span
  b.Range(100, 150, 3, 1, "aten::add");
  b.Call(160, 155, 3, 1, 2);       // ends before it starts: spans [160, 160]
  TraceFile f = b.Finish();
  const Rules rules = Rules::Defaults();
  RangeClasses classes(rules, f.strings);
  const RangeLayers l = ClassifyRanges(f, RangesOf(f), &classes, true);
  ASSERT_EQ(l.implicit.size(), 2u);  // ascending by process
  EXPECT_EQ(l.implicit[0].process, 3);
  EXPECT_EQ(l.implicit[0].start, 100);
  EXPECT_EQ(l.implicit[0].end, 160);
  EXPECT_EQ(l.implicit[1].process, 7);
  EXPECT_EQ(l.implicit[1].start, 5);
  EXPECT_EQ(l.implicit[1].end, 30);
  EXPECT_TRUE(ClassifyRanges(f, RangesOf(f), &classes, false).implicit.empty());  // --no-implicit-steps
}

// Layers by hand: nesting needs no rules.
RangeLayers Layers(std::vector<Layer> l, std::vector<ImplicitStep> implicit = {}) {
  RangeLayers out;
  out.layer = std::move(l);
  out.source.assign(out.layer.size(), RangeClasses::Source::kNone);
  out.implicit = std::move(implicit);
  return out;
}

TEST(NestPass, EachRangeHangsUnderItsInnermostContainerOnItsThread) {
  FileBuilder b;
  b.Range(0, 100, 1, 1, "step");       // 0
  b.Range(10, 50, 1, 1, "outer");      // 1
  b.Range(10, 20, 1, 1, "inner");      // 2: same start, shorter: inside 1
  b.Range(40, 60, 1, 1, "crossing");   // 3: overlaps 1's end: inside the step only
  b.Range(20, 30, 1, 2, "other");      // 4: another thread, inside the step's span: adopted
  b.Range(200, 300, 1, 1, "after");    // 5: in no step
  TraceFile f = b.Finish();
  const auto ranges = RangesOf(f);
  const Nesting n = NestRanges(f, ranges, Layers({Layer::kStep, Layer::kBackend, Layer::kBackend, Layer::kBackend,
                                                  Layer::kBackend, Layer::kBackend}));
  EXPECT_EQ(n.parent, (std::vector<uint32_t>{kNoRange, 0, 1, 0, 0, kNoRange}));
  EXPECT_EQ(n.step, (std::vector<uint32_t>{0, 0, 0, 0, 0, kNoRange}));
  EXPECT_EQ(n.adopted_ranges, 1u);
  EXPECT_EQ(n.order, (std::vector<uint32_t>{0, 1, 2, 3, 5, 4}));  // thread, start, longer first
  ASSERT_EQ(n.steps.size(), 1u);
  EXPECT_EQ(StepContaining(n.steps, 1, 20, 30), 0u);
  EXPECT_EQ(StepContaining(n.steps, 1, 90, 110), kNoRange);  // not wholly inside
  EXPECT_EQ(StepContaining(n.steps, 2, 20, 30), kNoRange);   // another process
}

TEST(NestPass, AStepInsideAStepBecomesOther) {
  FileBuilder b;
  b.Range(0, 100, 1, 1, "run_batch");
  b.Range(10, 20, 1, 1, "run_batch");
  TraceFile f = b.Finish();
  const Nesting n = NestRanges(f, RangesOf(f), Layers({Layer::kStep, Layer::kStep}));
  EXPECT_EQ(n.layer, (std::vector<Layer>{Layer::kStep, Layer::kOther}));
  EXPECT_EQ(n.step, (std::vector<uint32_t>{0, 0}));
  EXPECT_EQ(n.steps.size(), 1u);
}

TEST(NestPass, RootsJoinTheirProcessImplicitStep) {
  FileBuilder b;
  b.Range(10, 20, 4, 1, "a");
  b.Range(12, 15, 4, 1, "b");
  b.Range(30, 40, 9, 1, "c");
  TraceFile f = b.Finish();
  const Nesting n = NestRanges(f, RangesOf(f), Layers({Layer::kBackend, Layer::kBackend, Layer::kBackend},
                                                      {{4, 10, 20}, {9, 30, 40}}));
  ASSERT_EQ(n.real_ranges, 3u);
  EXPECT_TRUE(n.IsImplicit(3));
  EXPECT_EQ(n.parent, (std::vector<uint32_t>{3, 0, 4, kNoRange, kNoRange}));
  EXPECT_EQ(n.step, (std::vector<uint32_t>{3, 3, 4, 3, 4}));
  EXPECT_EQ(n.layer[3], Layer::kStep);
  EXPECT_EQ(n.steps.size(), 2u);
  EXPECT_EQ(n.adopted_ranges, 0u);
}

}  // namespace
}  // namespace truffld::merge
