// The device idle time of a step (read/outside_time.h, "(device idle)"): what counts as idle on
// hand-built steps, how the what-if replay cuts it, and how idle that waited for a late launch
// is named as its host cause's effect (peer/impact.h).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "peer/impact.h"
#include "peer/replay.h"
#include "replay_test_util.h"
#include "read/outside_time.h"
#include "read/tree_reader.h"
#include "../tree_line.h"

namespace truffld::diagnose {
namespace {

using IdleBusy = std::vector<std::pair<int64_t, int64_t>>;

StepInfo IdleStepAt(int64_t start, int64_t end) {
  StepInfo s;
  s.start_ns = start;
  s.end_ns = end;
  return s;
}

TEST(DeviceIdle, OverlappingStreamsCountOnce) {
  StringTable strings;
  // Two streams: [100, 400) and [300, 600) overlap; [700, 800) after an idle stretch.
  auto p = detail::DeviceIdleInstance(IdleStepAt(0, 1000), IdleBusy{{300, 600}, {100, 400}, {700, 800}}, &strings);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(strings.Get(p->family), kDeviceIdleFamily);
  EXPECT_EQ(strings.Get(p->layer), "other");
  EXPECT_DOUBLE_EQ(p->detail.host_ns, 100 + 100 + 200);  // before, between, after the work
  EXPECT_EQ(p->start, 800);  // the longest idle stretch: after the last work
  EXPECT_EQ(p->end, 1000);
  EXPECT_TRUE(p->detail.flags & kDetailOutside);
  EXPECT_TRUE(p->detail.flags & kDetailIdle);
  EXPECT_FALSE(p->detail.flags & kDetailHasDevice);  // not device work of its own
}

TEST(DeviceIdle, WorkCrossingTheStepEdgesIsClipped) {
  StringTable strings;
  // A kernel from before the step into it, and one running past its end.
  auto p = detail::DeviceIdleInstance(IdleStepAt(1000, 2000), IdleBusy{{900, 1200}, {1500, 2600}}, &strings);
  ASSERT_TRUE(p.has_value());
  EXPECT_DOUBLE_EQ(p->detail.host_ns, 300);
  EXPECT_EQ(p->start, 1200);
  EXPECT_EQ(p->end, 1500);
  // The previous step's work that ran into this one keeps the device busy too.
  StepInfo s = IdleStepAt(1000, 2000);
  s.prev_device_end = 1400;
  p = detail::DeviceIdleInstance(s, IdleBusy{{1500, 1900}}, &strings);
  ASSERT_TRUE(p.has_value());
  EXPECT_DOUBLE_EQ(p->detail.host_ns, 100 + 100);
}

TEST(DeviceIdle, NoneWithoutDeviceWorkOrRecords) {
  StringTable strings;
  EXPECT_FALSE(detail::DeviceIdleInstance(IdleStepAt(0, 1000), IdleBusy{}, &strings));  // a host-only step
  EXPECT_FALSE(detail::DeviceIdleInstance(IdleStepAt(0, 1000), IdleBusy{{1200, 1300}}, &strings));  // none inside
  StepInfo tail = IdleStepAt(0, 1000);  // only the previous step's work ran into it
  tail.prev_device_end = 300;
  EXPECT_FALSE(detail::DeviceIdleInstance(tail, IdleBusy{}, &strings));
  StepInfo window = IdleStepAt(0, 1000);  // outside a device window: nothing says what the device did
  window.device_detail = false;
  EXPECT_FALSE(detail::DeviceIdleInstance(window, IdleBusy{{100, 200}}, &strings));
  StepInfo step_level = IdleStepAt(0, 1000);  // no operator detail: judged as the whole step
  step_level.operator_detail = false;
  EXPECT_FALSE(detail::DeviceIdleInstance(step_level, IdleBusy{{100, 200}}, &strings));
  // IdleBusy all along: nothing idle.
  EXPECT_FALSE(detail::DeviceIdleInstance(IdleStepAt(0, 1000), IdleBusy{{0, 600}, {500, 1000}}, &strings));
}

TEST(DeviceIdle, BusyUnionFoldsRepeats) {
  const IdleBusy u = detail::BusyUnion(IdleBusy{{5, 9}, {1, 3}, {2, 4}, {5, 9}, {7, 7}, {10, 11}});
  EXPECT_EQ(u, (IdleBusy{{1, 4}, {5, 9}, {10, 11}}));
}

std::string IdleKernel(int64_t start, int64_t end) {
  return R"({"name":"k","layer":"kernel","family":"k","start":)" + std::to_string(start) + R"(,"end":)" +
         std::to_string(end) + "}";
}

std::string IdleOp(const std::string& name, int64_t start, int64_t end, const std::string& kernel) {
  return R"({"name":")" + name + R"(","layer":"backend_op","family":")" + name + R"(","start":)" +
         std::to_string(start) + R"(,"end":)" + std::to_string(end) +
         R"(,"thread_id":7,"children":[{"name":"cudaLaunchKernel","layer":"runtime_call","family":"cudaLaunchKernel","start":)" +
         std::to_string(start + 1) + R"(,"end":)" + std::to_string(start + 5) + R"(,"children":[)" + kernel + "]}]}";
}

std::string IdleTree(const char* view, int64_t start, int64_t end, const std::string& children) {
  return testing::OneLine(R"({"schema":"truffld.trees/1","rank":0,"process_id":1,"step_index":0,"step":"s","requests":["a"],"view":")" +
                          std::string(view) + R"(","start":)" + std::to_string(start) + R"(,"end":)" + std::to_string(end) +
                          R"(,"root":{"name":"s","layer":"step","family":"step","start":)" + std::to_string(start) +
                          R"(,"end":)" + std::to_string(end) + R"(,"children":[)" + children + "]}}");
}

