// The diagnosis overlay on trace.json: units, markers and lanes from hand-built verdicts; the
// merge trace's line layout, times and head; the streamed annotation on a small merge trace.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <unistd.h>

#include "report/trace_annotate.h"
#include "report/trace_overlay.h"

namespace truffld::diagnose {
namespace {

// Rank 0: step 0 (vertical) with two aten::mm instances and one aten::add; step 1 normal.
// `mm_name` replaces aten::mm's family name.
InstanceTable Table(const std::string& mm_name = "aten::mm") {
  InstanceTable t;
  const uint32_t mm = t.strings.Intern(mm_name), add = t.strings.Intern("aten::add"),
                 layer = t.strings.Intern("backend_op");
  for (int s = 0; s < 2; ++s) {
    StepInfo st;
    st.rank = 0;
    st.step_index = s;
    st.view = View::kVertical;
    st.step_name = "step";
    st.start_ns = 1000000 + s * 100000;
    st.end_ns = st.start_ns + 90000;
    st.first_instance = uint32_t(t.size());
    t.steps.push_back(st);
    t.Add(mm, layer, kNoString, st.start_ns + 1000, st.start_ns + 51000, {});   // 50 us
    t.Add(mm, layer, kNoString, st.start_ns + 30000, st.start_ns + 40000, {});  // 10 us, crosses nothing
    t.Add(add, layer, kNoString, st.start_ns + 45000, st.start_ns + 60000, {});  // crosses the first mm
  }
  return t;
}

StepDiagnosis Unit(int64_t step, Verdict label, std::vector<std::string> faulty) {
  StepDiagnosis d;
  d.evidence.rank = 0;
  d.evidence.step_index = step;
  d.evidence.view = View::kVertical;
  d.evidence.peer = PeerUnitEvidence{};
  d.evidence.peer->verdict = label;
  d.evidence.peer->summary = "why";
  d.label = label;
  d.abnormal = label == Verdict::kAbnormal;
  for (auto& f : faulty) {
    FaultyOperator op;
    op.family = f;
    op.instances = 2;
    op.cost = PeerCost{};
    op.cost->metric = Metric::kDevice;
    op.cost->observed_ns = 60000;
    op.cost->expected_ns = 20000;
    op.cost->excess_ns = 40000;
    d.faulty.push_back(op);
  }
  return d;
}

TEST(TraceOverlay, UnitsSpanTheirStepAndMarkersTargetEachInstance) {
  const InstanceTable t = Table();
  const TraceOverlay o = BuildTraceOverlay({Unit(0, Verdict::kAbnormal, {"aten::mm", "aten::add"}), Unit(1, Verdict::kNormal, {})}, t);
  EXPECT_EQ(o.units, 1u);
  EXPECT_EQ(o.markers, 3u);
  ASSERT_EQ(o.targets.size(), 3u);
  size_t units = 0;
  for (const OverlaySlice& s : o.slices) {
    if (s.marker) {
      const OperatorTarget& tg = o.targets.at(size_t(s.target));
      EXPECT_EQ(tg.start_ns, s.start_ns);
      EXPECT_EQ(tg.end_ns, s.end_ns);
      EXPECT_EQ("faulty " + tg.family, s.name);
      continue;
    }
    ++units;
    EXPECT_EQ(s.name, "abnormal");
    EXPECT_EQ(s.start_ns, t.steps[0].start_ns);
    EXPECT_EQ(s.end_ns, t.steps[0].end_ns);
    EXPECT_EQ(s.args["excess_us"], 80.0);
    EXPECT_EQ(s.args["faulty"][0]["observed_us"], 60.0);
    EXPECT_EQ(o.tracks[s.track].name, "rank 0 vertical");
  }
  EXPECT_EQ(units, 1u);
  // The add marker crosses the first mm marker: it goes to an overflow lane.
  std::set<std::string> names;
  for (const OverlayTrack& tr : o.tracks) names.insert(tr.name);
  EXPECT_TRUE(names.count("rank 0 vertical: faulty operators (overlap 1)")) << o.tracks.size();
  ASSERT_EQ(o.steps.size(), 2u);
  EXPECT_EQ(o.steps[0].vertical, "abnormal");
  EXPECT_EQ(o.steps[1].vertical, "normal");
}

TEST(TraceOverlay, InsufficientEvidenceIsMutedAndNormalUnitsAreLeftOut) {
  const TraceOverlay o = BuildTraceOverlay({Unit(0, Verdict::kInsufficient, {}), Unit(1, Verdict::kNormal, {})}, Table());
  ASSERT_EQ(o.slices.size(), 1u);
  EXPECT_EQ(o.slices[0].name, "insufficient evidence");
  EXPECT_EQ(o.slices[0].cname, "grey");
  EXPECT_EQ(o.insufficient, 1u);
  EXPECT_EQ(o.markers, 0u);
}

TEST(TraceOverlay, NestingLanesNeverHoldCrossingIntervals) {
  EXPECT_EQ(NestingLanes({{0, 10}, {2, 5}, {4, 12}, {10, 20}}), (std::vector<uint32_t>{0, 0, 1, 0}));
  EXPECT_EQ(NestingLanes({{0, 10}, {0, 10}}), (std::vector<uint32_t>{0, 0}));  // equal spans nest
  EXPECT_EQ(NestingLanes({}), std::vector<uint32_t>{});
}

TEST(TraceAnnotate, TimesConvertExactlyBothWays) {
  EXPECT_EQ(MicrosTextToNs("12.345"), 12345);
  EXPECT_EQ(MicrosTextToNs("12"), 12000);
  EXPECT_EQ(MicrosTextToNs("-0.5"), -500);
  EXPECT_EQ(MicrosTextToNs("1.2345"), std::nullopt);
  EXPECT_EQ(MicrosTextToNs("1e3"), std::nullopt);
  EXPECT_EQ(MicrosTextToNs(""), std::nullopt);
  for (int64_t ns : {int64_t{0}, int64_t{7}, int64_t{12345}, int64_t{999999999999}, int64_t{-1500}})
    EXPECT_EQ(MicrosTextToNs(NsToMicrosText(ns)), ns) << ns;
  EXPECT_EQ(NsToMicrosText(1500), "1.500");
}

TEST(TraceAnnotate, ReadsTheMergeSliceLayoutOnly) {
  auto s = ParseSliceLine(R"({"ph":"X","name":"a\"b\\","cat":"backend_op","pid":3,"tid":9,"ts":1.500,"dur":0.250,"args":{"op_id":1}})");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "a\\\"b\\\\");
  EXPECT_EQ(s->cat, "backend_op");
  EXPECT_EQ(s->pid, 3);
  EXPECT_EQ(s->tid, 9);
  EXPECT_EQ(s->ts_ns, 1500);
  EXPECT_EQ(s->dur_ns, 250);
  EXPECT_TRUE(s->has_args);
  EXPECT_FALSE(s->has_flow);
  EXPECT_TRUE(ParseSliceLine(R"({"ph":"X","name":"k","cat":"kernel","pid":0,"tid":1,"ts":2.000,"dur":1.000,"bind_id":4,"flow_in":true})")->has_flow);
  EXPECT_FALSE(ParseSliceLine(R"({"ph":"M","name":"thread_name","pid":0,"tid":1,"args":{"name":"x"}})"));
  EXPECT_FALSE(ParseSliceLine(R"({"name":"x","ph":"X","cat":"c","pid":0,"tid":1,"ts":1,"dur":1})"));
  EXPECT_FALSE(ParseSliceLine(R"({"ph":"X","name":"x","cat":"c","pid":0,"tid":1,"ts":1)"));
}

