// A scratch output file for the merge unit tests that write real files (direct
// I/O): the fixture, reading it back, and how much of it the page cache holds.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#if defined(__linux__)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace truffld::merge::testing {

// A file in the working directory, named after the test suite and the process (ctest runs in
// the build tree, on disk; /tmp may be a tmpfs, which keeps every page and refuses direct I/O).
// Removed after each test.
class ScratchFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string suite = ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name();
    path_ = std::filesystem::current_path() / (suite + "_" + std::to_string(::getpid()) + ".out");
  }
  void TearDown() override { std::filesystem::remove(path_); }

  std::string ReadBack() const {
    std::ifstream in(path_, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  std::filesystem::path path_;
};

#if defined(__linux__)
// How many of the pages holding the first `bytes` of `path` (whose length is `size`) are in
// the page cache (mincore), or -1 when the file cannot be mapped.
inline long CachedPages(const std::filesystem::path& path, size_t size, size_t bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return -1;
  void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    ::close(fd);
    return -1;
  }
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident((size + page - 1) / page);
  long cached = -1;
  if (mincore(map, size, resident.data()) == 0) {
    cached = 0;
    for (size_t i = 0; i < bytes / page; ++i) cached += resident[i] & 1;
  }
  munmap(map, size);
  ::close(fd);
  return cached;
}
#endif

}  // namespace truffld::merge::testing
