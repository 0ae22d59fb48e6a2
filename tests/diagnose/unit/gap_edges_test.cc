// What borders a host gap or an idle stretch in the evidence (stage2/gap_edges.h), on a
// hand-built step: the operators whose edges meet the stretch's, the outermost when nested ones
// share an edge, the step's own edges, and nothing named for a side no operator meets.
#include <gtest/gtest.h>

#include <string>

#include "stage2/gap_edges.h"

namespace truffld::diagnose {
namespace {

// One step [0, 1000) holding the given operators; each gets device work [dev_start, dev_end)
// (none when dev_end is 0).
struct EdgeOp {
  const char* family;
  int64_t start, end, dev_start = 0, dev_end = 0;
  uint8_t flags = 0;
};

InstanceTable EdgeStep(std::initializer_list<EdgeOp> ops) {
  InstanceTable t;
  StepInfo s;
  s.start_ns = 0;
  s.end_ns = 1000;
  t.steps.push_back(s);
  const uint32_t layer = t.strings.Intern("backend_op");
  for (const EdgeOp& op : ops) {
    t.Add(t.strings.Intern(op.family), layer, kNoString, op.start, op.end, FeatureVector{});
    InstanceDetail d;
    d.flags = op.flags;
    if (op.dev_end > 0) {
      d.flags |= kDetailHasDevice;
      d.device_start = op.dev_start;
      d.device_end = op.dev_end;
    }
    t.detail.push_back(d);
  }
  return t;
}

TEST(GapEdges, HostGapNamesTheOperatorsOnEitherSide) {
  // aten::linear holds aten::mm, both ending at 300; the gap [300, 500) ends where aten::add starts.
  const InstanceTable t = EdgeStep({{"aten::linear", 100, 300}, {"aten::mm", 150, 300}, {"aten::add", 500, 900}});
  EXPECT_EQ(HostGapEdges(t, t.steps[0], 300, 500), ", between aten::linear and aten::add");
  EXPECT_EQ(HostGapEdges(t, t.steps[0], 0, 100), ", between the step's start and aten::linear");
  EXPECT_EQ(HostGapEdges(t, t.steps[0], 900, 1000), ", between aten::add and the step's end");
}

TEST(GapEdges, ASideNoOperatorMeetsIsLeftOut) {
  // [300, 450) ends at a call issued directly under the step (no operator starts at 450).
  const InstanceTable t = EdgeStep({{"aten::mm", 100, 300}, {"aten::add", 500, 900}});
  EXPECT_EQ(HostGapEdges(t, t.steps[0], 300, 450), ", after aten::mm");
  EXPECT_EQ(HostGapEdges(t, t.steps[0], 320, 500), ", before aten::add");
  EXPECT_EQ(HostGapEdges(t, t.steps[0], 320, 450), "");
}

TEST(GapEdges, PseudoInstancesAndGraphReplaysAreNeverNamed) {
  const InstanceTable t = EdgeStep({{"(host outside operators)", 300, 500, 0, 0, kDetailOutside},
                                  {"graph node", 100, 300, 100, 300, kDetailReplay},
                                  {"aten::add", 500, 900}});
  EXPECT_EQ(HostGapEdges(t, t.steps[0], 300, 500), ", before aten::add");
}

TEST(GapEdges, IdleStretchNamesTheDeviceWorkOnEitherSide) {
  // Ranges on the host differ from their device work: the idle stretch [400, 700) lies between
  // aten::mm's kernels (ending at 400) and aten::add's (starting at 700).
  const InstanceTable t = EdgeStep({{"aten::mm", 100, 200, 150, 400}, {"aten::add", 250, 300, 700, 950},
                                  {"aten::to", 300, 700}});  // no device work: never named
  EXPECT_EQ(IdleEdges(t, t.steps[0], 400, 700), ", between the device work of aten::mm and of aten::add");
  EXPECT_EQ(IdleEdges(t, t.steps[0], 0, 150), ", between the step's start and the device work of aten::mm");
  EXPECT_EQ(IdleEdges(t, t.steps[0], 950, 1000), ", between the device work of aten::add and the step's end");
  EXPECT_EQ(IdleEdges(t, t.steps[0], 410, 700), ", before the device work of aten::add");
  EXPECT_EQ(HostGapEdges(t, t.steps[0], 200, 250), ", between aten::mm and aten::add");
}

}  // namespace
}  // namespace truffld::diagnose