TEST(ParseSliceLine, HeadAndFlowSearchAgreeWithTheWholeParse) {
  for (const char* line :
       {R"({"ph":"X","name":"k","cat":"kernel","pid":0,"tid":1,"ts":2.000,"dur":1.000,"bind_id":4,"flow_in":true})",
        R"({"ph":"X","name":"a","cat":"backend_op","pid":3,"tid":9,"ts":1.500,"dur":0.250,"args":{"op_id":1}})"}) {
    size_t rest = 0;
    const auto head = ParseSliceHead(line, &rest);
    const auto whole = ParseSliceLine(line);
    ASSERT_TRUE(head && whole);
    EXPECT_FALSE(head->has_flow);
    EXPECT_EQ(SliceHasFlow(line, rest), whole->has_flow);
    EXPECT_EQ(head->ts_ns, whole->ts_ns);
    EXPECT_EQ(head->dur_ns, whole->dur_ns);
    EXPECT_EQ(head->has_args, whole->has_args);
  }
  // A name that spells "bind_id" is not a flow: the search starts after "dur".
  size_t rest = 0;
  const std::string_view named = R"({"ph":"X","name":"\"bind_id\":","cat":"c","pid":0,"tid":1,"ts":1.000,"dur":1.000})";
  ASSERT_TRUE(ParseSliceHead(named, &rest));
  EXPECT_FALSE(SliceHasFlow(named, rest));
}

TEST(TraceAnnotate, HeadGivesTheOriginAndRefusesOtherFiles) {
  const std::string head =
      R"({"displayTimeUnit":"ns","otherData":{"generator":"truffld-merge","clock":"realtime","time_origin_ns":"1763700000000000000"},"traceEvents":[)";
  const auto origin = TraceTimeOrigin(head);
  ASSERT_TRUE(origin.ok());
  EXPECT_EQ(origin.value(), 1763700000000000000);
  EXPECT_FALSE(TraceTimeOrigin(R"({"traceEvents":[)").ok());
  std::string annotated = head;
  annotated.insert(annotated.find(",\"clock\""), ",\"annotated_by\":\"truffld-diagnose\"");
  EXPECT_NE(TraceTimeOrigin(annotated).status().message().find("already annotated"), std::string::npos);
}

