// diagnose's stats table (report/stats_table.h) against schemas/stats.schema.json (every row a
// property with its type and description, nothing else), and the writers against the rows
// (every key a writer emits is a row of its object). TRUFFLD_UPDATE_STATS_SCHEMA=1 rewrites the
// schema from the table instead of checking it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "report/stats_table.h"

namespace truffld::diagnose {
namespace {

const std::set<std::string> kJsonTypes = {"integer", "number", "string", "boolean", "array", "object"};
const std::string kSchemaPath = std::string(TRUFFLD_TEST_SOURCE_DIR) + "/schemas/stats.schema.json";

nlohmann::ordered_json Property(const StatsRow& r) {
  nlohmann::ordered_json p;
  if (kJsonTypes.count(r.type)) {
    p["type"] = r.type;
  } else {
    p["$ref"] = std::string("#/$defs/stats_") + r.type;
  }
  p["description"] = r.description;
  return p;
}

// The schema the table describes: one $defs entry per object, "stats" at the top.
nlohmann::ordered_json SchemaFromTable() {
  std::map<std::string, nlohmann::ordered_json> objects;
  std::vector<std::string> order;
  for (const StatsRow& r : StatsSchemaRows()) {
    if (!objects.count(r.object)) {
      order.push_back(r.object);
      objects[r.object] = {{"type", "object"}, {"additionalProperties", false}, {"properties", nlohmann::ordered_json::object()}};
    }
    objects[r.object]["properties"][r.key] = Property(r);
  }
  nlohmann::ordered_json s;
  s["$schema"] = "https://json-schema.org/draft/2020-12/schema";
  s["$id"] = "https://truffld.dev/schemas/stats.schema.json";
  s["title"] = "truffld-diagnose stats.json";
  s["description"] = "What truffld-diagnose did and counted. Generated from diagnose/report/stats_table.h "
                     "(TRUFFLD_UPDATE_STATS_SCHEMA=1 diagnose_unit_test --gtest_filter=StatsTable.*).";
  for (const auto& [k, v] : objects["stats"].items()) s[k] = v;
  s["required"] = {"input", "stage1", "stage2", "seconds"};
  nlohmann::ordered_json defs = nlohmann::ordered_json::object();
  for (const std::string& o : order) {
    if (o != "stats") defs[o] = objects[o];
  }
  s["$defs"] = defs;
  return s;
}

TEST(StatsTable, TheSchemaIsTheTable) {
  const nlohmann::ordered_json want = SchemaFromTable();
  if (std::getenv("TRUFFLD_UPDATE_STATS_SCHEMA")) {
    std::ofstream(kSchemaPath) << want.dump(2) << "\n";
    GTEST_SKIP() << "rewrote " << kSchemaPath;
  }
  std::ifstream in(kSchemaPath);
  ASSERT_TRUE(in) << kSchemaPath;
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(nlohmann::ordered_json::parse(ss.str()), want)
      << "schemas/stats.schema.json differs from diagnose/report/stats_table.h; regenerate it with "
         "TRUFFLD_UPDATE_STATS_SCHEMA=1";
}

TEST(StatsTable, RowsAreUniqueTypedAndDescribed) {
  std::set<std::pair<std::string, std::string>> seen;
  std::set<std::string> objects;
  for (const StatsRow& r : StatsSchemaRows()) objects.insert(r.object);
  for (const StatsRow& r : StatsSchemaRows()) {
    EXPECT_TRUE(seen.emplace(r.object, r.key).second) << r.object << "." << r.key;
    EXPECT_NE(std::string(r.description), "") << r.key;
    EXPECT_TRUE(kJsonTypes.count(r.type) || objects.count(std::string("stats_") + r.type))
        << r.object << "." << r.key << ": type " << r.type;
  }
}

std::set<std::string> KeysOf(const std::string& object) {
  std::set<std::string> keys;
  for (const StatsRow& r : StatsSchemaRows())
    if (object == r.object) keys.insert(r.key);
  return keys;
}

std::set<std::string> KeysIn(const nlohmann::json& j) {
  std::set<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.insert(k);
  return keys;
}

TEST(StatsTable, WritersEmitExactlyTheirRows) {
  ReadStats rs;
  rs.problems = {"a:1: not JSON"};
  EXPECT_EQ(KeysIn(InputStatsJson("trees.jsonl", rs)), KeysOf("stats_input"));
  EXPECT_EQ(InputStatsJson("trees.jsonl", rs)["problems"][0], "a:1: not JSON");
  EXPECT_EQ(KeysIn(StageOneStatsJson("peer", StageOneResult{})), KeysOf("stats_stage1"));
  StageTwoStats s2;
  s2.breaker_tripped = true;
  const nlohmann::json j2 = StageTwoStatsJson(s2, "llm=off");
  EXPECT_EQ(KeysIn(j2), KeysOf("stats_stage2"));
  EXPECT_EQ(j2["circuit_breaker"]["tripped"], true);
  EXPECT_EQ(j2["config"], "llm=off");
  PeerStageResult r;
  r.decision.alpha = 0.02;
  r.decision.views[1].flagged = 3;
  const nlohmann::json jp = PeerStatsJson(InstanceTable{}, r);
  EXPECT_EQ(KeysIn(jp), KeysOf("stats_peer"));
  EXPECT_EQ(KeysIn(jp["vertical"]), KeysOf("stats_peer_view"));
  EXPECT_EQ(jp["false_alarm_rate"], 0.02);
  EXPECT_EQ(jp["horizontal"]["abnormal"], 3);
  EXPECT_EQ(jp["vertical"]["abnormal"], 0);
  // The trace: counters when written, the reason instead when not.
  std::set<std::string> trace = KeysOf("stats_trace");
  AnnotateStats ts;
  ts.flows = 7;
  const nlohmann::json written = TraceStatsJson("trace.json", TraceOverlay{}, ts, nullptr);
  EXPECT_EQ(written["flows"], 7);
  trace.erase("error");
  EXPECT_EQ(KeysIn(written), trace);
  const std::string why = "disk full";
  const nlohmann::json failed = TraceStatsJson("trace.json", TraceOverlay{}, ts, &why);
  EXPECT_EQ(failed["error"], "disk full");
  EXPECT_FALSE(failed.contains("flows"));
}

}  // namespace
}  // namespace truffld::diagnose
