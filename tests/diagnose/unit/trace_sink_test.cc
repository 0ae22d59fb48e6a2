// TraceSink: the file holds exactly the bytes put, whether they went out with direct I/O (a
// regular file on a disk file system) or through the ofstream (a FIFO is no regular file).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

#include "report/trace_sink.h"

namespace truffld::diagnose {
namespace {

namespace fs = std::filesystem;

// About 2.5 MiB of event-like lines: more than the ring's blocks, and an unaligned end.
std::string Lines() {
  std::string s;
  for (int i = 0; s.size() < (size_t{5} << 19) + 77; ++i)
    s += "{\"ph\":\"X\",\"name\":\"op" + std::to_string(i) + "\",\"ts\":" + std::to_string(i * 7) + ".125},\n";
  return s;
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class TraceSinkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("trace_sink_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Puts `text` in pieces of one line, as AnnotateTrace does.
  static Status PutAll(TraceSink* sink, const std::string& text) {
    for (size_t at = 0; at < text.size();) {
      const size_t end = text.find('\n', at);
      const size_t next = end == std::string::npos ? text.size() : end + 1;
      sink->Put(std::string_view(text).substr(at, next - at));
      at = next;
    }
    return sink->Finish();
  }
  fs::path dir_;
};

TEST_F(TraceSinkTest, RegularFileHoldsExactlyTheBytesPut) {
  const std::string want = Lines(), path = (dir_ / "out.json").string();
  std::ofstream(path) << "an earlier, longer run's file that must not show through" << std::string(size_t{4} << 20, 'x');
  auto sink = TraceSink::Open(path);
  ASSERT_TRUE(sink.ok()) << sink.status().message();
  ASSERT_TRUE(PutAll(sink->get(), want).ok());
  EXPECT_EQ(Slurp(path), want);
}

TEST_F(TraceSinkTest, FifoGoesThroughTheStreamAndLosesNothing) {
  const std::string want = Lines(), path = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  std::string got;
  std::thread reader([&] { got = Slurp(path); });
  auto sink = TraceSink::Open(path);
  if (!sink.ok()) std::ofstream{path};  // lets the reader finish before the test fails
  if (sink.ok()) {
    EXPECT_FALSE((*sink)->direct());
    EXPECT_TRUE(PutAll(sink->get(), want).ok());
    sink->reset();
  }
  reader.join();
  ASSERT_TRUE(sink.ok()) << sink.status().message();
  EXPECT_EQ(got, want);
}

TEST_F(TraceSinkTest, UncreatableFileIsNamed) {
  const std::string path = (dir_ / "missing" / "out.json").string();
  auto sink = TraceSink::Open(path);
  ASSERT_FALSE(sink.ok());
  EXPECT_NE(sink.status().message().find(path), std::string::npos) << sink.status().message();
}

}  // namespace
}  // namespace truffld::diagnose
