// Format sniffing and the raw JSONL file importer on real files (temporary directory).
#include "truffld/merge/import.h"
#include "truffld/merge/pipeline.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

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
  std::vector<std::pair<std::string, std::string>> skipped;
  auto again = ExpandInputs({dir_.string()}, &skipped);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->size(), 5u);  // a, b (empty: reported on import), dump, trace, sub/c
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(fs::path(skipped[0].first).filename(), "labels.jsonl");
  EXPECT_NE(skipped[0].second.find("not a trace"), std::string::npos);
  auto named = ExpandInputs({labels}, &skipped);
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->size(), 1u);
  auto missing = ExpandInputs({(dir_ / "missing").string()});
  ASSERT_TRUE(missing.ok());  // kept, so that importing it reports the path
  EXPECT_EQ(missing->size(), 1u);
}

TEST_F(ImportTest, ImportAllKeepsOrderAndReportsFailures) {
  std::string a = Write("a.jsonl", "{\"type\":\"META\",\"schema\":\"truffld.events/1\",\"host\":\"h\",\"process_id\":1,\"rank\":0,\"clock\":\"realtime\",\"clock_sync\":{\"realtime_ns\":1,\"monotonic_ns\":1}}\n");
  auto all = ImportAll({a, (dir_ / "gone.jsonl").string(), a}, false, 2);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_TRUE(all[0].ok());
  EXPECT_FALSE(all[1].ok());
  EXPECT_TRUE(all[2].ok());
  EXPECT_TRUE(all[0]->meta.has_meta);
}

}  // namespace
}  // namespace truffld::merge
