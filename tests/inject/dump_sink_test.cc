// DumpSink on a real file system: direct I/O and the page cache give the same bytes, every
// byte given is in the file after each Flush (what a killed process leaves), a device that
// refuses a direct write or a busy disk loses nothing, tmpfs stays on the page cache, and a
// failing disk is counted, not retried.
#include "dump_sink.h"

#include <fcntl.h>
#include <time.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace truffld::inject {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the test's working folder (the build tree: a disk, where O_DIRECT works).
std::string SinkTestDir(const std::string& name) {
  const fs::path d = fs::current_path() / ("dump_sink_test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d.string();
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
    }
  }
  sink.Close();
  EXPECT_EQ(SinkFileText(sink.path()), expected);
  EXPECT_EQ(sink.write_errors(), 0u);
}

TEST(DumpSink, DirectAndPageCacheGiveTheSameBytes) {
  for (bool direct : {true, false}) {
    const std::string dir = SinkTestDir(direct ? "direct" : "cached");
    std::vector<std::string> logs;
    DumpSink sink(dir, Compression::kNone, 0640, [&](const std::string& m) { logs.push_back(m); }, direct);
    ASSERT_TRUE(sink.Open([](int) { return std::string("dump.jsonl"); }));
    if (direct && DiskFileSystem(dir)) {
      EXPECT_TRUE(sink.direct_io()) << "ext4/xfs take O_DIRECT";
    } else if (!direct) {
      EXPECT_FALSE(sink.direct_io());
    }
    WriteAndCheck(sink, direct ? 1 : 2);
    EXPECT_TRUE(logs.empty());
    fs::remove_all(dir);
  }
}

// A device that refuses every direct write (EINVAL, as for an alignment it does not accept).
ssize_t RefuseDirectPWrite(int fd, const void* buf, size_t n, off_t off) {
  if (::fcntl(fd, F_GETFL) & O_DIRECT) {
    errno = EINVAL;
    return -1;
  }
  return ::pwrite(fd, buf, n, off);
}

TEST(DumpSink, RefusedDirectWritesGoThroughTheCacheWithoutLoss) {
  const std::string dir = SinkTestDir("refused");
  DumpSink sink(dir, Compression::kNone, 0640, [](const std::string&) {}, true);
  sink.set_pwrite(RefuseDirectPWrite);
  ASSERT_TRUE(sink.Open([](int) { return std::string("dump.jsonl"); }));
  if (!sink.direct_io()) GTEST_SKIP() << dir << " does not take O_DIRECT: nothing to refuse";
  WriteAndCheck(sink, 3);
  EXPECT_FALSE(sink.direct_io());
  fs::remove_all(dir);
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
  const std::string dir = SinkTestDir("slow");
  DumpSink sink(dir, Compression::kNone, 0640, [](const std::string&) {}, true);
  sink.set_pwrite(SlowDirectPWrite);
  ASSERT_TRUE(sink.Open([](int) { return std::string("dump.jsonl"); }));
  if (!sink.direct_io()) GTEST_SKIP() << dir << " does not take O_DIRECT: nothing to slow down";
  WriteAndCheck(sink, 5);
  EXPECT_FALSE(sink.direct_io());
  EXPECT_EQ(sink.slow_direct_writes(), 1u);  // one slow write, then the page cache
  fs::remove_all(dir);
}

ssize_t FailingPWrite(int, const void*, size_t, off_t) {
  errno = EIO;
  return -1;
}

TEST(DumpSink, AFailingDiskIsCountedOnceLoggedAndNotRetried) {
  const std::string dir = SinkTestDir("eio");
  std::vector<std::string> logs;
  DumpSink sink(dir, Compression::kNone, 0640, [&](const std::string& m) { logs.push_back(m); }, true);
  sink.set_pwrite(FailingPWrite);
  ASSERT_TRUE(sink.Open([](int) { return std::string("dump.jsonl"); }));
  if (!sink.direct_io()) GTEST_SKIP() << dir << " does not take O_DIRECT: pwrite is not used";
  ASSERT_TRUE(sink.Write(std::string(DumpSink::kBlock, 'x')));  // fills the block, not yet written
  EXPECT_FALSE(sink.Write("more\n"));                            // the full block fails to go out
  EXPECT_FALSE(sink.Write("and more\n"));
  EXPECT_EQ(sink.Room(10), nullptr);
  EXPECT_GE(sink.write_errors(), 2u);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find("dump.jsonl"), std::string::npos) << logs[0];
  EXPECT_NE(logs[0].find(std::strerror(EIO)), std::string::npos) << logs[0];
  sink.Close();
  fs::remove_all(dir);
}

TEST(DumpSink, TmpfsStaysOnThePageCache) {
  struct statfs f;
  if (::statfs("/dev/shm", &f) != 0 || f.f_type != TMPFS_MAGIC) GTEST_SKIP() << "no tmpfs at /dev/shm";
  const std::string dir = "/dev/shm/dump_sink_test-" + std::to_string(::getpid());
  fs::remove_all(dir);
  DumpSink sink(dir, Compression::kNone, 0640, [](const std::string&) {}, true);
  ASSERT_TRUE(sink.Open([](int) { return std::string("dump.jsonl"); }));
  EXPECT_FALSE(sink.direct_io());
  WriteAndCheck(sink, 4);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace truffld::inject
