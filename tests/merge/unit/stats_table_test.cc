// The stats table (truffld/merge/stats.h) against what is generated from it: the summary.json
// counters object (names and order) and the schema's counters section (names, types,
// descriptions); and the problem table's keys.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "merge_test_util.h"
#include "truffld/merge/pipeline.h"
#include "truffld/merge/stats.h"
#include "truffld/merge/writers.h"

namespace truffld::merge {
namespace {

struct Row {
  std::string name, type, description;
  Severity severity;
};

std::vector<Row> CounterRows() {
  std::vector<Row> rows;
#define TRUFFLD_TEST_ROW(name, type, severity, description) rows.push_back({#name, #type, description, Severity::severity});
  TRUFFLD_MERGE_COUNTERS(TRUFFLD_TEST_ROW)
#undef TRUFFLD_TEST_ROW
  return rows;
}

nlohmann::json Schema() {
  std::ifstream in(std::string(TRUFFLD_SOURCE_DIR) + "/schemas/summary.schema.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

TEST(StatsTable, TheSchemaDescribesExactlyTheTableCounters) {
  const nlohmann::json counters = Schema()["$defs"]["counters"];
  const nlohmann::json& props = counters["properties"];
  std::set<std::string> names;
  for (const Row& r : CounterRows()) {
    names.insert(r.name);
    ASSERT_TRUE(props.contains(r.name)) << r.name << " is in the stats table but not in the schema";
    EXPECT_EQ(props[r.name]["type"], r.type == "Count" ? "integer" : "object") << r.name;
    EXPECT_EQ(props[r.name]["description"], r.description) << r.name;
  }
  for (const auto& [name, p] : props.items()) EXPECT_TRUE(names.count(name)) << name << " is in the schema only";
  for (const auto& name : counters["required"]) EXPECT_TRUE(names.count(name.get<std::string>())) << name;
}

TEST(StatsTable, SummaryCountersFollowTheTableInOrder) {
  std::vector<TraceFile> files;
  files.push_back(testing::FileFromLines(
      "{\"type\":\"NVTX_PUSH\",\"name\":\"run_batch\",\"timestamp\":1,\"process_id\":1,\"thread_id\":1}\n"
      "{\"type\":\"NVTX_POP\",\"timestamp\":9,\"process_id\":1,\"thread_id\":1}\n"));
  auto r = Merge(std::move(files), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  JsonOut out;
  WriteSummaryJson(*r, RunInfo{}, &out);
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(out.text());
  std::vector<std::string> keys;
  for (const auto& [k, v] : j["total"].items()) keys.push_back(k);
  std::vector<std::string> want;
  for (const Row& row : CounterRows()) want.push_back(row.name);
  EXPECT_EQ(keys, want);
  EXPECT_EQ(j["total"]["steps"], 1);
}

TEST(StatsTable, ProblemKeysAreUniqueAndProblemsCountTowardsTheirCounters) {
  std::set<std::string> keys;
  for (int p = 0; p <= int(Problem::kNsysSkippedNvtxOther); ++p) {
    const ProblemInfo& info = InfoOf(Problem(p));
    EXPECT_TRUE(keys.insert(info.key).second) << info.key;
    EXPECT_NE(std::string(info.description), "") << info.key;
  }
  IngestStats s;
  s.Add(Problem::kInvalidUtf8);
  s.Add(Problem::kKinetoBadNumber, 2);
  s.Add(Problem::kNsysNegativeDuration, 3);
  s.Add(Problem::kKinetoSkippedMetadata, 40);  // skipped by design: no problem
  s.AddKept(EventKind::kKernel, 7);
  EXPECT_EQ(MalformedLines(s), 3u);
  EXPECT_EQ(NegativeDurations(s), 3u);
}

}  // namespace
}  // namespace truffld::merge
