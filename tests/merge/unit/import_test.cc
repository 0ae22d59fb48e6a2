// Format sniffing and the raw JSONL file importer on real files (temporary directory).
#include "truffld/merge/import.h"
#include "truffld/merge/pipeline.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "../../common/test_files.h"

namespace truffld::merge {
namespace {

namespace fs = std::filesystem;

using ImportTest = truffld::testing::TempDirTest;

TEST(Sniff, ByContent) {
  EXPECT_EQ(SniffFormatFromPrefix(std::string("SQLite format 3\0xyz", 19)), InputFormat::kNsys);
  EXPECT_EQ(SniffFormatFromPrefix("{\"schemaVersion\":1,\"traceEvents\":[]}"), InputFormat::kKineto);
  EXPECT_EQ(SniffFormatFromPrefix("{\n  \"schemaVersion\": 1,\n"), InputFormat::kKineto);
  EXPECT_EQ(SniffFormatFromPrefix("{\"type\":\"META\",\"host\":\"h\"}\n{\"type\":\"KERNEL\"}"), InputFormat::kRawJsonl);
  EXPECT_EQ(SniffFormatFromPrefix(""), InputFormat::kRawJsonl);
  EXPECT_EQ(SniffFormatFromPrefix("garbage"), InputFormat::kRawJsonl);
}

TEST_F(ImportTest, TruncatedLastLineMissingMetaAndEmpty) {
  std::string p = Write("t.jsonl",
                        "{\"type\":\"NVTX_PUSH\",\"name\":\"a\",\"timestamp\":1,\"process_id\":4,\"thread_id\":1}\n"
                        "{\"type\":\"NVTX_POP\",\"timest");
  auto f = ImportFile(p, {});
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->events.size(), 1u);
  // The cut line is one problem: counted once (not also as malformed JSON or a read warning),
  // its file:line given once (in `where`, not again in the message).
  EXPECT_EQ(f->stats.Get(Problem::kTruncatedLastLine), 1u);
  EXPECT_EQ(f->stats.Get(Problem::kMalformedJson), 0u);
  EXPECT_EQ(f->stats.Get(Problem::kReadWarning), 0u);
  EXPECT_EQ(MalformedLines(f->stats), 1u);
  int cut = 0;
  for (const IngestIssue& i : f->stats.issues) {
    if (i.kind != Problem::kTruncatedLastLine) continue;
    ++cut;
    EXPECT_EQ(i.where, p + ":2");
    EXPECT_EQ(i.message.find("t.jsonl"), std::string::npos) << i.message;
  }
  EXPECT_EQ(cut, 1);
  EXPECT_EQ(f->stats.Get(Problem::kMissingMeta), 1u);
  EXPECT_EQ(f->meta.process_id, 4);
  ImportOptions strict;
  strict.strict = true;
  auto s = ImportFile(p, strict);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("t.jsonl:2"), std::string::npos) << s.status().ToString();

  auto e = ImportFile(Write("empty.jsonl", ""), {});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->stats.Get(Problem::kEmptyFile), 1u);
  EXPECT_TRUE(e->events.empty());
}

TEST_F(ImportTest, UnreadableAndMissingFilesFailWithPath) {
  auto missing = ImportFile((dir_ / "nope.jsonl").string(), {});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("nope.jsonl"), std::string::npos);
  if (geteuid() != 0) {  // root reads anything
    std::string p = Write("locked.jsonl", "{}\n");
    fs::permissions(p, fs::perms::none);
    EXPECT_FALSE(ImportFile(p, {}).ok());
  }
}

TEST_F(ImportTest, ExpandInputsWalksDirectoriesSortedAndFiltersNames) {
  Write("b.jsonl", "");
  Write("a.jsonl", "");
  Write("README.md", "");
  fs::create_directories(dir_ / "sub");
  Write("sub/c.json.gz", "");
  auto got = ExpandInputs({dir_.string()});
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 3u);
  EXPECT_EQ(fs::path((*got)[0]).filename(), "a.jsonl");
  EXPECT_EQ(fs::path((*got)[2]).filename(), "c.json.gz");
  // Content decides inside directories: ledger/label files are skipped with a reason, raw
  // dumps and Chrome traces are taken; a file named explicitly is always taken.
  std::string labels = Write("labels.jsonl", "{\"rank\":0,\"step_index\":1,\"view\":\"vertical\"}\n");
  Write("dump.jsonl", "{\"type\":\"META\",\"schema\":\"truffld.events/1\"}\n");
  Write("trace.json", "{\"schemaVersion\":1,\"traceEvents\":[]}");
  std::vector<SkippedInput> skipped;
  auto again = ExpandInputs({dir_.string()}, &skipped);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->size(), 5u);  // a, b (empty: reported on import), dump, trace, sub/c
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(fs::path(skipped[0].path).filename(), "labels.jsonl");
  EXPECT_NE(skipped[0].reason.find("not a trace"), std::string::npos);
  EXPECT_EQ(skipped[0].kind, SkipKind::kNotTrace);
  auto named = ExpandInputs({labels}, &skipped);
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->size(), 1u);
  auto missing = ExpandInputs({(dir_ / "missing").string()});
  ASSERT_TRUE(missing.ok());  // kept, so that importing it reports the path
  EXPECT_EQ(missing->size(), 1u);
}

