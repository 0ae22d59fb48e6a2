// report.html structure on hand-built diagnoses: anchors, cards ranked by impact across ranks
// with a share for every rank, observed/expected/excess per operator, call chains to kernels,
// histograms bounded in size, insufficient-evidence reasons, stragglers, legacy cards, and
// hostile names that stay text. The page in a real browser: report_browser_test.py.
#include <gtest/gtest.h>

#include <regex>

#include "../peer_table.h"
#include "report/html_report.h"
#include "stage2/llm_stage2.h"
#include "run/pipeline.h"

namespace truffld::diagnose {
namespace {

struct Op {
  std::string family;
  double excess_ns;
};

// A calibrated (peer-mode) unit; abnormal when `ops` is non-empty.
StepDiagnosis PeerUnit(int64_t rank, int64_t step, View view, const std::vector<Op>& ops) {
  StepEvidence e;
  e.rank = rank;
  e.step_index = step;
  e.view = view;
  e.phase = "decode";
  e.step_name = "step " + std::to_string(step);
  e.step_duration_ns = 10'000'000;
  e.peer = PeerUnitEvidence{};
  e.peer->alpha = 0.01;
  e.peer->threshold = 1e-4;
  e.peer->verdict = ops.empty() ? Verdict::kNormal : Verdict::kAbnormal;
  e.peer->summary =
      "rank " + std::to_string(rank) + ", step " + std::to_string(step) + ": " + VerdictName(e.peer->verdict);
  StageTwoDecision dec;
  for (const Op& o : ops) {
    FamilyEvidence f;
    f.family = o.family;
    f.parent = "torch.nn.Linear";
    f.candidate = true;
    PeerCost c;
    c.metric = Metric::kDevice;
    c.basis = PeerSource::kTp;
    c.expected_ns = 100'000;
    c.observed_ns = 100'000 + o.excess_ns;
    c.excess_ns = o.excess_ns;
    c.share = o.excess_ns / 10e6;
    c.ratios = {{PeerSource::kTp, c.observed_ns / c.expected_ns}, {PeerSource::kLayer, 1.5}};
    c.sentence = o.family + " sentence";
    f.cost = c;
    f.kernels = {"sm90_xmma_gemm_bf16"};
    f.total_time_ns = c.observed_ns;
    e.families.push_back(f);
    dec.faulty.push_back(o.family);
  }
  FamilyEvidence parent;
  parent.family = "torch.nn.Linear";
  e.families.push_back(parent);
  dec.abnormal = !ops.empty();
  return Fuse(e, dec, e.peer->threshold);
}

size_t Count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

// Card ids in page order.
std::vector<std::string> CardIds(const std::string& html) {
  std::vector<std::string> ids;
  static const std::regex card("<section class='card[^']*' id='([^']+)'");
  for (std::sregex_iterator it(html.begin(), html.end(), card), end; it != end; ++it) ids.push_back((*it)[1]);
  return ids;
}

TEST(HtmlReport, CardsAreRankedByImpactAcrossRanksWithAnchors) {
  std::vector<StepDiagnosis> d;
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t s = 0; s < 20; ++s) d.push_back(PeerUnit(r, s, View::kVertical, {}));
  }
  d[5] = PeerUnit(0, 5, View::kVertical, {{"aten::mm", 2e6}});
  d[20 + 7] = PeerUnit(1, 7, View::kVertical, {{"aten::mm", 1e6}, {"aten::silu", 4e6}});  // impact 5 ms
  d[40 + 9] = PeerUnit(2, 9, View::kVertical, {{"aten::mul", 3e6}});
  d.push_back(PeerUnit(2, 9, View::kHorizontal, {{"ncclAllReduce", 0.5e6}}));
  const std::string html = RenderHtmlReport(d, ReportContext{});
  EXPECT_EQ(CardIds(html), (std::vector<std::string>{"r1-s7-v", "r2-s9-v", "r0-s5-v", "r2-s9-h"}));
  // Each faulty operator: observed, expected, excess (us), share and ratios to each peer group.
  EXPECT_NE(html.find("<td class='n'>4,100</td><td class='n'>100</td><td class='n'>+4,000</td><td class='n'>40%</td>"
                      "<td class='n'>41.0&times;</td><td class='n'>&ndash;</td><td class='n'>1.50&times;</td>"),
            std::string::npos);
  // Within a card, highest excess first; the call chain ends in its kernels.
  const size_t card = html.find("id='r1-s7-v'");
  EXPECT_LT(html.find("aten::silu", card), html.find("aten::mm", card));
  EXPECT_NE(html.find("torch.nn.Linear</span> &rsaquo; <span class='name self'>aten::silu</span> &rsaquo; kernels: "
                      "<span class='name k'>sm90_xmma_gemm_bf16</span>", card),
            std::string::npos);
  // Overview cells and the index link to the anchors; the run's calibration is stated.
  EXPECT_NE(html.find("<a href='#r1-s7-v' data-s="), std::string::npos);
  EXPECT_NE(html.find("id='idx-r2'"), std::string::npos);
  EXPECT_NE(html.find("1.0% of healthy units at most"), std::string::npos);
  EXPECT_NE(html.find("p &le; 0.0001"), std::string::npos);
  for (const char* section : {"id='overview'", "id='heatmap'", "id='ranks'", "id='families'", "id='terms'"}) {
    EXPECT_NE(html.find(section), std::string::npos) << section;
  }
}

