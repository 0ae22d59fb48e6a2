#include "truffld/line_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "test_files.h"

namespace truffld {
namespace {

namespace fs = std::filesystem;

using testing::Gzip;
using testing::Zstd;

class LineReaderTest : public testing::TempDirTest {
 protected:
  static std::vector<std::string> ReadAll(LineReader& r) {
    std::vector<std::string> lines;
    std::string_view v;
    while (r.Next(&v)) lines.emplace_back(v);
    return lines;
  }
};

const std::string kBody = "{\"a\":1}\n{\"b\":2}\n\n{\"c\":3}\n";
const std::vector<std::string> kLines = {"{\"a\":1}", "{\"b\":2}", "", "{\"c\":3}"};

TEST_F(LineReaderTest, PlainGzipAndZstdGiveTheSameLines) {
  for (auto [name, bytes] : std::vector<std::pair<std::string, std::string>>{
           {"p.jsonl", kBody}, {"g.jsonl.gz", Gzip(kBody)}, {"z.jsonl.zst", Zstd(kBody)}}) {
    auto r = LineReader::Open(Write(name, bytes));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(ReadAll(**r), kLines) << name;
    EXPECT_TRUE((*r)->status().ok());
    EXPECT_TRUE((*r)->warnings().empty()) << name;
    EXPECT_FALSE((*r)->truncated_last_line());
    EXPECT_EQ((*r)->line_number(), 4);
  }
}

TEST_F(LineReaderTest, CompressionIsDetectedFromContentNotName) {
  auto r = LineReader::Open(Write("misnamed.jsonl", Gzip(kBody)));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->compression(), Compression::kGzip);
  EXPECT_EQ(ReadAll(**r), kLines);
}

TEST_F(LineReaderTest, TruncatedLastLineIsReturnedAndReported) {
  auto r = LineReader::Open(Write("t.jsonl", "{\"a\":1}\n{\"b\":"));
  ASSERT_TRUE(r.ok());
  auto lines = ReadAll(**r);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "{\"b\":");
  EXPECT_TRUE((*r)->truncated_last_line());
  ASSERT_EQ((*r)->warnings().size(), 1u);
  EXPECT_EQ((*r)->warnings()[0].line, 2);
  EXPECT_NE((*r)->warnings()[0].message.find("t.jsonl:2:"), std::string::npos);
  EXPECT_TRUE((*r)->status().ok());
}

TEST_F(LineReaderTest, CrlfIsStripped) {
  auto r = LineReader::Open(Write("crlf.jsonl", "a\r\nb\r\n\r\nc"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ReadAll(**r), (std::vector<std::string>{"a", "b", "", "c"}));
  EXPECT_TRUE((*r)->truncated_last_line());
}

TEST_F(LineReaderTest, EmptyFileHasNoLines) {
  for (auto [name, bytes] : std::vector<std::pair<std::string, std::string>>{
           {"e.jsonl", ""}, {"e.jsonl.gz", Gzip("")}, {"e.jsonl.zst", Zstd("")}}) {
    auto r = LineReader::Open(Write(name, bytes));
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(ReadAll(**r).empty()) << name;
    EXPECT_TRUE((*r)->status().ok());
    EXPECT_TRUE((*r)->warnings().empty()) << name;
  }
}

TEST_F(LineReaderTest, TenMegabyteLineSurvivesEveryCodec) {
  std::string big(10 << 20, 'x');
  big[0] = '"';
  big.back() = '"';
  std::string body = "first\n" + big + "\nlast\n";
  for (auto [name, bytes] : std::vector<std::pair<std::string, std::string>>{
           {"b.jsonl", body}, {"b.jsonl.gz", Gzip(body)}, {"b.jsonl.zst", Zstd(body)}}) {
    LineReader::Options o;
    o.block_bytes = 64 << 10;  // force many refills across the long line
    auto r = LineReader::Open(Write(name, bytes), o);
    ASSERT_TRUE(r.ok());
    auto lines = ReadAll(**r);
    ASSERT_EQ(lines.size(), 3u) << name;
    EXPECT_EQ(lines[1].size(), big.size());
    EXPECT_EQ(lines[1], big);
    EXPECT_EQ(lines[2], "last");
  }
}

TEST_F(LineReaderTest, OverlongLineIsSkippedAndCounted) {
  LineReader::Options o;
  o.block_bytes = 4096;
  o.max_line_bytes = 10000;
  std::string body = "a\n" + std::string(50000, 'y') + "\nb\n" + std::string(20000, 'z');
  auto r = LineReader::Open(Write("long.jsonl", body), o);
  ASSERT_TRUE(r.ok());
  std::vector<std::pair<long long, std::string>> got;
  std::string_view v;
  while ((*r)->Next(&v)) got.emplace_back((*r)->line_number(), std::string(v));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], (std::pair<long long, std::string>{1, "a"}));
  EXPECT_EQ(got[1], (std::pair<long long, std::string>{3, "b"}));  // line numbers stay true
  EXPECT_EQ((*r)->long_lines_skipped(), 2u);
  ASSERT_EQ((*r)->warnings().size(), 2u);
  EXPECT_EQ((*r)->warnings()[0].line, 2);
  EXPECT_EQ((*r)->warnings()[1].line, 4);
}

