// Output formatting: hostile operator names stay data (HTML, CSV, JSON), table and jsonl shape.
#include <gtest/gtest.h>

#include "truffld/diagnose/html_report.h"
#include "truffld/diagnose/output.h"

namespace truffld::diagnose {
namespace {

StepDiagnosis HostileStep() {
  StepEvidence e;
  e.rank = 3;
  e.step_index = 7;
  e.view = "vertical";
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
  EXPECT_EQ(html.find("<script>"), std::string::npos);
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

TEST(Output, TableListsOnlyAbnormalSteps) {
  StepDiagnosis s = HostileStep();
  StepDiagnosis normal = s;
  normal.abnormal = false;
  normal.faulty.clear();
  std::string table = FormatAbnormalTable({s, normal});
  EXPECT_NE(table.find("1 abnormal of 2 steps"), std::string::npos);
  EXPECT_EQ(FormatAbnormalTable({normal}), "No abnormal steps among 1 steps.\n");
}

}  // namespace
}  // namespace truffld::diagnose