// From the trees: both views' device work counts as busy; the vertical step gets the instance.
TEST(DeviceIdle, FromTheTreesOfBothViews) {
  TreeReader r;
  r.ParseLine(IdleTree("vertical", 0, 10000, IdleOp("aten::mm", 0, 100, IdleKernel(200, 3000)) + "," +
                                             IdleOp("aten::add", 100, 200, IdleKernel(6000, 7000))), "t:1");
  const std::string nccl = R"({"name":"nccl:all_reduce","layer":"comm","family":"nccl:all_reduce","start":150,"end":190,)"
                           R"("thread_id":7,"children":[)" + IdleKernel(3000, 4000) + "]}";
  r.ParseLine(IdleTree("horizontal", 0, 10000, nccl), "t:2");
  const InstanceTable t = r.Finish();
  int idle = -1, n = 0;
  for (uint32_t i = 0; i < t.size(); ++i)
    if (t.strings.Get(t.family[i]) == kDeviceIdleFamily) idle = static_cast<int>(i), ++n;
  ASSERT_EQ(n, 1);
  EXPECT_EQ(t.steps[t.step[idle]].view, View::kVertical);
  EXPECT_DOUBLE_EQ(t.detail[idle].host_ns, 200 + 2000 + 3000);
  EXPECT_EQ(t.start_ns[idle], 7000);  // the longest stretch: after the last kernel
  EXPECT_EQ(t.end_ns[idle], 10000);
}

using test::ReplayOp;

ReplayItem IdleGap(int64_t from, int64_t to) {
  ReplayItem it = ReplayOp(from, from, from, from, to);
  it.idle = true;
  return it;
}

StepGraph IdleGraph(int64_t end_us, std::vector<ReplayItem> items) {
  StepGraph g;
  g.host_end = end_us * 1000;
  g.items = std::move(items);
  return g;
}

// Work launched early that still waited (a stream wait on another stream's event): cutting the
// idle stretch before it saves what was cut; the host, blocked on the device, leaves earlier.
TEST(DeviceIdleReplay, IdleBeforeQueuedWorkIsSaved) {
  StepGraph g = IdleGraph(1200, {ReplayOp(0, 10, 5, 10, 100), ReplayOp(10, 20, 15, 700, 1190), ReplayOp(20, 1200, -1, 0, 0, 1000),
                             IdleGap(100, 700)});
  EXPECT_EQ(ReplayedCompletion(g, {}), ObservedCompletion(g));  // uncut, the idle item is absent
  EXPECT_DOUBLE_EQ(ReplayImpactNs(g, {{3, 500e3, 0}}), 500e3);  // its host-metric cost cuts the device
  EXPECT_DOUBLE_EQ(ReplayImpactNs(g, {{3, 0, 500e3}}), 500e3);
}