TEST(HtmlReport, EveryRankKeepsCardsUnderTheCapAndEveryUnitAnAnchor) {
  std::vector<StepDiagnosis> d;
  for (int64_t s = 0; s < 40; ++s) {
    d.push_back(PeerUnit(0, s, View::kVertical, {{"aten::mm", 9e6 + 1e3 * static_cast<double>(s)}}));
  }
  for (int64_t r = 1; r < 4; ++r) {
    for (int64_t s = 0; s < 3; ++s) {
      d.push_back(PeerUnit(r, s, View::kVertical, {{"aten::mm", 1e3 * static_cast<double>(s + 1)}}));
    }
  }
  ReportContext ctx;
  ctx.max_cards = 8;  // 4 ranks: each keeps its highest one
  const std::string html = RenderHtmlReport(d, ctx);
  const auto ids = CardIds(html);
  ASSERT_EQ(ids.size(), 8u);
  for (int r = 1; r < 4; ++r) {
    EXPECT_NE(std::find(ids.begin(), ids.end(), "r" + std::to_string(r) + "-s2-v"), ids.end()) << r;
  }
  EXPECT_EQ(ids[0], "r0-s39-v");
  // Units beyond the cap keep their anchor in the index, with their top operator.
  EXPECT_NE(html.find("<span class='muted' id='r0-s0-v' title='aten::mm +9,000 us'>0</span>"), std::string::npos);
  EXPECT_EQ(Count(html, "id='r0-s0-v'"), 1u);
  EXPECT_NE(html.find("each rank keeping at least its 1 highest"), std::string::npos);
}

TEST(HtmlReport, HostileNamesStayText) {
  const std::string evil = "<script>alert(1)</script>'\"><img src=x onerror=alert(2)>\x01";
  std::vector<StepDiagnosis> d;
  for (int64_t s = 0; s < 3; ++s) {
    StepDiagnosis u = PeerUnit(0, s, View::kVertical, {{evil + "mm", 2e6}});
    u.evidence.step_name = evil;
    u.evidence.peer->summary = evil;
    u.faulty[0].cost->sentence = evil;
    u.faulty[0].parent_chain = {evil + "parent"};
    u.decision.rationale = evil;
    u.evidence.families[0].kernels = {evil + "kernel"};
    d.push_back(u);
  }
  ReportContext ctx;
  ctx.title = ctx.input = ctx.stage2 = ctx.metrics_text = evil;
  ctx.notes = {evil};
  ctx.max_cards = 1;  // the others' names go into index titles (attributes)
  const std::string html = RenderHtmlReport(d, ctx);
  EXPECT_EQ(Count(html, "<script"), 1u);  // the report's own
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("onerror=alert(2)>"), std::string::npos);
  EXPECT_EQ(html.find('\x01'), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;&#39;&quot;&gt;"
                      "&lt;img src=x onerror=alert(2)&gt;&#xFFFD;mm"),
            std::string::npos);
  EXPECT_NE(html.find("title='&lt;script&gt;"), std::string::npos);
  // The only script admitted is the report's own, by hash; nothing may be fetched.
  EXPECT_NE(html.find("default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-"),
            std::string::npos);
}

TEST(HtmlReport, InsufficientEvidenceIsCountedWithItsReason) {
  std::vector<StepDiagnosis> d = {PeerUnit(0, 0, View::kVertical, {{"aten::mm", 1e6}})};
  for (int64_t s = 1; s < 4; ++s) {
    StepDiagnosis u = PeerUnit(0, s, View::kHorizontal, {});
    u.label = Verdict::kInsufficient;
    u.evidence.peer->verdict = Verdict::kInsufficient;
    u.evidence.peer->summary =
        "rank 0, step " + std::to_string(s) + ": insufficient evidence: no peers that did the same work";
    d.push_back(u);
  }
  const std::string html = RenderHtmlReport(d, ReportContext{});
  EXPECT_NE(html.find("<tr><td>no peers that did the same work</td><td class='n'>0</td><td class='n'>3</td>"),
            std::string::npos);
  EXPECT_NE(html.find("3 units with insufficient evidence (0 vertical, 3 horizontal)"), std::string::npos);
  EXPECT_NE(html.find("fill='url(#hatch)'"), std::string::npos);
}

