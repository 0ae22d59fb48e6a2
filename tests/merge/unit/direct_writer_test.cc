// DirectWriter, and JsonOut writing through it: the file holds exactly the text JsonOut holds in
// memory mode whatever the piece sizes (pieces larger than a block included); every write but
// the last is whole aligned units at an aligned offset (what O_DIRECT demands); a write refused
// for its alignment turns direct I/O off without losing a byte; a disk error reaches Close with
// the file's name; real direct I/O leaves the page cache empty where the file system allows it.
#include "truffld/direct_writer.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "truffld/merge/json_out.h"
#include "scratch_file.h"

#if defined(__linux__)
#include <unistd.h>
#endif

namespace truffld::merge {
namespace {

#if defined(__linux__)

// The fake pwrite (called on the writer's thread): records each call, fails the call numbered
// g_fail_at with g_fail_errno, then writes for real.
struct Call {
  uint64_t offset;
  size_t bytes;
};
std::mutex g_mu;
std::vector<Call> g_calls;
int g_fail_at = -1;
int g_fail_errno = 0;

ssize_t RecordingPwrite(int fd, const void* buf, size_t n, off_t offset) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    const int k = int(g_calls.size());
    g_calls.push_back({uint64_t(offset), n});
    if (k == g_fail_at) {
      errno = g_fail_errno;
      return -1;
    }
  }
  return ::pwrite(fd, buf, n, offset);
}

void ResetFake(int fail_at = -1, int err = 0) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_calls.clear();
  g_fail_at = fail_at;
  g_fail_errno = err;
}

class DirectWriterTest : public testing::ScratchFileTest {
 protected:
  void SetUp() override {
    ScratchFileTest::SetUp();
    ResetFake();
  }

  // The fake on a file opened the usual way: the ring, the carrying and the calls are the same
  // as with O_DIRECT, on any file system.
  std::unique_ptr<DirectWriter> OpenFake(size_t block, int blocks) {
    DirectWriter::Options o;
    o.block = block;
    o.blocks = blocks;
    o.pwrite = RecordingPwrite;
    o.o_direct = false;
    auto dw = DirectWriter::Open(path_.string(), o);
    EXPECT_TRUE(dw.ok()) << dw.status().ToString();
    return dw.ok() ? std::move(*dw) : nullptr;
  }
};

// Writes a reproducible mix of pieces, small and large, escaped and plain, through `out`.
void WritePieces(JsonOut& out, uint32_t seed, size_t pieces, size_t max_piece) {
  std::mt19937 rng(seed);
  std::string s;
  for (size_t i = 0; i < pieces; ++i) {
    const size_t n = rng() % 8 == 0 ? rng() % max_piece : rng() % 64;
    s.assign(n, char('a' + i % 26));
    if (n > 3 && rng() % 3 == 0) s[n / 2] = '"';  // escaped: 6 bytes of room a byte asked for
    switch (rng() % 4) {
      case 0: out.Raw(s); break;
      case 1: out.String(s); break;
      case 2: out.Int(int64_t(rng()) * 1000003); break;
      default: out.Micros(int64_t(rng()) * 977); break;
    }
    out.Char('\n');
  }
}

TEST_F(DirectWriterTest, FileHoldsWhatMemoryModeHoldsWithAlignedWrites) {
  struct Shape { size_t block; int blocks; size_t pieces, max_piece; };
  for (Shape sh : {Shape{4096, 2, 3000, 20000}, Shape{16384, 3, 20000, 5000},
                   Shape{65536, 4, 1500, 300000}, Shape{8192, 2, 0, 1}, Shape{4096, 2, 1, 10}}) {
    JsonOut memory;
    WritePieces(memory, 7, sh.pieces, sh.max_piece);
    const std::string want = memory.text();
    ResetFake();
    auto dw = OpenFake(sh.block, sh.blocks);
    ASSERT_NE(dw, nullptr);
    JsonOut out(dw.get(), path_.string());
    WritePieces(out, 7, sh.pieces, sh.max_piece);
    ASSERT_TRUE(out.Close().ok());
    EXPECT_EQ(dw->bytes(), want.size());
    EXPECT_FALSE(dw->fell_back());
    const std::string got = ReadBack();
    ASSERT_EQ(got.size(), want.size()) << sh.block;
    EXPECT_TRUE(got == want) << "content differs, block " << sh.block;
    std::lock_guard<std::mutex> lock(g_mu);
    uint64_t next = 0;
    for (size_t i = 0; i < g_calls.size(); ++i) {
      const Call& c = g_calls[i];
      EXPECT_EQ(c.offset, next) << "call " << i << ": not in order";
      EXPECT_EQ(c.offset % DirectWriter::kAlign, 0u) << "call " << i;
      if (i + 1 < g_calls.size()) {
        EXPECT_EQ(c.bytes % DirectWriter::kAlign, 0u) << "call " << i;
      }
      EXPECT_LE(c.bytes, sh.block) << "call " << i;
      next = c.offset + c.bytes;
    }
    EXPECT_EQ(next, want.size());
    // Only the last unit, never a whole one, is written without the alignment.
    const uint64_t aligned = want.size() / DirectWriter::kAlign * DirectWriter::kAlign;
    EXPECT_EQ(dw->direct_bytes(), aligned);
  }
}