// A merge trace of step 0 of Table() (origin 0): the step, the two mm slices and the add.
// `mm_json`: aten::mm's name as the trace writes it (JSON-escaped).
std::string MergeTrace(bool closed, const std::string& mm_json = "aten::mm") {
  std::ostringstream s;
  s << R"({"displayTimeUnit":"ns","otherData":{"generator":"truffld-merge","clock":"realtime","time_origin_ns":"0"},"traceEvents":[)" "\n"
    << R"({"ph":"M","name":"process_name","pid":0,"tid":0,"args":{"name":"rank 0"}},)" "\n"
    << R"({"ph":"X","name":"step","cat":"step","pid":0,"tid":5,"ts":1000.000,"dur":90.000,"args":{"step_index":0,"rank":0,"request_count":1,"requests":["*"],"phase":"unknown"}},)" "\n"
    << R"({"ph":"X","name":")" << mm_json << R"(","cat":"backend_op","pid":0,"tid":5,"ts":1001.000,"dur":50.000},)" "\n"
    << R"({"ph":"X","name":")" << mm_json << R"(","cat":"backend_op","pid":0,"tid":5,"ts":1030.000,"dur":10.000,"args":{"op_id":2}},)" "\n"
    << R"({"ph":"X","name":"aten::add","cat":"backend_op","pid":1,"tid":5,"ts":1045.000,"dur":15.000})" "\n";
  if (closed) s << "]}\n";
  return s.str();
}

TEST(TraceAnnotate, LinksMarkersToTheirSlicesAndKeepsEverythingElse) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("trace_annotate_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string in = (dir / "trace.json").string(), out = (dir / "out.json").string();
  std::ofstream(in) << MergeTrace(true);
  const TraceOverlay o = BuildTraceOverlay({Unit(0, Verdict::kAbnormal, {"aten::mm", "aten::add"})}, Table());
  AnnotateStats st;
  ASSERT_TRUE(AnnotateTrace(in, o, out, &st).ok());
  EXPECT_EQ(st.flows, 2u);             // both mm slices
  EXPECT_EQ(st.markers_unlinked, 1u);  // the add slice is on pid 1, not rank 0
  EXPECT_EQ(st.steps_annotated, 1u);
  EXPECT_EQ(st.events, 5u);
  std::ifstream f(out);
  const nlohmann::json t = nlohmann::json::parse(f);
  EXPECT_EQ(t["otherData"]["annotated_by"], "truffld-diagnose");
  const auto& ev = t["traceEvents"];
  EXPECT_EQ(ev[1]["args"]["verdict_vertical"], "abnormal");
  EXPECT_EQ(ev[2]["bind_id"].get<uint64_t>() >= kOverlayFlowBase, true);
  EXPECT_EQ(ev[3]["args"]["op_id"], 2);  // args kept, flow added after them
  EXPECT_TRUE(ev[3]["flow_out"].get<bool>());
  EXPECT_FALSE(ev[4].contains("bind_id"));
  size_t flow_in = 0;
  for (const auto& e : ev)
    if (e.value("flow_in", false)) {
      ++flow_in;
      EXPECT_EQ(e["pid"], kDiagnosisPid);
    }
  EXPECT_EQ(flow_in, 2u);
  // A trace cut before its closing line is refused, naming the file.
  std::ofstream(in) << MergeTrace(false);
  const Status cut = AnnotateTrace(in, o, out, &st);
  EXPECT_FALSE(cut.ok());
  EXPECT_NE(cut.message().find("trace.json"), std::string::npos) << cut.message();
  fs::remove_all(dir);
}

// The annotation looks for a slice's time at its first `,"ts":` before parsing the whole line;
// a name holding that text escaped (`,\"ts\":`) neither hides the slice's own time nor stands
// for it.
TEST(TraceAnnotate, NamesHoldingTimeTextDoNotMisleadTheSearch) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("trace_annotate_ts_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string in = (dir / "trace.json").string(), out = (dir / "out.json").string();
  const std::string family = R"(mm","ts":7.000,"x)", escaped = R"(mm\",\"ts\":7.000,\"x)";
  std::ofstream(in) << MergeTrace(true, escaped);
  const TraceOverlay o = BuildTraceOverlay({Unit(0, Verdict::kAbnormal, {family})}, Table(family));
  AnnotateStats st;
  ASSERT_TRUE(AnnotateTrace(in, o, out, &st).ok());
  EXPECT_EQ(st.flows, 2u);  // both slices of the odd family, found at their own times
  EXPECT_EQ(st.steps_annotated, 1u);
  std::ifstream f(out);
  const nlohmann::json t = nlohmann::json::parse(f);
  EXPECT_EQ(t["traceEvents"][2]["name"], family);
  EXPECT_TRUE(t["traceEvents"][2]["flow_out"].get<bool>());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace truffld::diagnose
