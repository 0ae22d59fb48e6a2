// DumpSink on a real file system: direct I/O and the page cache give the same bytes, every
// byte given is in the file after each Flush (what a killed process leaves), a device that
// refuses a direct write or a busy disk loses nothing, no direct write is unaligned or covers
// a page written through the cache, an idle flush writes nothing, zstd decodes to everything
// given after each flush, tmpfs stays on the page cache, and a failing disk is counted, not
// retried.
#include "dump_sink.h"

#include <fcntl.h>
#include <time.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <zstd.h>

namespace truffld::inject {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the test's working folder (the build tree: a disk, where O_DIRECT works),
// removed again when the test ends, passed or not.
struct SinkTestDir {
  explicit SinkTestDir(const std::string& name, const fs::path& parent = fs::current_path())
      : path((parent / ("dump_sink_test-" + name + "-" + std::to_string(::getpid()))).string()) {
    fs::remove_all(path);
  }
  ~SinkTestDir() { fs::remove_all(path); }
  const std::string path;
};

// Every pwrite the sink makes, checked as it is made: a direct write (O_DIRECT on the
// descriptor) has an aligned buffer, offset and length and never touches a page written
// through the page cache before.
struct PWriteLog {
  size_t direct = 0, cached = 0, calls = 0;
  std::vector<std::pair<uint64_t, uint64_t>> cached_pages;  // [first, last] page of each
  std::vector<std::string> problems;
};
PWriteLog g_pwrites;

ssize_t RecordingPWrite(int fd, const void* buf, size_t n, off_t off) {
  const uint64_t page = static_cast<uint64_t>(std::max(4096L, ::sysconf(_SC_PAGESIZE)));
  const uint64_t first = static_cast<uint64_t>(off) / page, last = (static_cast<uint64_t>(off) + n - 1) / page;
  ++g_pwrites.calls;
  if (::fcntl(fd, F_GETFL) & O_DIRECT) {
    ++g_pwrites.direct;
    if (reinterpret_cast<uintptr_t>(buf) % 4096 || off % 4096 || n % 4096)
      g_pwrites.problems.push_back("unaligned direct write at " + std::to_string(off));
    for (const auto& [a, b] : g_pwrites.cached_pages)
      if (first <= b && a <= last) g_pwrites.problems.push_back("direct write over a cached page at " + std::to_string(off));
  } else {
    ++g_pwrites.cached;
    g_pwrites.cached_pages.push_back({first, last});
  }
  return ::pwrite(fd, buf, n, off);
}

std::string SinkFileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool DiskFileSystem(const std::string& dir) {
  struct statfs f;
  return ::statfs(dir.c_str(), &f) == 0 && (f.f_type == EXT4_SUPER_MAGIC || f.f_type == XFS_SUPER_MAGIC);
}

// Lines of random lengths (1 byte to 3 blocks), some through Write and some formatted in place
// (Room/Advance), with Flushes between; after each Flush the file holds exactly what was given.
void WriteAndCheck(DumpSink& sink, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string expected;
  for (int i = 0; i < 200; ++i) {
    const size_t n = rng() % 10 == 0 ? 1 + rng() % (3 * DumpSink::kBlock) : 1 + rng() % 300;
    std::string text(n, static_cast<char>('a' + i % 26));
    text.back() = '\n';
    if (n <= DumpSink::kMaxRoom && rng() % 2 == 0) {
      char* room = sink.Room(n);
      ASSERT_NE(room, nullptr);
      std::memcpy(room, text.data(), n);
      sink.Advance(n);
    } else {
      ASSERT_TRUE(sink.Write(text));
    }
    expected += text;
    if (rng() % 7 == 0) {
      sink.Flush();
      ASSERT_EQ(SinkFileText(sink.path()), expected) << "after flush " << i;
      // The descriptor's flag is set before each write as it needs (a flush leaves it off); once
      // direct I/O is off for good, it stays off.
      if (!sink.direct_io()) {
        ASSERT_FALSE(sink.fd_direct()) << "after flush " << i;
      }
    }
  }
  sink.Close();
  EXPECT_EQ(SinkFileText(sink.path()), expected);
  EXPECT_EQ(sink.write_errors(), 0u);
}

TEST(DumpSink, DirectAndPageCacheGiveTheSameBytes) {
  for (bool direct : {true, false}) {
    const SinkTestDir dir(direct ? "direct" : "cached");
    std::vector<std::string> logs;
    DumpSink sink(dir.path, Compression::kNone, 0640, [&](const std::string& m) { logs.push_back(m); }, direct);
    g_pwrites = PWriteLog{};
    sink.set_pwrite(RecordingPWrite);
    ASSERT_TRUE(sink.Open([](int) { return std::string("dump.jsonl"); }));
    const bool disk = DiskFileSystem(dir.path);
    if (direct && disk) {
      EXPECT_TRUE(sink.direct_io()) << "ext4/xfs take O_DIRECT";
    } else if (!direct) {
      EXPECT_FALSE(sink.direct_io());
    } else {
      std::printf("note: %s is neither ext4 nor xfs; direct I/O %s\n", dir.path.c_str(), sink.direct_io() ? "on" : "off");
    }
    const bool was_direct = sink.direct_io();
    WriteAndCheck(sink, direct ? 1 : 2);
    EXPECT_TRUE(logs.empty());
    EXPECT_TRUE(g_pwrites.problems.empty()) << g_pwrites.problems.front();
    if (was_direct) {
      EXPECT_TRUE(sink.direct_io()) << "still direct at the end; slow direct writes: " << sink.slow_direct_writes();
      EXPECT_GT(g_pwrites.direct, 10u);  // most of the ~60 MB went direct
      EXPECT_GT(g_pwrites.cached, 0u);   // the partial units at the flushes
    } else {
      EXPECT_EQ(g_pwrites.calls, 0u);  // write(), not the positional path
    }
  }
}

TEST(DumpSink, AnIdleFlushWritesNothing) {
  const SinkTestDir dir("idle");
  DumpSink sink(dir.path, Compression::kNone, 0640, [](const std::string&) {}, true);
  g_pwrites = PWriteLog{};
  sink.set_pwrite(RecordingPWrite);
  ASSERT_TRUE(sink.Open([](int) { return std::string("dump.jsonl"); }));
  if (!sink.direct_io()) GTEST_SKIP() << dir.path << " does not take O_DIRECT";
  ASSERT_TRUE(sink.Write("{\"type\":\"META\"}\n"));
  sink.Flush();
  const size_t calls = g_pwrites.calls;
  EXPECT_EQ(calls, 1u);  // the partial unit, through the cache
  sink.Flush();
  sink.Flush();
  EXPECT_EQ(g_pwrites.calls, calls);
  ASSERT_TRUE(sink.Write("x\n"));
  sink.Flush();
  EXPECT_EQ(g_pwrites.calls, calls + 1);
  EXPECT_EQ(SinkFileText(sink.path()), "{\"type\":\"META\"}\nx\n");
  sink.Close();
}

// The zstd stream decoded as far as it goes: after a Flush, everything given so far.
std::string DecodedPrefix(const std::string& z) {
  ZSTD_DStream* d = ZSTD_createDStream();
  ZSTD_initDStream(d);
  std::string out;
  std::vector<char> buf(1 << 16);
  ZSTD_inBuffer in{z.data(), z.size(), 0};
  while (in.pos < in.size) {
    ZSTD_outBuffer o{buf.data(), buf.size(), 0};
    if (ZSTD_isError(ZSTD_decompressStream(d, &o, &in))) break;
    out.append(buf.data(), o.pos);
  }
  for (;;) {  // output still held by the decoder
    ZSTD_outBuffer o{buf.data(), buf.size(), 0};
    if (ZSTD_isError(ZSTD_decompressStream(d, &o, &in)) || o.pos == 0) break;
    out.append(buf.data(), o.pos);
  }
  ZSTD_freeDStream(d);
  return out;
}

TEST(DumpSink, ZstdDecodesToEverythingGivenAfterEachFlush) {
  const SinkTestDir dir("zstd");
  DumpSink sink(dir.path, Compression::kZstd, 0640, [](const std::string&) {}, true);
  ASSERT_TRUE(sink.Open([](int) { return std::string("dump.jsonl.zst"); }));
  EXPECT_FALSE(sink.direct_io());
  EXPECT_STREQ(sink.io_mode(), "zstd");
  std::mt19937 rng(6);
  std::string expected;
  for (int i = 0; i < 60; ++i) {
    std::string text(1 + rng() % (i % 10 == 0 ? 3 * DumpSink::kBlock : 400), static_cast<char>('a' + i % 26));
    text.back() = '\n';
    if (text.size() <= DumpSink::kMaxRoom && i % 2) {
      char* room = sink.Room(text.size());
      ASSERT_NE(room, nullptr);
      std::memcpy(room, text.data(), text.size());
      sink.Advance(text.size());
    } else {
      ASSERT_TRUE(sink.Write(text));
    }
    expected += text;
    if (i % 5 == 4) {
      sink.Flush();
      ASSERT_EQ(DecodedPrefix(SinkFileText(sink.path())), expected) << "after flush " << i;
    }
  }
  sink.Close();
  const std::string z = SinkFileText(sink.path());
  EXPECT_EQ(DecodedPrefix(z), expected);
  EXPECT_EQ(sink.write_errors(), 0u);
}

// A device that refuses every direct write (EINVAL, as for an alignment it does not accept).
ssize_t RefuseDirectPWrite(int fd, const void* buf, size_t n, off_t off) {
  if (::fcntl(fd, F_GETFL) & O_DIRECT) {
    errno = EINVAL;
    return -1;
  }
  return ::pwrite(fd, buf, n, off);
}

// A direct sink whose pwrite is `hook`: WriteAndCheck loses nothing and leaves direct I/O off
// (STATS then says the page cache, and why). Returns the sink's slow direct writes and why
// direct I/O stopped, or -1 (skipped) where the folder takes no O_DIRECT.
std::pair<int64_t, std::string> FallsBackWithoutLoss(const std::string& name, DumpSink::PWrite hook, uint32_t seed) {
  const SinkTestDir dir(name);
  DumpSink sink(dir.path, Compression::kNone, 0640, [](const std::string&) {}, true);
  sink.set_pwrite(hook);
  EXPECT_TRUE(sink.Open([](int) { return std::string("dump.jsonl"); }));
  if (!sink.direct_io()) return {-1, ""};
  EXPECT_STREQ(sink.io_mode(), "direct");
  EXPECT_STREQ(sink.direct_stopped(), "");
  WriteAndCheck(sink, seed);
  EXPECT_FALSE(sink.direct_io());
  EXPECT_STREQ(sink.io_mode(), "page_cache");
  return {static_cast<int64_t>(sink.slow_direct_writes()), sink.direct_stopped()};
}

TEST(DumpSink, RefusedDirectWritesGoThroughTheCacheWithoutLoss) {
  const auto [slow, why] = FallsBackWithoutLoss("refused", RefuseDirectPWrite, 3);
  if (slow < 0) GTEST_SKIP() << "the build folder does not take O_DIRECT: nothing to refuse";
  EXPECT_EQ(slow, 0);  // refused, not slow
  EXPECT_EQ(why, "refused");
}

// A disk busy with other writers: each direct write takes longer than the sink accepts.
ssize_t SlowDirectPWrite(int fd, const void* buf, size_t n, off_t off) {
  if (::fcntl(fd, F_GETFL) & O_DIRECT) {
    const timespec pause{0, DumpSink::kSlowDirectWriteNs + 5000000};
    ::nanosleep(&pause, nullptr);
  }
  return ::pwrite(fd, buf, n, off);
}

TEST(DumpSink, ASlowDiskTurnsDirectWritesOffWithoutLoss) {
  const auto [slow, why] = FallsBackWithoutLoss("slow", SlowDirectPWrite, 5);
  if (slow < 0) GTEST_SKIP() << "the build folder does not take O_DIRECT: nothing to slow down";
  EXPECT_EQ(slow, 1);  // one slow write, then the page cache
  EXPECT_EQ(why, "slow_write");
}

size_t g_failing_calls = 0;
ssize_t FailingPWrite(int, const void*, size_t, off_t) {
  ++g_failing_calls;
  errno = EIO;
  return -1;
}

TEST(DumpSink, AFailingDiskIsCountedOnceLoggedAndNotRetried) {
  const SinkTestDir tmp("eio");
  const std::string& dir = tmp.path;
  std::vector<std::string> logs;
  DumpSink sink(dir, Compression::kNone, 0640, [&](const std::string& m) { logs.push_back(m); }, true);
  sink.set_pwrite(FailingPWrite);
  g_failing_calls = 0;
  ASSERT_TRUE(sink.Open([](int) { return std::string("dump.jsonl"); }));
  if (!sink.direct_io()) GTEST_SKIP() << dir << " does not take O_DIRECT: pwrite is not used";
  ASSERT_TRUE(sink.Write(std::string(DumpSink::kBlock, 'x')));  // fills the block, not yet written
  EXPECT_FALSE(sink.Write("more\n"));                            // the full block fails to go out
  EXPECT_FALSE(sink.Write("and more\n"));
  EXPECT_EQ(sink.Room(10), nullptr);
  sink.Flush();
  sink.Close();
  EXPECT_EQ(sink.write_errors(), 2u);  // the failed write, then the text given after it
  EXPECT_EQ(g_failing_calls, 1u);      // never retried, not even at the flush or the close
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find("dump.jsonl"), std::string::npos) << logs[0];
  EXPECT_NE(logs[0].find(std::strerror(EIO)), std::string::npos) << logs[0];
}

TEST(DumpSink, TmpfsStaysOnThePageCache) {
  struct statfs f;
  if (::statfs("/dev/shm", &f) != 0 || f.f_type != TMPFS_MAGIC) GTEST_SKIP() << "no tmpfs at /dev/shm";
  const SinkTestDir dir("tmpfs", "/dev/shm");
  DumpSink sink(dir.path, Compression::kNone, 0640, [](const std::string&) {}, true);
  ASSERT_TRUE(sink.Open([](int) { return std::string("dump.jsonl"); }));
  EXPECT_FALSE(sink.direct_io());
  EXPECT_STREQ(sink.io_mode(), "page_cache");
  EXPECT_STREQ(sink.direct_stopped(), "");  // never on: nothing stopped
  WriteAndCheck(sink, 4);
}

}  // namespace
}  // namespace truffld::inject
