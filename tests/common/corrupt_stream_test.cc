// Corrupt and streamed inputs through ByteSource/LineReader: every complete line decoded before
// a corruption is kept (as gzip -dc / zstd -dc recover them), and peeking gives the bytes back.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <string>
#include <vector>

#include "test_files.h"
#include "truffld/byte_source.h"
#include "truffld/line_reader.h"

namespace truffld {
namespace {

using testing::Gzip;
using testing::Zstd;

class CorruptStreamTest : public testing::TempDirTest {};

// 7,510 distinct records, ~100 bytes each (the size of the probe file).
std::string Records() {
  std::string s;
  for (int i = 0; i < 7510; ++i)
    s += "{\"type\":\"KERNEL\",\"name\":\"kernel_" + std::to_string(i * 7919 % 100003) + "\",\"gpu_start\":" +
         std::to_string(1000000 + i * 37) + ",\"correlation_id\":" + std::to_string(i) + "}\n";
  return s;
}

size_t CompleteLines(const std::string& decoded) {
  size_t n = 0;
  for (char c : decoded) n += c == '\n';
  return n;
}

// What `zstd -dc` writes before it stops at the corruption: streaming with the library's
// recommended buffer sizes, output kept after each call.
std::string ZstdCliDecode(const std::string& z) {
  ZSTD_DStream* ds = ZSTD_createDStream();
  std::string out, buf(ZSTD_DStreamOutSize(), '\0');
  for (size_t pos = 0; pos < z.size();) {
    ZSTD_inBuffer in{z.data(), std::min(z.size(), pos + ZSTD_DStreamInSize()), pos};
    while (in.pos < in.size) {
      ZSTD_outBuffer o{buf.data(), buf.size(), 0};
      const size_t r = ZSTD_decompressStream(ds, &o, &in);
      if (ZSTD_isError(r)) {
        ZSTD_freeDStream(ds);
        return out;
      }
      out.append(buf.data(), o.pos);
    }
    pos = in.pos;
  }
  ZSTD_freeDStream(ds);
  return out;
}

// What `gzip -dc` writes before it stops: inflate, output kept after each call.
std::string GzipCliDecode(const std::string& g) {
  z_stream zs{};
  inflateInit2(&zs, 15 + 32);
  std::string out, buf(1 << 15, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(g.data()));
  zs.avail_in = uInt(g.size());
  for (int rc = Z_OK; rc == Z_OK;) {
    zs.next_out = reinterpret_cast<Bytef*>(buf.data());
    zs.avail_out = uInt(buf.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    out.append(buf.data(), buf.size() - zs.avail_out);
  }
  inflateEnd(&zs);
  return out;
}

std::vector<std::string> Lines(LineReader& r) {
  std::vector<std::string> lines;
  std::string_view v;
  while (r.Next(&v)) lines.emplace_back(v);
  return lines;
}

TEST_F(CorruptStreamTest, CompleteLinesBeforeTheCorruptionAreKept) {
  const std::string records = Records();
  for (bool zstd : {true, false}) {
    std::string c = zstd ? Zstd(records) : Gzip(records);
    for (size_t i = c.size() * 4 / 5; i < c.size() * 4 / 5 + 16; ++i) c[i] = char(c[i] ^ 0x5a);  // 16 bad bytes
    const size_t want = CompleteLines(zstd ? ZstdCliDecode(c) : GzipCliDecode(c));
    ASSERT_GT(want, 100u) << "the probe must leave lines to recover";
    ASSERT_LT(want, 7510u);
    auto r = LineReader::Open(Write(zstd ? "c.jsonl.zst" : "c.jsonl.gz", c));
    ASSERT_TRUE(r.ok());
    const std::vector<std::string> lines = Lines(**r);
    EXPECT_GE(lines.size(), want) << (zstd ? "zstd" : "gzip");
    EXPECT_LT(lines.size(), 7510u);
    EXPECT_FALSE((*r)->status().ok()) << "the corruption is reported";
    const std::string prefix = records.substr(0, records.find('\n') + 1);
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines[0] + "\n", prefix);
  }
}

TEST_F(CorruptStreamTest, PeekedBytesAreReadAgain) {
  for (bool gz : {false, true}) {
    const std::string body = "0123456789abcdef\nline two\n";
    auto src = OpenByteSource(Write(gz ? "p.gz" : "p.txt", gz ? Gzip(body) : body));
    ASSERT_TRUE(src.ok());
    auto head = (*src)->Peek(10);
    ASSERT_TRUE(head.ok());
    EXPECT_EQ(*head, "0123456789");
    EXPECT_EQ((*src)->Peek(4).value(), "0123");  // peeking again consumes nothing
    auto lr = LineReader::Open(std::move(*src), LineReader::Options{});
    EXPECT_EQ(Lines(*lr), (std::vector<std::string>{"0123456789abcdef", "line two"}));
  }
}

// The gzip decoder (ISA-L) reads every member, after a Peek or a Read; a cut-short file keeps
// what it decoded (as gzip -dc does) and says so; corruption, a bad CRC or bytes after the last
// member that start no member are errors naming the file.
TEST_F(CorruptStreamTest, GzipMembersFollowOneAnotherAndProblemsAreNamed) {
  const std::string a = Records(), b = "{\"tail\":1}\n";  // the last member is small: a low ISIZE hint
  const std::string two = Gzip(a) + Gzip(b);
  auto src = OpenByteSource(Write("two.gz", two));
  ASSERT_TRUE(src.ok());
  EXPECT_EQ((*src)->Peek(4).value(), a.substr(0, 4));
  auto all = ReadAll(**src, false, 64);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(all->view(), a + b);
  EXPECT_GE(all->capacity, all->size + 64);
  EXPECT_EQ((*src)->raw_bytes_read(), two.size());
  EXPECT_FALSE((*src)->truncated());
  char c;
  EXPECT_EQ((*src)->Read(&c, 1).value(), 0u);  // nothing left after it

  auto read_first = OpenByteSource(Write("r.gz", Gzip(a)));
  ASSERT_EQ((*read_first)->Read(&c, 1).value(), 1u);
  EXPECT_EQ(ReadAll(**read_first).value().view(), a.substr(1));

  std::string corrupt = Gzip(a);
  for (size_t i = corrupt.size() * 4 / 5; i < corrupt.size() * 4 / 5 + 16; ++i) corrupt[i] = char(corrupt[i] ^ 0x5a);
  std::string bad_crc = Gzip(a);
  bad_crc[bad_crc.size() - 8] = char(bad_crc[bad_crc.size() - 8] ^ 1);
  const std::string cut = Gzip(a).substr(0, Gzip(a).size() / 2);
  for (const auto& [name, bytes] : std::vector<std::pair<std::string, std::string>>{
           {"corrupt.gz", corrupt}, {"cut.gz", cut}, {"trailing.gz", Gzip(a) + "garbage"},
           {"trailing-long.gz", Gzip(a) + "garbage that is longer than a header"}, {"crc.gz", bad_crc}}) {
    auto bad = OpenByteSource(Write(name, bytes));
    ASSERT_TRUE(bad.ok());
    auto streamed = ReadAll(**bad, /*allow_truncated=*/true);
    if (name == "cut.gz") {
      ASSERT_TRUE(streamed.ok()) << streamed.status().ToString();
      EXPECT_TRUE((*bad)->truncated());
      EXPECT_EQ(streamed->view(), GzipCliDecode(cut));
    } else {
      ASSERT_FALSE(streamed.ok()) << name;
      EXPECT_NE(streamed.status().message().find("corrupt gzip data"), std::string::npos) << name;
      EXPECT_NE(streamed.status().message().find(name), std::string::npos) << streamed.status().ToString();
    }
  }
}

TEST_F(CorruptStreamTest, APipeIsReadOnceAndNotRereadable) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string body = "{\"a\":1}\n{\"b\":2}\n";
  ASSERT_EQ(::write(fds[1], body.data(), body.size()), ssize_t(body.size()));
  ::close(fds[1]);
  auto src = OpenByteSource("/dev/fd/" + std::to_string(fds[0]));
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  EXPECT_FALSE((*src)->rereadable());
  EXPECT_EQ((*src)->Peek(1 << 16).value(), body);  // more than there is: all of it, once
  auto lr = LineReader::Open(std::move(*src), LineReader::Options{});
  EXPECT_EQ(Lines(*lr).size(), 2u);
  ::close(fds[0]);
  auto file = OpenByteSource(Write("f.jsonl", body));
  ASSERT_TRUE(file.ok());
  EXPECT_TRUE((*file)->rereadable());
}

}  // namespace
}  // namespace truffld