TEST_F(DirectWriterTest, RefusedAlignmentTurnsDirectIoOffAndLosesNothing) {
  JsonOut memory;
  WritePieces(memory, 11, 4000, 30000);
  const std::string want = memory.text();
  ResetFake(/*fail_at=*/2, EINVAL);
  auto dw = OpenFake(16384, 3);
  ASSERT_NE(dw, nullptr);
  JsonOut out(dw.get(), path_.string());
  WritePieces(out, 11, 4000, 30000);
  ASSERT_TRUE(out.Close().ok());
  EXPECT_TRUE(dw->fell_back());
  std::lock_guard<std::mutex> lock(g_mu);
  ASSERT_GT(g_calls.size(), 4u);
  EXPECT_EQ(g_calls[3].offset, g_calls[2].offset);  // the refused write, tried again
  EXPECT_EQ(dw->direct_bytes(), g_calls[0].bytes + g_calls[1].bytes);  // the writes before it
  EXPECT_TRUE(ReadBack() == want);
}

TEST_F(DirectWriterTest, DiskErrorReachesCloseWithTheFileName) {
  for (int err : {EIO, ENOSPC}) {
    for (int at : {0, 3}) {
      ResetFake(at, err);
      auto dw = OpenFake(8192, 2);
      ASSERT_NE(dw, nullptr);
      JsonOut out(dw.get(), path_.string());
      WritePieces(out, 3, 5000, 20000);  // goes on writing after the error: no hang, no crash
      const Status st = out.Close();
      ASSERT_FALSE(st.ok()) << err << " at " << at;
      EXPECT_EQ(st.code(), StatusCode::kIoError);
      EXPECT_NE(st.message().find(path_.string()), std::string::npos) << st.message();
      EXPECT_NE(st.message().find(std::strerror(err)), std::string::npos) << st.message();
      std::lock_guard<std::mutex> lock(g_mu);
      EXPECT_EQ(g_calls.size(), size_t(at) + 1) << "nothing is written after a disk error";
    }
  }
}

TEST_F(DirectWriterTest, DestroyedWithoutFinishDoesNotHang) {
  auto dw = OpenFake(4096, 2);
  ASSERT_NE(dw, nullptr);
  {
    JsonOut out(dw.get(), path_.string());
    WritePieces(out, 5, 2000, 9000);
  }
  dw.reset();  // joins the thread, closes the file
  SUCCEED();
}

TEST_F(DirectWriterTest, CannotCreateNamesTheFile) {
  const std::string bad = (path_.parent_path() / "no-such-dir" / "x.json").string();
  auto dw = DirectWriter::Open(bad);
  ASSERT_FALSE(dw.ok());
  EXPECT_EQ(dw.status().code(), StatusCode::kIoError);
  EXPECT_NE(dw.status().message().find(bad), std::string::npos);
}

// The real thing, where the file system takes O_DIRECT: the text is right and the page cache
// never held the whole units.
TEST_F(DirectWriterTest, RealDirectIoBypassesThePageCache) {
  DirectWriter::Options o;
  o.block = 65536;
  o.blocks = 3;
  auto opened = DirectWriter::Open(path_.string(), o);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  if (!*opened) GTEST_SKIP() << "this file system refuses O_DIRECT (the CLI then writes behind)";
  std::unique_ptr<DirectWriter> dw = std::move(*opened);
  JsonOut memory;
  WritePieces(memory, 13, 6000, 40000);
  const std::string want = memory.text();
  JsonOut out(dw.get(), path_.string());
  WritePieces(out, 13, 6000, 40000);
  ASSERT_TRUE(out.Close().ok());
  if (dw->fell_back()) GTEST_SKIP() << "the device refused 4096-byte alignment";
  const uint64_t aligned = want.size() / DirectWriter::kAlign * DirectWriter::kAlign;
  EXPECT_EQ(dw->direct_bytes(), aligned);
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const long cached = testing::CachedPages(path_, want.size(), aligned);
  ASSERT_GE(cached, 0);
  EXPECT_LT(size_t(cached), aligned / page / 4) << cached << " of " << aligned / page << " pages cached";
  EXPECT_TRUE(ReadBack() == want);  // last: reading brings the pages in
}

#endif  // __linux__

}  // namespace
}  // namespace truffld::merge