// The device idled because the host stalled before the next launch: cutting the idle alone
// saves next to nothing (the work cannot start before its launch), cutting the host stall saves
// it all, and both together save it once.
TEST(DeviceIdleReplay, IdleThatWaitedForALaunchIsTheHostsCost) {
  StepGraph g = IdleGraph(1200, {ReplayOp(0, 100, 90, 95, 100), ReplayOp(100, 1100), ReplayOp(1100, 1200, 1110, 1115, 1190),
                             IdleGap(100, 1115)});
  EXPECT_EQ(ReplayedCompletion(g, {}), 1200000);
  EXPECT_LT(ReplayImpactNs(g, {{3, 1000e3, 0}}), 10e3);
  EXPECT_DOUBLE_EQ(ReplayImpactNs(g, {{1, 1000e3, 0}}), 1000e3);
  EXPECT_DOUBLE_EQ(ReplayImpactNs(g, {{1, 1000e3, 0}, {3, 1000e3, 0}}), 1000e3);
}

// An uncut idle item changes no other cut's replay.
TEST(DeviceIdleReplay, UncutIdleChangesNothing) {
  StepGraph with = IdleGraph(1200, {ReplayOp(0, 100, 90, 95, 100), ReplayOp(100, 1100), ReplayOp(1100, 1200, 1110, 1170, 1190),
                                IdleGap(100, 1170)});
  StepGraph without = with;
  without.items.pop_back();
  for (double cut : {100e3, 500e3, 1000e3})
    EXPECT_DOUBLE_EQ(ReplayImpactNs(with, {{1, cut, 0}}), ReplayImpactNs(without, {{1, cut, 0}}));
}

// The verdict's rule (impact.h): a blamed idle that its host cause explains is that cause's
// effect, listed after it, and the unit's excess and impact count the time once.
TEST(DeviceIdleBlame, IdleExplainedByAHostGapIsItsEffect) {
  InstanceTable t;
  StepInfo s = IdleStepAt(0, 1200000);
  t.steps.push_back(s);
  const uint32_t op = t.strings.Intern("aten::mm"), other = t.strings.Intern("other");
  const uint32_t gap = t.strings.Intern(kHostOutsideFamily), idle = t.strings.Intern(kDeviceIdleFamily);
  const uint32_t backend = t.strings.Intern("backend_op");
  auto add = [&](uint32_t fam, uint32_t layer, int64_t a, int64_t b, InstanceDetail d, double latency) {
    FeatureVector f{};
    f[kLaunchLatencyNs] = latency;
    t.Add(fam, layer, kNoString, a, b, f);
    t.detail.push_back(d);
  };
  InstanceDetail k1, g1, k2, i1;
  k1.flags = k2.flags = kDetailHasDevice;
  k1.device_start = 95000, k1.device_end = 100000;
  k2.device_start = 1115000, k2.device_end = 1190000;
  g1.flags = kDetailOutside, g1.host_ns = 1000000;
  i1.flags = kDetailOutside | kDetailIdle, i1.host_ns = 1025000;
  add(op, backend, 0, 100000, k1, 5000);
  add(gap, other, 100000, 1100000, g1, 0);
  add(op, backend, 1100000, 1200000, k2, 5000);
  add(idle, other, 100000, 1115000, i1, 0);
  auto row = [&](uint32_t i, uint32_t fam, double observed, double expected) {
    TestRow r;
    r.instance = i;
    r.family = fam;
    r.metric = Metric::kHost;
    r.observed = static_cast<float>(observed);
    r.effective_expected = static_cast<float>(expected);
    return r;
  };
  const std::vector<TestRow> rows = {row(1, gap, 1000e3, 10e3), row(3, idle, 1025e3, 25e3)};
  DecisionResult d;
  d.units.resize(1);
  d.units[0].verdict = Verdict::kAbnormal;
  std::vector<std::vector<BlamedFamily>> blame(1);
  BlamedFamily bi, bg;
  bi.family = idle, bi.excess_ns = 1000e3;  // listed first: the larger excess
  bg.family = gap, bg.excess_ns = 990e3;
  blame[0] = {bi, bg};
  ReplayBlame(t, rows, {}, &d, &blame);
  ASSERT_EQ(blame[0].size(), 2u);
  EXPECT_EQ(blame[0][0].family, gap);  // the cause first
  EXPECT_NEAR(blame[0][0].impact_ns, 990e3, 1);
  EXPECT_EQ(blame[0][1].family, idle);
  EXPECT_EQ(blame[0][1].effect_of, gap);
  EXPECT_LT(blame[0][1].impact_ns, 0.1 * blame[0][1].excess_ns);
  EXPECT_NEAR(d.units[0].impact_ns, 990e3, 1);    // once, not 990 + 1000
  EXPECT_NEAR(d.units[0].absorbed_ns, 0, 1);      // of the cause's excess only
}

