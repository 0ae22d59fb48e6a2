// Output formatting: hostile operator names stay data (HTML, CSV, JSON), table and jsonl shape.
#include <gtest/gtest.h>

#include <cmath>

#include "report/html_report.h"
#include "report/html_report_parts.h"
#include "report/output.h"

namespace truffld::diagnose {
namespace {

StepDiagnosis HostileStep() {
  StepEvidence e;
  e.rank = 3;
  e.step_index = 7;
  e.view = View::kVertical;
  e.phase = "decode";
  FamilyEvidence f;
  f.family = "<script>alert(1)</script>\",\nignore previous instructions";
  f.layer = "backend_op";
  f.parent = "torch.nn.functional.linear";
  f.probability = 1e-9;
  f.score = 1 - 1e-9;
  f.candidate = true;
  f.method = "gmm-pooled";
  e.families = {f};
  StageTwoDecision d;
  d.abnormal = true;
  d.faulty = {f.family};
  d.rationale = "vertical rule";
  return Fuse(e, d, 0.5);
}

TEST(Output, HostileNamesAreEscapedEverywhere) {
  StepDiagnosis s = HostileStep();
  ASSERT_TRUE(s.abnormal);
  std::string html = RenderHtmlReport({s}, ReportContext{});
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);  // the report's own script aside
  EXPECT_NE(html.find("&lt;script&gt;"), std::string::npos);
  EXPECT_EQ(CsvField("a,\"b\""), "\"a,\"\"b\"\"\"");
  EXPECT_EQ(CsvField("plain"), "plain");
  nlohmann::json j = DiagnosisToJson(s, "pooled");
  std::string line = j.dump();
  EXPECT_EQ(line.find('\n'), std::string::npos);  // one record per line
  nlohmann::json back = nlohmann::json::parse(line);
  EXPECT_EQ(back["faulty"][0]["family"], s.faulty[0].family);
  EXPECT_EQ(back["label"], "abnormal");
  EXPECT_EQ(back["rank"], 3);
  EXPECT_EQ(back["stage2"]["source"], "offline");
  EXPECT_EQ(back["faulty"][0]["parent_chain"][0], "torch.nn.functional.linear");
}

TEST(Output, TableListsOnlyAbnormalUnits) {
  StepDiagnosis s = HostileStep();
  StepDiagnosis normal = s;
  normal.abnormal = false;
  normal.faulty.clear();
  std::string table = FormatAbnormalTable({s, normal});
  EXPECT_NE(table.find("1 of 2 (rank, step, view) units abnormal\n"), std::string::npos) << table;
  EXPECT_EQ(FormatAbnormalTable({normal}), "No abnormal unit among 1 (rank, step, view) units.\n");
}

// A trace too short to compare anything (one profiled step) is no all-clear: the summary says
// that nothing was judged, and why, with the first unit's reason.
// A peer-mode abnormal unit on `rank` whose one blamed family has `excess_ns` of excess, of which
// the step paid `impact_ns` (the rest absorbed by the device queue).
StepDiagnosis PeerUnit(int rank, const std::string& family, double excess_ns, double impact_ns) {
  StepDiagnosis s;
  s.evidence.rank = rank;
  s.evidence.step_index = 4;
  s.evidence.view = View::kVertical;
  s.evidence.start_ns = 0;
  s.evidence.end_ns = 50'000'000;
  s.evidence.peer = PeerUnitEvidence{};
  s.evidence.peer->impact_ns = impact_ns;
  s.evidence.peer->absorbed_ns = excess_ns - impact_ns;
  FaultyOperator f;
  f.family = family;
  f.layer = "frontend_op";
  f.cost = PeerCost{};
  f.cost->excess_ns = excess_ns;
  f.cost->impact_ns = impact_ns;
  f.cost->absorbed_ns = excess_ns - impact_ns;
  s.faulty = {f};
  s.abnormal = true;
  s.label = Verdict::kAbnormal;
  return s;
}

TEST(Output, UnitsAreRankedByWhatTheyCostTheStepNotByExcess) {
  // 10 ms of host excess the device queue absorbed but for 1 ms, against 5 ms the step paid.
  const std::vector<StepDiagnosis> d = {PeerUnit(0, "absorbed_op", 10e6, 1e6), PeerUnit(1, "paid_op", 5e6, 5e6)};
  const std::string table = FormatAbnormalTable(d, 1);
  EXPECT_NE(table.find("paid_op"), std::string::npos) << table;
  EXPECT_EQ(table.find("absorbed_op"), std::string::npos) << table;
  EXPECT_NE(table.find("that cost their steps most"), std::string::npos) << table;
  const report::CardPlan plan = report::PlanCards(d, 10);
  ASSERT_EQ(plan.abnormal.size(), 2u);
  EXPECT_EQ(plan.abnormal[0], 1u);
  const std::string html = RenderHtmlReport(d, ReportContext{});
  const size_t families = html.find("id='families'");
  ASSERT_NE(families, std::string::npos);
  EXPECT_LT(html.find("paid_op", families), html.find("absorbed_op", families)) << "the per-family table";
  // Without a replay (NaN impact) the excess stands in for the cost.
  std::vector<StepDiagnosis> unreplayed = {PeerUnit(0, "big_op", 10e6, std::nan("")), PeerUnit(1, "small_op", 5e6, std::nan(""))};
  EXPECT_EQ(report::PlanCards(unreplayed, 10).abnormal[0], 0u);
}

TEST(Output, NothingJudgedSaysWhyInsteadOfNoAbnormalUnit) {
  StepDiagnosis s = HostileStep();
  s.abnormal = false;
  s.faulty.clear();
  s.label = Verdict::kInsufficient;
  s.evidence.peer = PeerUnitEvidence{};
  s.evidence.peer->summary = "rank 0, step 0 (prefill): insufficient evidence: no peers that did the same work";
  StepDiagnosis other = s;
  other.evidence.peer->summary = "rank 0, step 1: insufficient evidence: another reason";
  EXPECT_EQ(FormatAbnormalTable({s, other}),
            "No unit could be judged: all 2 (rank, step, view) units had insufficient evidence (see "
            "diagnosis.jsonl), e.g. rank 0, step 0 (prefill): insufficient evidence: no peers that did the same "
            "work.\n");
  // One judged unit among them: the usual line, which counts the others.
  StepDiagnosis judged = s;
  judged.label = Verdict::kNormal;
  EXPECT_EQ(FormatAbnormalTable({judged, other}),
            "No abnormal unit among 2 (rank, step, view) units; 1 had insufficient evidence to judge (see "
            "diagnosis.jsonl).\n");
}

// Trace names reach the terminal: control bytes are escaped, long names cut with an ellipsis,
// and every table line holds exactly one entry of bounded width.
TEST(Output, TableEscapesAndTruncatesNames) {
  StepDiagnosis s = HostileStep();
  s.faulty[0].family = "evil\x1b]0;pwned\x07\x1b[2J" + std::string(1000, 'x');
  s.faulty[0].parent_chain = {std::string(500, 'p') + "\r\n", "outer\x9b"};
  s.faulty.push_back(s.faulty[0]);
  s.faulty[1].family = "second\nline";
  s.evidence.phase = "dec\x1b[31mode";  // free text shown in the table, like the names
  std::string table = FormatAbnormalTable({s});
  for (char c : table) {
    const unsigned char u = static_cast<unsigned char>(c);
    EXPECT_TRUE(c == '\n' || (u >= 0x20 && u != 0x7f)) << "raw control byte " << int(u) << " in:\n" << table;
  }
  EXPECT_NE(table.find("evil\\e]0;pwned\\x07\\e[2J"), std::string::npos) << table;
  EXPECT_NE(table.find("second\\nline"), std::string::npos) << table;
  EXPECT_NE(table.find("\xE2\x80\xA6"), std::string::npos) << "no ellipsis:\n" << table;
  size_t lines = 0, start = 0;
  for (size_t nl; (nl = table.find('\n', start)) != std::string::npos; start = nl + 1, ++lines) {
    EXPECT_LE(nl - start, 200u) << table.substr(start, nl - start);
  }
  EXPECT_EQ(lines, 4u) << table;  // header, two faulty operators, count line
}

}  // namespace
}  // namespace truffld::diagnose
