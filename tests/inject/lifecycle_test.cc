// Integration: process lifecycle under injection (no GPU needed). Each test runs nvtx_app in a
// mode of programs/nvtx_app.cc and checks the dump(s) it leaves and that the application itself
// behaved exactly as it would without truffld.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <thread>

#include "inject_test_util.h"

namespace truffld::inject::testing {
namespace {

using nlohmann::json;

uint64_t Count(const Dump& d, const std::string& type) { return OfType(d, type).size(); }

const json* Stats(const Dump& d) {
  return !d.records.empty() && d.records.back()["type"] == "STATS" ? &d.records.back() : nullptr;
}

TEST(Lifecycle, SigtermRunsTheApplicationHandlerAndKeepsTheTrace) {
  TempDir dir;
  Child c = Spawn({AppPath("truffld_nvtx_app"), "sigterm", "1"}, InjectEnv(dir.path()));
  ASSERT_EQ(ReadLine(c), "ready\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::kill(c.pid, SIGTERM);
  Exit e = Wait(c);
  EXPECT_EQ(e.code, 0) << e.err;  // the app's handler let main return normally
  EXPECT_NE(e.out.find("app handler ran"), std::string::npos);
  auto dumps = ReadDumps(dir.path());
  ASSERT_EQ(dumps.size(), 1u);
  ASSERT_NE(Stats(dumps[0]), nullptr);
  EXPECT_EQ(Count(dumps[0], "NVTX_MARK"), 2u);  // "started" and "after handler"
  EXPECT_EQ(Count(dumps[0], "NVTX_PUSH"), Count(dumps[0], "NVTX_POP"));
  EXPECT_EQ(ValidateAgainstSchema(dumps), "");
}

TEST(Lifecycle, SigtermWithDefaultActionStillDiesButFinishesTheFile) {
  TempDir dir;
  Child c = Spawn({AppPath("truffld_nvtx_app"), "sigterm", "0"}, InjectEnv(dir.path()));
  ASSERT_EQ(ReadLine(c), "ready\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::kill(c.pid, SIGTERM);
  Exit e = Wait(c);
  EXPECT_EQ(e.signal, SIGTERM);  // unchanged application behaviour
  auto dumps = ReadDumps(dir.path());
  ASSERT_EQ(dumps.size(), 1u);
  ASSERT_NE(Stats(dumps[0]), nullptr) << "the final flush runs before the default action";
  EXPECT_EQ(Count(dumps[0], "NVTX_MARK"), 1u);
  EXPECT_GT(Count(dumps[0], "NVTX_PUSH"), 0u);
}

TEST(Lifecycle, ForkGivesTheChildItsOwnFile) {
  TempDir dir;
  Exit e = RunProgram({AppPath("truffld_nvtx_app"), "fork"}, InjectEnv(dir.path()));
  ASSERT_EQ(e.code, 0) << e.err;
  auto dumps = ReadDumps(dir.path());
  ASSERT_EQ(dumps.size(), 2u);
  EXPECT_EQ(ValidateAgainstSchema(dumps), "");
  std::set<std::string> names[2];
  int64_t pids[2];
  for (int i = 0; i < 2; ++i) {
    pids[i] = dumps[i].records.front()["process_id"];
    for (const auto& m : OfType(dumps[i], "NVTX_MARK")) {
      names[i].insert(m["name"].get<std::string>());
      EXPECT_EQ(m["process_id"], pids[i]);
    }
    EXPECT_NE(Stats(dumps[i]), nullptr) << dumps[i].path;
  }
  EXPECT_NE(pids[0], pids[1]);
  const std::set<std::string> parent = {"parent before fork", "parent after fork"};
  const std::set<std::string> child = {"in child"};
  EXPECT_TRUE((names[0] == parent && names[1] == child) || (names[0] == child && names[1] == parent))
      << "each process writes only its own events";
}

TEST(Lifecycle, ExitWithoutExplicitFlushWritesEverything) {
  TempDir dir;
  // 3000 pairs = 6000 records fit the default 1 MiB ring (16,384 plain pairs): nothing may be lost.
  Exit e = RunProgram({AppPath("truffld_nvtx_app"), "noflush", "3000"}, InjectEnv(dir.path()));
  ASSERT_EQ(e.code, 0) << e.err;
  auto dumps = ReadDumps(dir.path());
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(Count(dumps[0], "NVTX_PUSH"), 3000u);
  EXPECT_EQ(Count(dumps[0], "NVTX_POP"), 3000u);
  ASSERT_NE(Stats(dumps[0]), nullptr);
  EXPECT_EQ((*Stats(dumps[0]))["records_written"]["NVTX_PUSH"], 3000);
  EXPECT_EQ((*Stats(dumps[0]))["records_dropped"]["NVTX_PUSH"], 0);
}

TEST(Lifecycle, ExecStartsASecondFileForTheSamePid) {
  TempDir dir;
  auto env = InjectEnv(dir.path());
  env.push_back("TRUFFLD_FLUSH_MS=50");
  Exit e = RunProgram({AppPath("truffld_nvtx_app"), "exec", "500"}, env);
  ASSERT_EQ(e.code, 0) << e.err;
  auto dumps = ReadDumps(dir.path());
  ASSERT_EQ(dumps.size(), 2u);
  std::sort(dumps.begin(), dumps.end(), [](const Dump& a, const Dump& b) { return a.path.size() < b.path.size(); });
  EXPECT_NE(dumps[1].path.find(".1.jsonl"), std::string::npos) << "O_EXCL: the new image does not clobber";
  EXPECT_EQ(dumps[0].records.front()["process_id"], dumps[1].records.front()["process_id"]);
  // Before exec: the mark reached the file through the periodic flush (exec runs no atexit).
  ASSERT_EQ(OfType(dumps[0], "NVTX_MARK").size(), 1u);
  EXPECT_EQ(Stats(dumps[0]), nullptr);
  EXPECT_EQ(Count(dumps[1], "NVTX_PUSH"), 10u);
  EXPECT_NE(Stats(dumps[1]), nullptr);
}

TEST(Lifecycle, SigkillLosesAtMostTheFlushWindow) {
  TempDir dir;
  auto env = InjectEnv(dir.path());
  env.push_back("TRUFFLD_FLUSH_MS=100");
  Child c = Spawn({AppPath("truffld_nvtx_app"), "sigkill", "3000"}, env);
  ASSERT_EQ(ReadLine(c), "ready\n");
  // Everything emitted before "ready" is at most one flush period (plus scheduling slack) old
  // by the time we kill.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  ::kill(c.pid, SIGKILL);
  Exit e = Wait(c);
  EXPECT_EQ(e.signal, SIGKILL);
  auto dumps = ReadDumps(dir.path());
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(Count(dumps[0], "NVTX_PUSH"), 3000u);
  EXPECT_EQ(Count(dumps[0], "NVTX_POP"), 3000u);
  EXPECT_EQ(Stats(dumps[0]), nullptr) << "a killed process writes no STATS";
  EXPECT_EQ(ValidateAgainstSchema(dumps), "");
}

TEST(Lifecycle, SigkillWithZstdLeavesADecodablePrefix) {
  TempDir dir;
  auto env = InjectEnv(dir.path());
  env.push_back("TRUFFLD_FLUSH_MS=100");
  env.push_back("TRUFFLD_COMPRESS=zstd");
  Child c = Spawn({AppPath("truffld_nvtx_app"), "sigkill", "2000"}, env);
  ASSERT_EQ(ReadLine(c), "ready\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  ::kill(c.pid, SIGKILL);
  Wait(c);
  auto dumps = ReadDumps(dir.path());
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_NE(dumps[0].path.find(".jsonl.zst"), std::string::npos);
  EXPECT_EQ(Count(dumps[0], "NVTX_PUSH"), 2000u) << "every flushed zstd block decodes without the frame end";
}

TEST(Lifecycle, DisabledLibraryWritesNothing) {
  TempDir dir;
  auto env = InjectEnv(dir.path());
  env.push_back("TRUFFLD_DISABLE=1");
  Exit e = RunProgram({AppPath("truffld_nvtx_app"), "basic"}, env);
  EXPECT_EQ(e.code, 0);
  EXPECT_EQ(e.err, "");
  EXPECT_TRUE(ReadDumps(dir.path()).empty());
}

TEST(Lifecycle, UnwritableDirectoryWarnsOnceAndTheAppIsUnaffected) {
  auto env = InjectEnv("/proc/self/truffld-cannot-be-here");
  Exit e = RunProgram({AppPath("truffld_nvtx_app"), "noflush", "2000"}, env);
  EXPECT_EQ(e.code, 0);
  size_t lines = 0;
  for (size_t p = 0; (p = e.err.find("truffld:", p)) != std::string::npos; ++p) ++lines;
  EXPECT_EQ(lines, 1u) << e.err;
  EXPECT_NE(e.err.find("truffld-cannot-be-here"), std::string::npos) << e.err;
}

TEST(Lifecycle, FullDiskCountsWriteErrorsAndTheAppIsUnaffected) {
  TempDir dir;
  Exit e = RunProgram({AppPath("truffld_nvtx_app"), "fsize", "8192", "20000"}, InjectEnv(dir.path()));
  EXPECT_EQ(e.code, 0) << "RLIMIT_FSIZE must not kill the application (SIGXFSZ)";
  EXPECT_NE(e.out.find("still alive"), std::string::npos);
  size_t lines = 0;
  for (size_t p = 0; (p = e.err.find("truffld:", p)) != std::string::npos; ++p) ++lines;
  EXPECT_EQ(lines, 1u) << e.err;
  auto dumps = ReadDumps(dir.path());
  ASSERT_EQ(dumps.size(), 1u);
  struct stat st {};
  ASSERT_EQ(::stat(dumps[0].path.c_str(), &st), 0);
  EXPECT_LE(st.st_size, 8192);
}

TEST(Lifecycle, SixtyFourThreadsEveryEventWrittenOrCountedAsDropped) {
  TempDir dir;
  auto env = InjectEnv(dir.path());
  // Small rings and a slow flush so that some events really are dropped.
  env.push_back("TRUFFLD_THREAD_BUFFER_KB=16");
  env.push_back("TRUFFLD_FLUSH_MS=200");
  constexpr uint64_t kThreads = 64, kPairs = 2000;
  Exit e = RunProgram({AppPath("truffld_nvtx_app"), "threads", std::to_string(kThreads),
                       std::to_string(kPairs)}, env);
  ASSERT_EQ(e.code, 0) << e.err;
  auto dumps = ReadDumps(dir.path());
  ASSERT_EQ(dumps.size(), 1u);
  const json* s = Stats(dumps[0]);
  ASSERT_NE(s, nullptr);
  for (const char* kind : {"NVTX_PUSH", "NVTX_POP"}) {
    const uint64_t in_file = Count(dumps[0], kind);
    const uint64_t written = (*s)["records_written"][kind];
    const uint64_t dropped = (*s)["records_dropped"][kind];
    EXPECT_EQ(in_file, written) << kind;
    EXPECT_EQ(written + dropped, kThreads * kPairs) << kind;
  }
  std::set<uint64_t> tids;
  for (const auto& r : dumps[0].records) if (r.contains("thread_id")) tids.insert(r["thread_id"].get<uint64_t>());
  EXPECT_GE(tids.size(), 2u);
}

TEST(Lifecycle, FloodedRingsDropWholeRangesAndTheDumpStaysBalanced) {
  // 128-slot rings and a slow writer: most events are dropped. Whatever was dropped, every
  // thread's pushes and pops must pair up in the dump (never a pop before its push), every end
  // must have its start and every start its end, and STATS must count the whole ranges.
  TempDir dir;
  auto env = InjectEnv(dir.path());
  env.push_back("TRUFFLD_THREAD_BUFFER_KB=16");
  env.push_back("TRUFFLD_FLUSH_MS=100");
  constexpr uint64_t kThreads = 4, kIterations = 20000;
  Exit e = RunProgram({AppPath("truffld_nvtx_app"), "flood", std::to_string(kThreads),
                       std::to_string(kIterations)}, env);
  ASSERT_EQ(e.code, 0) << e.err;
  auto dumps = ReadDumps(dir.path());
  ASSERT_EQ(dumps.size(), 1u);
  const json* s = Stats(dumps[0]);
  ASSERT_NE(s, nullptr);
  std::map<uint64_t, int64_t> depth;  // per thread, in file order (each thread owns a ring)
  std::map<uint64_t, int> started, ended;
  uint64_t unbalanced_pops = 0;
  for (const auto& r : dumps[0].records) {
    const std::string type = r["type"];
    if (type == "NVTX_PUSH") ++depth[r["thread_id"].get<uint64_t>()];
    if (type == "NVTX_POP" && --depth[r["thread_id"].get<uint64_t>()] < 0) ++unbalanced_pops;
    if (type == "NVTX_START") ++started[r["id"].get<uint64_t>()];
    if (type == "NVTX_END") ++ended[r["id"].get<uint64_t>()];
  }
  EXPECT_EQ(unbalanced_pops, 0u) << "a pop before its push";
  for (const auto& [tid, d] : depth) EXPECT_EQ(d, 0) << "thread " << tid << " left pushes open";
  EXPECT_EQ(started, ended) << "every start has its end and every end its start";
  for (const auto& [id, n] : started) ASSERT_EQ(n, 1) << "range id " << id << " used twice";

  const json& dropped = (*s)["records_dropped"];
  const json& written = (*s)["records_written"];
  EXPECT_GT(dropped["NVTX_PUSH"].get<uint64_t>(), 0u) << "the flood must overflow the rings";
  EXPECT_GT(dropped["NVTX_START"].get<uint64_t>(), 0u);
  EXPECT_EQ(dropped["NVTX_PUSH"], dropped["NVTX_POP"]);
  EXPECT_EQ(dropped["NVTX_START"], dropped["NVTX_END"]);
  EXPECT_EQ((*s)["ranges_dropped"]["push_pop"], dropped["NVTX_PUSH"]);
  EXPECT_EQ((*s)["ranges_dropped"]["start_end"], dropped["NVTX_START"]);
  EXPECT_EQ((*s)["unbalanced_closes"], 0);
  for (const char* kind : {"NVTX_PUSH", "NVTX_POP"})
    EXPECT_EQ(written[kind].get<uint64_t>() + dropped[kind].get<uint64_t>(), 2 * kThreads * kIterations) << kind;
  for (const char* kind : {"NVTX_START", "NVTX_END", "NVTX_MARK"})
    EXPECT_EQ(written[kind].get<uint64_t>() + dropped[kind].get<uint64_t>(), kThreads * kIterations) << kind;
  EXPECT_EQ(ValidateAgainstSchema(dumps), "");
}

}  // namespace
}  // namespace truffld::inject::testing
