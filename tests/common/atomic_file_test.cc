// AtomicFile / OutputSet / RemoveStaleOutput on real files: nothing is written through a planted
// symlink, a file appears under its final name only when committed, and failures clean up.
#include "truffld/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_files.h"

namespace truffld {
namespace {

namespace fs = std::filesystem;
using AtomicFileTest = testing::TempDirTest;

std::string Read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> Names(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST_F(AtomicFileTest, CommitReplacesAPlantedSymlinkInsteadOfWritingItsTarget) {
  const std::string target = Write("target.txt", "precious");
  fs::create_symlink(target, dir_ / "out.json");
  ASSERT_TRUE(WriteFileAtomically((dir_ / "out.json").string(), "new text").ok());
  EXPECT_EQ(Read(target), "precious");
  EXPECT_FALSE(fs::is_symlink(dir_ / "out.json"));
  EXPECT_EQ(Read(dir_ / "out.json"), "new text");
  struct stat st;
  ASSERT_EQ(::stat((dir_ / "out.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777 & ~0640, 0u);
}

TEST_F(AtomicFileTest, NothingUnderTheFinalNameUntilCommitAndNothingLeftWithout) {
  Write("out.json", "old");
  {
    auto f = AtomicFile::Create((dir_ / "out.json").string());
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    ASSERT_TRUE(f->Write("half of the new").ok());
    EXPECT_EQ(Read(dir_ / "out.json"), "old");
    EXPECT_EQ(Names(dir_).size(), 2u);  // out.json and the temporary file
  }  // destroyed without Commit
  EXPECT_EQ(Names(dir_), std::vector<std::string>{"out.json"});
  EXPECT_EQ(Read(dir_ / "out.json"), "old");
}

TEST_F(AtomicFileTest, FdPathReachesTheTemporaryFileForPathOnlyWriters) {
  auto f = AtomicFile::Create((dir_ / "x.jsonl").string());
  ASSERT_TRUE(f.ok());
  { std::ofstream(f->fd_path(), std::ios::binary | std::ios::trunc) << "via path"; }
  ASSERT_TRUE(f->Commit().ok());
  EXPECT_EQ(Read(dir_ / "x.jsonl"), "via path");
}

TEST_F(AtomicFileTest, CreateFailsNamingTheFileWhenTheFolderIsMissing) {
  auto f = AtomicFile::Create((dir_ / "missing" / "x.json").string());
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("x.json"), std::string::npos) << f.status().ToString();
}

TEST_F(AtomicFileTest, OutputSetCommitsTogetherAndRemovesStaleOutputs) {
  Write("report.html", "old report");
  const std::string target = Write("target.txt", "precious");
  fs::create_symlink(target, dir_ / "metrics.json");
  {
    OutputSet out;
    ASSERT_TRUE(out.Add((dir_ / "a.json").string(), "A").ok());
    out.RemoveAtCommit((dir_ / "report.html").string());
    out.RemoveAtCommit((dir_ / "metrics.json").string());
    out.RemoveAtCommit((dir_ / "never-there.json").string());
    // A failing writer: the set is abandoned, nothing changes.
    const Status failed = out.AddWith((dir_ / "b.json").string(), [](const std::string& p) { return IoError(p + ": disk full"); });
    EXPECT_FALSE(failed.ok());
    // The writer only saw /proc/self/fd/N; the error names the file the user asked for.
    EXPECT_EQ(failed.message(), (dir_ / "b.json").string() + ": disk full");
  }
  EXPECT_EQ(Names(dir_), (std::vector<std::string>{"metrics.json", "report.html", "target.txt"}));
  OutputSet out;
  ASSERT_TRUE(out.Add((dir_ / "a.json").string(), "A").ok());
  ASSERT_TRUE(out.AddWith((dir_ / "b.json").string(), [](const std::string& p) {
    std::ofstream(p) << "B";
    return Status::Ok();
  }).ok());
  out.RemoveAtCommit((dir_ / "report.html").string());
  out.RemoveAtCommit((dir_ / "metrics.json").string());
  ASSERT_TRUE(out.Commit().ok());
  EXPECT_EQ(Names(dir_), (std::vector<std::string>{"a.json", "b.json", "target.txt"}));
  EXPECT_EQ(Read(target), "precious");  // the link was removed, not its target
  EXPECT_EQ(Read(dir_ / "b.json"), "B");
}

TEST_F(AtomicFileTest, OutputSetWritesADeviceInPlace) {
  OutputSet out;
  std::string seen;
  ASSERT_TRUE(out.AddWith("/dev/null", [&](const std::string& p) {
    seen = p;
    return Status::Ok();
  }).ok());
  EXPECT_EQ(seen, "/dev/null");
  ASSERT_TRUE(out.Commit().ok());
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST_F(AtomicFileTest, RemoveStaleOutputRefusesADirectory) {
  fs::create_directories(dir_ / "trace.json");
  bool removed = true;
  EXPECT_FALSE(RemoveStaleOutput((dir_ / "trace.json").string(), &removed).ok());
  EXPECT_TRUE(fs::is_directory(dir_ / "trace.json"));
  EXPECT_TRUE(RemoveStaleOutput((dir_ / "none.json").string(), &removed).ok());
  EXPECT_FALSE(removed);
}

}  // namespace
}  // namespace truffld