TEST_F(LineReaderTest, CutGzipStreamYieldsWhatDecodesAndWarns) {
  std::string body;
  for (int i = 0; i < 20000; ++i) body += "{\"i\":" + std::to_string(i) + ",\"pad\":\"" + std::to_string(i * 7919) + "\"}\n";
  for (auto [name, bytes] : std::vector<std::pair<std::string, std::string>>{
           {"cut.jsonl.gz", Gzip(body)}, {"cut.jsonl.zst", Zstd(body)}}) {
    std::string cut = bytes.substr(0, bytes.size() / 2);
    auto r = LineReader::Open(Write(name, cut));
    ASSERT_TRUE(r.ok());
    auto lines = ReadAll(**r);
    EXPECT_GT(lines.size(), 1000u) << name;
    EXPECT_LT(lines.size(), 20000u) << name;
    EXPECT_TRUE((*r)->status().ok()) << (*r)->status().ToString();
    bool saw_stream_warning = false;
    for (auto& w : (*r)->warnings()) saw_stream_warning |= w.message.find("stream ends early") != std::string::npos;
    EXPECT_TRUE(saw_stream_warning) << name;
    // Every complete line is intact.
    for (size_t i = 0; i + 1 < lines.size(); ++i)
      ASSERT_EQ(lines[i].rfind("{\"i\":" + std::to_string(i) + ",", 0), 0u) << name << " line " << i;
  }
}

TEST_F(LineReaderTest, ConcatenatedGzipMembersAreAllRead) {
  auto r = LineReader::Open(Write("multi.jsonl.gz", Gzip("a\nb\n") + Gzip("c\n")));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ReadAll(**r), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE((*r)->warnings().empty());
}

TEST_F(LineReaderTest, CorruptGzipIsAHardErrorNamingTheFile) {
  std::string g = Gzip(kBody + kBody + kBody);
  for (size_t i = 12; i < g.size() - 8; ++i) g[i] = static_cast<char>(g[i] ^ 0x5a);
  auto r = LineReader::Open(Write("bad.jsonl.gz", g));
  ASSERT_TRUE(r.ok());
  ReadAll(**r);
  EXPECT_FALSE((*r)->status().ok());
  EXPECT_NE((*r)->status().message().find("bad.jsonl.gz"), std::string::npos);
}

TEST_F(LineReaderTest, MissingFileAndDirectoryAreClearErrors) {
  auto r = LineReader::Open((dir_ / "nope.jsonl").string());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("nope.jsonl"), std::string::npos);
  auto d = LineReader::Open(dir_.string());
  EXPECT_FALSE(d.ok());
}

TEST_F(LineReaderTest, ReadWholeFileDecompresses) {
  auto s = ReadWholeFile(Write("w.json.gz", Gzip("{\"traceEvents\":[]}")));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->view(), "{\"traceEvents\":[]}");
  std::string g = Gzip(std::string(100000, 'q'));
  auto t = ReadWholeFile(Write("cut.json.gz", g.substr(0, g.size() - 20)));
  EXPECT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kTruncated);
}

}  // namespace
}  // namespace truffld