// When only the idle passed the run-wide cut, the host cost that made it (significant within
// its unit: IdleCauseCandidates) is adopted as its cause when its cut saves the idle's time;
// a candidate that saves nothing is not.
TEST(DeviceIdleBlame, TheCauseIsAdoptedWhenOnlyTheIdleWasSignificant) {
  InstanceTable t;
  t.steps.push_back(IdleStepAt(0, 1200000));
  const uint32_t op = t.strings.Intern("aten::mm"), other = t.strings.Intern("other");
  const uint32_t gap = t.strings.Intern(kHostOutsideFamily), idle = t.strings.Intern(kDeviceIdleFamily);
  const uint32_t add_fam = t.strings.Intern("aten::add"), backend = t.strings.Intern("backend_op");
  auto add = [&](uint32_t fam, uint32_t layer, int64_t a, int64_t b, InstanceDetail d) {
    FeatureVector f{};
    f[kLaunchLatencyNs] = (d.flags & kDetailHasDevice) ? 5000 : 0;
    t.Add(fam, layer, kNoString, a, b, f);
    t.detail.push_back(d);
  };
  InstanceDetail k1, g1, k2, i1, late;
  k1.flags = k2.flags = kDetailHasDevice;
  k1.device_start = 95000, k1.device_end = 100000;
  k2.device_start = 1115000, k2.device_end = 1190000;
  g1.flags = kDetailOutside, g1.host_ns = 1000000;
  i1.flags = kDetailOutside | kDetailIdle, i1.host_ns = 1025000;
  late.host_ns = 5000;  // after the last launch: cutting it saves nothing the idle cost
  add(op, backend, 0, 100000, k1);
  add(gap, other, 100000, 1100000, g1);
  add(op, backend, 1100000, 1190000, k2);
  add(add_fam, backend, 1190000, 1200000, late);
  add(idle, other, 100000, 1115000, i1);
  auto row = [&](uint32_t i, uint32_t fam, double observed, double expected) {
    TestRow r;
    r.instance = i;
    r.family = fam;
    r.observed = static_cast<float>(observed);
    r.effective_expected = static_cast<float>(expected);
    return r;
  };
  const std::vector<TestRow> rows = {row(1, gap, 1000e3, 10e3), row(3, add_fam, 5e3, 1e3), row(4, idle, 1025e3, 25e3)};
  DecisionResult d;
  d.units.resize(1);
  d.units[0].verdict = Verdict::kAbnormal;
  std::vector<std::vector<BlamedFamily>> blame(1), causes(1);
  BlamedFamily bi, bg, ba;
  bi.family = idle, bi.excess_ns = 1000e3;
  bg.family = gap, bg.excess_ns = 990e3;
  ba.family = add_fam, ba.excess_ns = 4e3;
  blame[0] = {bi};
  causes[0] = {ba, bg};
  ReplayBlame(t, rows, {}, &d, &blame, causes);
  ASSERT_EQ(blame[0].size(), 2u);
  EXPECT_EQ(blame[0][0].family, gap);
  EXPECT_NEAR(blame[0][0].impact_ns, 990e3, 1);
  EXPECT_EQ(blame[0][1].effect_of, gap);
  EXPECT_NEAR(d.units[0].impact_ns, 990e3, 1);
  // Only a candidate that saves nothing: the idle stays alone, its unit's impact near nothing.
  blame[0] = {bi};
  causes[0] = {ba};
  ReplayBlame(t, rows, {}, &d, &blame, causes);
  ASSERT_EQ(blame[0].size(), 1u);
  EXPECT_EQ(blame[0][0].effect_of, kNoString);
  EXPECT_LT(d.units[0].impact_ns, 10e3);
}

}  // namespace
}  // namespace truffld::diagnose