TEST(HtmlReport, LegacyModesGetScoreCards) {
  StepEvidence e;
  e.rank = 1;
  e.step_index = 4;
  e.view = View::kVertical;
  FamilyEvidence f;
  f.family = "aten::mm";
  f.candidate = true;
  f.score = 0.97;
  f.probability = 0.03;
  f.instances = 12;
  f.method = "gmm-pooled";
  f.total_time_ns = 5e5;
  e.families = {f};
  StageTwoDecision dec;
  dec.abnormal = true;
  dec.faulty = {"aten::mm"};
  dec.rationale = "vertical rule";
  const std::string html = RenderHtmlReport({Fuse(e, dec, 0.5)}, ReportContext{});
  EXPECT_NE(html.find("<section class='card legacy' id='r1-s4-v'>"), std::string::npos);
  EXPECT_NE(html.find("<td class='n'>0.970</td><td class='n'>0.03</td><td class='n'>12</td>"), std::string::npos);
  EXPECT_EQ(html.find("expected us"), std::string::npos);
  EXPECT_NE(html.find("per-unit total time of this family"), std::string::npos);
  EXPECT_NE(html.find("without a stated false-alarm rate"), std::string::npos);
}

TEST(HtmlReport, OverviewBinsStepsAndSizeDoesNotGrowWithNormalUnits) {
  auto run = [](int64_t steps) {
    std::vector<StepDiagnosis> d;
    for (int64_t r = 0; r < 2; ++r) {
      for (int64_t s = 0; s < steps; ++s) {
        const bool abnormal = s == 3 || s == 100 || s == 200;
        d.push_back(PeerUnit(r, s, View::kVertical, abnormal ? std::vector<Op>{{"aten::mm", 1e6}} : std::vector<Op>{}));
      }
    }
    return RenderHtmlReport(d, ReportContext{});
  };
  const std::string small = run(300), large = run(3000);
  EXPECT_NE(large.find("columns: bins of 20 steps"), std::string::npos);
  EXPECT_EQ(Count(large, "data-s='"), 6u);  // one cell per abnormal bin
  // Ten times the units, the same abnormal ones: only the one-letter-per-step strips grow.
  EXPECT_LT(large.size(), small.size() + 2 * 2700 + 2000);
}

// Step indices come from user files: steps 0 and 2^63-1 in one run (a span that overflows int64)
// once sized the label strips with a negative count (std::length_error, SIGABRT in the CLI).
TEST(HtmlReport, FarApartStepIndicesDoNotOverflowTheOverview) {
  const std::vector<StepDiagnosis> d = {PeerUnit(0, 0, View::kVertical, {{"aten::mm", 1e6}}),
                                        PeerUnit(0, INT64_MAX, View::kVertical, {})};
  std::string html;
  ASSERT_NO_THROW(html = RenderHtmlReport(d, ReportContext{}));
  EXPECT_NE(html.find("too wide a range"), std::string::npos);
  EXPECT_NE(html.find("9223372036854775807"), std::string::npos);
}

// The peer stage's figures on a simulated run: histograms count every instance row of the blamed
// families and keep each abnormal unit's own values; stragglers come with who waited.
TEST(HtmlReport, RunDataFromThePeerStage) {
  testing::RunSpec spec;
  spec.tp = 4;
  spec.faults = {testing::PlantedFault{1, 30, "aten::mm", 3.0}, testing::PlantedFault{2, 20, "", 3.0, true}};
  const InstanceTable t = testing::SimulatedRun(spec);
  StageTwoConfig cfg;
  cfg.mode = LlmMode::kOff;
  StageTwo two(cfg);
  StageOneOptions o;
  o.mode = ScoringMode::kPeer;
  auto r = RunPipeline(t, nullptr, o, testing::StatisticsOnly(), two);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ReportRunData run = BuildReportRunData(t, *r->peer, r->diagnoses);
  EXPECT_TRUE(run.from_peer);
  ASSERT_FALSE(run.stragglers.empty());
  EXPECT_EQ(run.stragglers[0].rank, 2);
  EXPECT_EQ(run.stragglers[0].step_index, 20);
  EXPECT_EQ(run.stragglers[0].waiting_ranks, 3);
  const CostHistogram* mm = nullptr;
  for (const auto& h : run.histograms) {
    if (h.family == "aten::mm" && h.view == "vertical" && h.metric == "device") mm = &h;
  }
  ASSERT_NE(mm, nullptr);
  // 60 steps x 4 ranks x 8 layers instances of aten::mm, each with a device time.
  EXPECT_EQ(mm->total, 60u * 4u * 8u);
  bool planted = false;
  for (const UnitCosts& c : run.unit_costs) {
    const StepEvidence& e = r->diagnoses[c.diagnosis].evidence;
    if (e.rank == 1 && e.step_index == 30 && c.family == "aten::mm" && c.metric == "device") {
      planted = true;
      EXPECT_EQ(c.values_ns.size(), 8u);  // its own 8 layers' instances
    }
  }
  EXPECT_TRUE(planted);
  ReportContext ctx;
  ctx.run = &run;
  const std::string html = RenderHtmlReport(r->diagnoses, ctx);
  EXPECT_NE(html.find("id='stragglers'"), std::string::npos);
  EXPECT_NE(html.find("<symbol id='h"), std::string::npos);
  EXPECT_NE(html.find("<use href='#h"), std::string::npos);
  EXPECT_NE(html.find("id='r1-s30-v'"), std::string::npos);
}

}  // namespace
}  // namespace truffld::diagnose