TEST(OwnOutputs, RecognisedByTheirMarker) {
  EXPECT_EQ(TruffldOutputKind("{\"schema\":\"truffld.trees/1\",\"rank\":0}\n"), "trees.jsonl written by truffld");
  EXPECT_EQ(TruffldOutputKind("{\n  \"schema\": \"truffld.summary/1\",\n"), "summary.json written by truffld");
  EXPECT_EQ(TruffldOutputKind("{\"schema\":\"truffld.diagnosis/1\"}"), "diagnosis.jsonl written by truffld");
  EXPECT_EQ(TruffldOutputKind("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"truffld-merge\"}"),
            "trace.json written by truffld");
  EXPECT_EQ(TruffldOutputKind("{\"schemaVersion\":1,\"traceEvents\":[]}"), "");
  EXPECT_EQ(TruffldOutputKind("{\"type\":\"META\",\"schema\":\"truffld.events/1\"}\n"), "");
}

// An earlier merge's outputs in an input directory, the same dump named twice, and a dump
// beside its compressed copy are all left out (and said why); the first copy of a dump is kept.
TEST_F(ImportTest, ExpandInputsSkipsOwnOutputsAndRepeatedDumps) {
  const std::string meta =
      "{\"type\":\"META\",\"schema\":\"truffld.events/1\",\"host\":\"h\",\"process_id\":7,\"rank\":0,"
      "\"clock\":\"realtime\",\"clock_sync\":{\"realtime_ns\":1,\"monotonic_ns\":1}}\n";
  fs::create_directories(dir_ / "d" / "merged");
  const std::string body = meta + "{\"type\":\"NVTX_MARK\",\"name\":\"m\",\"timestamp\":2,\"process_id\":7,\"thread_id\":1}\n";
  const std::string dump = Write("d/x.jsonl", body);
  Write("d/x.jsonl.gz", truffld::testing::Gzip(body));
  std::string other = Write("d/y.jsonl", "{\"type\":\"META\",\"schema\":\"truffld.events/1\",\"host\":\"h\",\"process_id\":8,\"rank\":1}\n");
  Write("d/merged/trace.json", "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"truffld-merge\"},\"traceEvents\":[]}");
  Write("d/merged/trees.jsonl", "{\"schema\":\"truffld.trees/1\",\"rank\":0,\"type\":\"x\"}\n");
  Write("d/merged/summary.json", "{\n  \"schema\": \"truffld.summary/1\"\n}\n");
  std::vector<SkippedInput> skipped;
  auto got = ExpandInputs({(dir_ / "d").string(), dump, other}, &skipped);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0], dump);
  EXPECT_EQ((*got)[1], other);
  std::map<std::string, SkipKind> kinds;
  for (const SkippedInput& s : skipped) kinds[fs::path(s.path).filename().string() + (s.path == dump ? "@named" : "")] = s.kind;
  EXPECT_EQ(kinds.size(), 6u);
  EXPECT_EQ(kinds["trace.json"], SkipKind::kTruffldOutput);
  EXPECT_EQ(kinds["trees.jsonl"], SkipKind::kTruffldOutput);
  EXPECT_EQ(kinds["summary.json"], SkipKind::kTruffldOutput);
  EXPECT_EQ(kinds["x.jsonl.gz"], SkipKind::kDuplicate);
  EXPECT_EQ(kinds["x.jsonl@named"], SkipKind::kDuplicate);
  EXPECT_EQ(kinds["y.jsonl"], SkipKind::kDuplicate);
  // Hand-made files sharing a META line but not their content are different inputs: kept.
  const std::string twin = Write("twin.jsonl", meta + "{\"type\":\"NVTX_MARK\",\"name\":\"other\",\"timestamp\":3,\"process_id\":7,\"thread_id\":1}\n");
  auto both = ExpandInputs({dump, twin});
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->size(), 2u);
  for (const SkippedInput& s : skipped) {
    if (fs::path(s.path).filename() == "x.jsonl.gz") {
      EXPECT_NE(s.reason.find("same dump as " + dump), std::string::npos) << s.reason;
      EXPECT_NE(s.reason.find("host h, process_id 7, rank 0"), std::string::npos) << s.reason;
    }
  }
}

TEST_F(ImportTest, ImportAllKeepsOrderAndReportsFailures) {
  std::string a = Write("a.jsonl", "{\"type\":\"META\",\"schema\":\"truffld.events/1\",\"host\":\"h\",\"process_id\":1,\"rank\":0,\"clock\":\"realtime\",\"clock_sync\":{\"realtime_ns\":1,\"monotonic_ns\":1}}\n");
  auto all = ImportAll({a, (dir_ / "gone.jsonl").string(), a}, ImportOptions{}, 2);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_TRUE(all[0].ok());
  EXPECT_FALSE(all[1].ok());
  EXPECT_TRUE(all[2].ok());
  EXPECT_TRUE(all[0]->meta.has_meta);
}

}  // namespace
}  // namespace truffld::merge
