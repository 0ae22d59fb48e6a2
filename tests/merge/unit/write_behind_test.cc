// WriteBehind: output written through it is complete and in order, the written part leaves the
// page cache window by window (checked with mincore), and it stays out of the way where it
// cannot work (pipes, character devices).
#include "truffld/merge/write_behind.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "truffld/merge/json_out.h"
#include "scratch_file.h"

#if defined(__linux__)
#include <sys/vfs.h>
#include <unistd.h>
#endif

namespace truffld::merge {
namespace {

using WriteBehindTest = testing::ScratchFileTest;

// Text of `n` bytes that differs at every position modulo a prime, so a lost, repeated or
// reordered block shows.
std::string Pattern(size_t n) {
  std::string s(n, ' ');
  for (size_t i = 0; i < n; ++i) s[i] = char('a' + (i * 7 + i / 4093) % 26);
  return s;
}

TEST_F(WriteBehindTest, OutputIsCompleteAndWrittenPartIsDropped) {
  constexpr uint64_t kWindow = 256 << 10;
  const std::string text = Pattern((4 << 20) + 12345);
  std::FILE* f = std::fopen(path_.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  WriteBehind wb(f, path_.string(), kWindow);
  {
    JsonOut out(f, path_.string(), &wb);
    for (size_t i = 0; i < text.size(); i += 1000) out.Raw(std::string_view(text).substr(i, 1000));
    ASSERT_TRUE(out.Flush().ok());
  }
  ASSERT_EQ(std::fclose(f), 0);
#if defined(__linux__)
  ASSERT_TRUE(wb.active());
  // JsonOut hands over 1 MiB blocks: all but the last two windows' worth is dropped.
  EXPECT_GE(wb.dropped_bytes(), text.size() - 2 * JsonOut::kBlock - 2 * kWindow);
  EXPECT_LE(wb.dropped_bytes(), text.size());
  struct statfs sfs;
  ASSERT_EQ(statfs(path_.c_str(), &sfs), 0);
  if (sfs.f_type == 0x01021994 || sfs.f_type == 0x858458f6) {  // tmpfs, ramfs
    EXPECT_EQ(ReadBack(), text);
    GTEST_SKIP() << "an in-memory file system keeps file pages by design";
  }
  const long still_cached = testing::CachedPages(path_, text.size(), wb.dropped_bytes());
  ASSERT_GE(still_cached, 0);
  const size_t dropped_pages = wb.dropped_bytes() / size_t(sysconf(_SC_PAGESIZE));
  // The kernel may keep a few pages (readahead by another reader, a busy page): most must go.
  EXPECT_LT(size_t(still_cached), dropped_pages / 4) << still_cached << " of " << dropped_pages << " pages still cached";
#endif
  EXPECT_EQ(ReadBack(), text);  // last: reading brings the pages back
}

TEST_F(WriteBehindTest, OffsetsCountFromWhereTheStreamWas) {
  // A stream that already holds 5000 bytes, all still in stdio's buffer: the windows start at
  // offset 5000, and each window is dropped one window after it is complete.
  std::FILE* f = std::fopen(path_.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  const std::string head = Pattern(5000), body = Pattern(10 * 65536);
  ASSERT_EQ(std::fwrite(head.data(), 1, head.size(), f), head.size());
  WriteBehind wb(f, path_.string(), 65536);
#if defined(__linux__)
  ASSERT_TRUE(wb.active());
  for (size_t k = 1; k <= 10; ++k) {
    ASSERT_EQ(std::fwrite(body.data() + (k - 1) * 65536, 1, 65536, f), 65536u);
    ASSERT_TRUE(wb.Wrote(65536).ok());
    EXPECT_EQ(wb.dropped_until(), 5000 + (k - 1) * 65536) << k;  // never the bytes before it
    EXPECT_EQ(wb.dropped_bytes(), (k - 1) * 65536) << k;
  }
#endif
  ASSERT_EQ(std::fclose(f), 0);
  EXPECT_EQ(ReadBack(), head + body);
}

#if defined(__linux__)
// Writeback failures: a disk error reaches the writer (and every later Flush), anything else
// only turns the hint off.
int g_sync_calls = 0;
int g_sync_errno = 0;
int FailingSync(int, int64_t, int64_t, unsigned) {
  ++g_sync_calls;
  errno = g_sync_errno;
  return -1;
}

TEST_F(WriteBehindTest, DiskErrorsReachTheWriterOthersTurnItOff) {
  for (int err : {EIO, ENOSPC, EINVAL, ENOSYS}) {
    g_sync_calls = 0;
    g_sync_errno = err;
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    WriteBehind wb(f, path_.string(), 4096, FailingSync);
    Status first, last;
    {
      JsonOut out(f, path_.string(), &wb);
      out.Raw(Pattern(3 * JsonOut::kBlock));  // one write, well over the window
      first = out.Flush();
      out.Raw("more");
      last = out.Flush();
    }
    std::fclose(f);
    const bool disk = err == EIO || err == ENOSPC;
    EXPECT_EQ(first.ok(), !disk) << err << " " << first.ToString();
    EXPECT_EQ(last.ok(), !disk) << err;
    if (disk) {
      EXPECT_EQ(first.code(), StatusCode::kIoError);
      EXPECT_NE(first.message().find(path_.string()), std::string::npos) << first.message();
      EXPECT_NE(first.message().find(std::strerror(err)), std::string::npos) << first.message();
      EXPECT_EQ(last.message(), first.message());  // the first error is kept
    } else {
      EXPECT_FALSE(wb.active()) << err;
      EXPECT_EQ(g_sync_calls, 1) << err;  // tried once, then left alone
    }
  }
}
#endif

TEST_F(WriteBehindTest, InactiveWhereItCannotWork) {
  WriteBehind none(nullptr, "<none>");
  EXPECT_FALSE(none.active());
  EXPECT_TRUE(none.Wrote(1 << 30).ok());
#if defined(__linux__)
  std::FILE* null = std::fopen("/dev/null", "wb");
  ASSERT_NE(null, nullptr);
  WriteBehind dev(null, "/dev/null", 4096);
  EXPECT_FALSE(dev.active());  // a character device
  JsonOut out(null, "/dev/null", &dev);
  out.Raw(Pattern(3 << 20));
  EXPECT_TRUE(out.Flush().ok());
  EXPECT_EQ(dev.dropped_bytes(), 0u);
  std::fclose(null);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::FILE* w = fdopen(fds[1], "wb");
  ASSERT_NE(w, nullptr);
  WriteBehind pipe_wb(w, "<pipe>", 4096);
  EXPECT_FALSE(pipe_wb.active());
  std::fclose(w);
  ::close(fds[0]);
#endif
}

}  // namespace
}  // namespace truffld::merge
