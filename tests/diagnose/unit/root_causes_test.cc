// Root causes and the report's headline: blame grouped by fault class and family with the step
// time it cost, blame below the impact floor left out (but a unit's largest), stragglers a
// finding of their own only when nothing on the rank explains them, the run's cost counting a
// rank-step once, and the headline, step-time plot and card lists that report.html draws.
#include <gtest/gtest.h>

#include <cmath>

#include "read/instances.h"
#include "report/output.h"
#include "report/html_report.h"
#include "report/root_causes.h"
#include "peer/stage.h"

namespace truffld::diagnose {
namespace {

struct Blame {
  std::string family;
  Metric metric = Metric::kDevice;
  double excess_ns = 0;
  double impact_ns = std::nan("");
  std::string layer = "backend_op";
};

constexpr int64_t kStepNs = 10'000'000;

StepDiagnosis Unit(int64_t rank, int64_t step, View view, const std::vector<Blame>& blame) {
  StepDiagnosis s;
  StepEvidence& e = s.evidence;
  e.rank = rank;
  e.step_index = step;
  e.view = view;
  e.step_duration_ns = kStepNs;
  e.start_ns = 1'000'000'000 + step * 12'000'000;
  e.end_ns = e.start_ns + kStepNs;
  e.peer = PeerUnitEvidence{};
  e.peer->alpha = 0.01;
  e.peer->impact_ns = 0;
  for (const Blame& b : blame) {
    FaultyOperator f;
    f.family = b.family;
    f.layer = b.layer;
    PeerCost c;
    c.metric = b.metric;
    c.excess_ns = b.excess_ns;
    c.impact_ns = b.impact_ns;
    c.share = b.excess_ns / kStepNs;
    f.cost = c;
    s.faulty.push_back(f);
    e.peer->impact_ns += std::isfinite(b.impact_ns) ? b.impact_ns : b.excess_ns;
  }
  s.abnormal = !blame.empty();
  s.label = blame.empty() ? Verdict::kNormal : Verdict::kAbnormal;
  e.peer->verdict = s.label;
  return s;
}

ReportRunData PeerRun(double floor) {
  ReportRunData run;
  run.from_peer = true;
  run.alpha = 0.01;
  run.min_impact_share = floor;
  return run;
}

TEST(RootCauses, EachBlameHasTheClassAnOperatorActsOn) {
  EXPECT_EQ(FaultClass::kSchedulingGap, ClassifyBlame(View::kVertical, kBetweenStepsFamily, "other", Metric::kHost));
  EXPECT_EQ(FaultClass::kHostOutside, ClassifyBlame(View::kVertical, kHostOutsideFamily, "other", Metric::kHost));
  EXPECT_EQ(FaultClass::kSlowCopy, ClassifyBlame(View::kVertical, kStepCallsFamily, "other", Metric::kDevice));
  EXPECT_EQ(FaultClass::kSlowCopy, ClassifyBlame(View::kVertical, "aten::copy_", "backend_op", Metric::kDevice));
  EXPECT_EQ(FaultClass::kHostStall, ClassifyBlame(View::kVertical, "aten::copy_", "backend_op", Metric::kHost));
  EXPECT_EQ(FaultClass::kSlowGpuWork, ClassifyBlame(View::kVertical, "aten::mm", "backend_op", Metric::kDevice));
  EXPECT_EQ(FaultClass::kSlowLink, ClassifyBlame(View::kHorizontal, "ncclAllReduce", "comm", Metric::kDevice));
  for (int c = 0; c <= static_cast<int>(FaultClass::kStragglerRank); ++c) {
    EXPECT_GT(std::string(FaultClassHint(static_cast<FaultClass>(c))).size(), 40u) << c;
  }
}

TEST(RootCauses, OneFamilyAcrossRanksIsOneCauseCostedByItsImpact) {
  std::vector<StepDiagnosis> d = {
      Unit(0, 3, View::kVertical, {{"aten::mm", Metric::kDevice, 900'000, 800'000}}),
      Unit(2, 5, View::kVertical, {{"aten::mm", Metric::kDevice, 700'000}}),  // not replayed: its excess
      Unit(1, 4, View::kVertical, {{"(between steps)", Metric::kHost, 3'000'000, 2'500'000, "other"}}),
      Unit(1, 6, View::kVertical, {}),
  };
  const std::vector<RootCause> c = GroupRootCauses(d, PeerRun(0.01));
  ASSERT_EQ(2u, c.size());
  EXPECT_EQ(FaultClass::kSchedulingGap, c[0].fault_class);
  EXPECT_DOUBLE_EQ(2'500'000, c[0].cost_ns);
  EXPECT_EQ("aten::mm", c[1].family);
  EXPECT_EQ("device", c[1].metric);
  EXPECT_DOUBLE_EQ(1'500'000, c[1].cost_ns);
  EXPECT_EQ((std::vector<int64_t>{0, 2}), c[1].ranks);
  EXPECT_EQ(3, c[1].first_step);
  EXPECT_EQ(5, c[1].last_step);
  EXPECT_EQ(2, c[1].units);
  EXPECT_EQ(0u, c[1].top_unit);  // the costlier of its two units
  EXPECT_EQ(d[0].evidence.start_ns, c[1].start_ns);
  EXPECT_EQ(d[1].evidence.end_ns, c[1].end_ns);
}

TEST(RootCauses, BlameBelowTheImpactFloorIsLeftOutButAUnitsLargest) {
  // 0.5% of a 10 ms step each: below a 1% floor. The first stays (the unit passed the floor).
  std::vector<StepDiagnosis> d = {Unit(0, 1, View::kVertical,
                                       {{"aten::mm", Metric::kDevice, 50'000, 50'000},
                                        {"aten::silu", Metric::kDevice, 600, 600}})};
  std::vector<RootCause> c = GroupRootCauses(d, PeerRun(0.01));
  ASSERT_EQ(1u, c.size());
  EXPECT_EQ("aten::mm", c[0].family);
  c = GroupRootCauses(d, PeerRun(0));
  EXPECT_EQ(2u, c.size());
  EXPECT_TRUE(IsMaterialBlame(d[0].faulty[1], d[0].evidence, 0));
  EXPECT_FALSE(IsMaterialBlame(d[0].faulty[1], d[0].evidence, 0.01));
}

TEST(RootCauses, AStragglerIsAFindingOnlyWhenNothingOnItsRankExplainsIt) {
  ReportRunData run = PeerRun(0.01);
  run.stragglers.push_back({3, 7, 2'000'000, kStepNs, 4, 4, 3, "warm-up", false});
  run.stragglers.push_back({3, 9, 1'000'000, kStepNs, 4, 4, 3, "no operator", false});
  run.stragglers.push_back({1, 8, 5'000'000, kStepNs, 4, 4, 3, "host (aten::copy_ +5 ms)", true});
  const std::vector<RootCause> c = GroupRootCauses({}, run);
  ASSERT_EQ(1u, c.size());
  EXPECT_EQ(FaultClass::kStragglerRank, c[0].fault_class);
  EXPECT_EQ((std::vector<int64_t>{3}), c[0].ranks);
  EXPECT_EQ(2, c[0].units);
  EXPECT_DOUBLE_EQ(3'000'000, c[0].cost_ns);
  EXPECT_EQ(7, c[0].first_step);
  EXPECT_EQ(9, c[0].last_step);
  EXPECT_EQ("warm-up", c[0].cause);
}

TEST(RootCauses, TheRunsCostCountsEachRankStepOnce) {
  std::vector<StepDiagnosis> d = {
      Unit(0, 1, View::kVertical, {{"aten::mm", Metric::kDevice, 900'000, 800'000}}),
      Unit(0, 1, View::kHorizontal, {{"ncclAllReduce", Metric::kDevice, 500'000, 300'000, "comm"}}),
      Unit(0, 2, View::kVertical, {}),
      Unit(0, 2, View::kHorizontal, {}),
  };
  double total = 0;
  EXPECT_DOUBLE_EQ(800'000, RunCostNs(d, &total));
  EXPECT_DOUBLE_EQ(2.0 * kStepNs, total);
}

TEST(RootCausesReport, TheHeadlineLeadsAndTheTermsClose) {
  std::vector<StepDiagnosis> d;
  for (int64_t step = 0; step < 20; ++step) {
    for (int64_t rank = 0; rank < 2; ++rank) {
      const bool bad = rank == 1 && step == 12;
      d.push_back(Unit(rank, step, View::kVertical,
                       bad ? std::vector<Blame>{{"aten::mm", Metric::kDevice, 2'000'000, 1'800'000},
                                                {"aten::silu", Metric::kDevice, 620, 620}}
                           : std::vector<Blame>{}));
    }
  }
  ReportContext ctx;
  const ReportRunData run = PeerRun(0.01);
  ctx.run = &run;
  const std::string html = RenderHtmlReport(d, ctx);
  const size_t headline = html.find("<section id='headline'>");
  ASSERT_NE(std::string::npos, headline);
  EXPECT_LT(headline, html.find("id='run'"));
  EXPECT_LT(html.find("id='cards'"), html.find("id='terms'"));
  EXPECT_NE(std::string::npos, html.find("1 abnormal unit of 40: they cost the run 1.80 ms of step time"));
  EXPECT_NE(std::string::npos, html.find("The largest cause: <b>slow GPU work</b>"));
  EXPECT_NE(std::string::npos, html.find("id='root-causes'"));
  // The step-time plot: two rank panels, the abnormal point linked to its card.
  const size_t plot = html.find("<svg id='steptime-plot'");
  ASSERT_NE(std::string::npos, plot);
  const std::string svg = html.substr(plot, html.find("</svg>", plot) - plot);
  EXPECT_NE(std::string::npos, svg.find(">rank 0<"));
  EXPECT_NE(std::string::npos, svg.find(">rank 1<"));
  EXPECT_NE(std::string::npos, svg.find("<a href='#r1-s12-v'><circle"));
  // The card lists aten::mm, not aten::silu's 0.6 us, and says one more was left out.
  const size_t card = html.find("<section class='card' id='r1-s12-v'>");
  ASSERT_NE(std::string::npos, card);
  const std::string body = html.substr(card, html.find("</section>", card) - card);
  EXPECT_NE(std::string::npos, body.find("aten::mm"));
  EXPECT_EQ(std::string::npos, body.find("aten::silu"));
  EXPECT_NE(std::string::npos, body.find("1 more operator was slower than expected"));
}

TEST(RootCausesReport, AHealthyRunSaysSo) {
  std::vector<StepDiagnosis> d = {Unit(0, 0, View::kVertical, {}), Unit(0, 1, View::kVertical, {})};
  ReportContext ctx;
  const ReportRunData run = PeerRun(0.01);
  ctx.run = &run;
  const std::string html = RenderHtmlReport(d, ctx);
  EXPECT_NE(std::string::npos, html.find("<p class='headline ok'>No abnormal step: 2 units judged at a 1.0% false-alarm rate."));
  EXPECT_EQ(std::string::npos, html.find("id='root-causes'"));
  EXPECT_EQ(std::string::npos, html.find("judged against this run"));
}

// A run judged against itself says so under the headline; one where that leaves a lone slow
// step no way to be flagged (a real eager engine's long healthy run) is no all-clear.
TEST(RootCausesReport, ARunJudgedAgainstItselfSaysWhatItCanFlag) {
  std::vector<StepDiagnosis> d = {Unit(0, 0, View::kVertical, {}), Unit(0, 1, View::kVertical, {})};
  ReportContext ctx;
  ReportRunData run = PeerRun(0.01);
  run.null_centre[0] = 12.9;
  run.null_scale[0] = 5.3;
  ctx.run = &run;
  std::string html = RenderHtmlReport(d, ctx);
  EXPECT_NE(std::string::npos, html.find("<p class='headline ok'>No abnormal step"));
  EXPECT_NE(std::string::npos,
            html.find("<p class='muted'>The vertical view is judged against this run&#39;s own steps (their z-scores "
                      "centre at 12.9, spread 5.3: the whole run is more surprising than the models expect), so a "
                      "step is abnormal only when it stands out from the others.</p>"));
  EXPECT_EQ(std::string::npos, html.find("cannot be flagged"));

  run.null_centre[0] = 16.7;
  run.null_scale[0] = 13.0;
  run.null_blind[0] = true;
  run.best_possible_p[0] = 0.0583;
  html = RenderHtmlReport(d, ctx);
  EXPECT_EQ(std::string::npos, html.find("<p class='headline ok'>"));
  EXPECT_NE(std::string::npos, html.find("<p class='headline'>No abnormal step: 2 units judged"));
  EXPECT_NE(std::string::npos, html.find("even the strongest evidence reaches only q = 0.058 there, so a lone slow "
                                         "step cannot be flagged: no abnormal step in this view means that none "
                                         "stood out from the run&#39;s own spread, not that every step was healthy."));
  EXPECT_EQ(std::string::npos, html.find("The horizontal view is judged"));
}

TEST(RootCausesReport, NothingJudgedIsNoAllClear) {
  std::vector<StepDiagnosis> d = {Unit(0, 0, View::kVertical, {}), Unit(0, 0, View::kHorizontal, {})};
  for (StepDiagnosis& s : d) {
    s.label = Verdict::kInsufficient;
    s.evidence.peer->verdict = Verdict::kInsufficient;
    s.evidence.peer->summary = "rank 0, step 0: insufficient evidence: no peers that did the same work";
  }
  ReportContext ctx;
  const ReportRunData run = PeerRun(0.01);
  ctx.run = &run;
  const std::string html = RenderHtmlReport(d, ctx);
  EXPECT_EQ(std::string::npos, html.find("headline ok"));
  EXPECT_NE(std::string::npos, html.find("<p class='headline'>No unit could be judged: all 2 had insufficient evidence "
                                         "(see <a href='#run'>the run</a>), e.g. rank 0, step 0: insufficient "
                                         "evidence: no peers that did the same work.</p>"));
}

TEST(RunCalibrationNote, TheStdoutSummaryNotesEachViewJudgedAgainstItself) {
  PeerStageResult r;
  r.decision.alpha = 0.01;
  r.decision.min_impact_share = 0.01;
  EXPECT_EQ(std::string::npos, FormatPeerSummary(r).find("note:"));
  r.decision.views[0].null_centre = 16.7;
  r.decision.views[0].null_scale = 13.0;
  r.decision.views[0].single_step_blind = true;
  r.decision.views[0].best_possible_p = 0.0583;
  const std::string out = FormatPeerSummary(r);
  EXPECT_NE(std::string::npos, out.find("\n  note: the vertical view is judged against this run's own steps (their "
                                        "z-scores centre at 16.7, spread 13.0"));
  EXPECT_NE(std::string::npos, out.find("q = 0.058 there, so a lone slow step cannot be flagged"));
  EXPECT_EQ(std::string::npos, out.find("the horizontal view"));
}

TEST(RunCalibrationNote, TheStdoutSummaryGivesEachRunFindingEscaped) {
  PeerStageResult r;
  r.decision.alpha = 0.01;
  EXPECT_EQ(std::string::npos, FormatPeerSummary(r).find("run finding:"));
  RunFinding f;
  f.sentence = "rank 0, vertical view: host time beyond its peers in 5 of 6 judged steps (in \x1b[2Jevil)";
  r.findings.push_back(f);
  const std::string out = FormatPeerSummary(r);
  EXPECT_NE(std::string::npos, out.find("\n  run finding: rank 0, vertical view: host time beyond its peers in 5 of 6"));
  EXPECT_EQ(std::string::npos, out.find('\x1b')) << "a family name cannot drive the terminal";
}

TEST(RunCalibrationNote, EmptyUnderTheAssumedNull) {
  EXPECT_EQ("", RunCalibrationNote("vertical", 0, 1, false, 0));
  EXPECT_NE("", RunCalibrationNote("horizontal", 0, 1.5, false, 0));
  EXPECT_EQ(0u, RunCalibrationNote("horizontal", 3.25, 1, false, 0).find("the horizontal view is judged against this "
                                                                         "run's own steps (their z-scores centre at 3.2"));
}

TEST(RunCalibrationNote, SaysALongStepIsStillJudged) {
  const std::string note = RunCalibrationNote("vertical", 16.7, 13.0, true, 0.058, 2.0);
  EXPECT_NE(std::string::npos, note.find("or took at least 2x as long as its similar steps (judged on the assumed null)"));
  EXPECT_NE(std::string::npos, note.find("a lone slow step cannot be flagged unless it took at least 2x as long as its "
                                         "similar steps: no abnormal step"));
  EXPECT_EQ(std::string::npos, RunCalibrationNote("vertical", 16.7, 13.0, true, 0.058, 0).find("similar steps"));
}

}  // namespace
}  // namespace truffld::diagnose
