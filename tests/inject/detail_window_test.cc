// Integration: requested device windows through the real injector (NVTX injection, no GPU).
// programs/detail_app.cc runs steps and queries truffld_detail_window() as truffld's Python
// hooks do; the dump's DEVICE_WINDOW records must show a planted slow step opening a window at
// the next step, the control file opening one on a running process, and the exported state
// agreeing with the records at every step.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "inject_test_util.h"

namespace truffld::inject::testing {
namespace {

struct AppStep {  // one "step I PHASE in=A out=B gen=G" line of detail_app
  std::string phase;
  int in = -2, out = -2;
  unsigned long long gen = 0;
};

std::vector<AppStep> ParseSteps(const std::string& out) {
  std::vector<AppStep> v;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    AppStep s;
    char phase[32];
    int index = 0;
    if (std::sscanf(line.c_str(), "step %d %31s in=%d out=%d gen=%llu", &index, phase, &s.in, &s.out, &s.gen) == 5) {
      s.phase = phase;
      v.push_back(s);
    }
  }
  return v;
}

struct Window {
  int64_t start = -1, end = INT64_MAX;
  std::string start_trigger, end_trigger;
};

struct Trace {
  std::vector<std::pair<int64_t, int64_t>> steps;  // [push, pop] of each step range
  std::vector<Window> windows;                     // by id
};

Trace ReadTrace(const Dump& d) {
  Trace t;
  std::map<uint64_t, Window> by_id;
  int depth = 0;
  int64_t push = 0;
  for (const auto& r : d.records) {
    const std::string type = r["type"];
    if (type == "DEVICE_WINDOW") {
      Window& w = by_id[r["id"].get<uint64_t>()];
      const bool start = r["edge"] == "start";
      (start ? w.start : w.end) = r["timestamp"].get<int64_t>();
      (start ? w.start_trigger : w.end_trigger) = r.value("trigger", "");
    } else if (type == "NVTX_PUSH") {
      if (depth++ == 0) push = r["timestamp"].get<int64_t>();
    } else if (type == "NVTX_POP" && --depth == 0) {
      t.steps.emplace_back(push, r["timestamp"].get<int64_t>());
    }
  }
  for (const auto& [id, w] : by_id) t.windows.push_back(w);
  return t;
}

// Index of the window holding step i wholly, or -1.
int WindowOf(const Trace& t, size_t i) {
  for (size_t k = 0; k < t.windows.size(); ++k)
    if (t.windows[k].start <= t.steps[i].first && t.steps[i].second <= t.windows[k].end) return static_cast<int>(k);
  return -1;
}

// truffld_detail_window() after each push reads 1 exactly for the steps inside a window, after
// each pop 1 exactly when the window stays open into the next step, and the generation counts
// the windows started so far.
void ExpectStateMatchesRecords(const std::vector<AppStep>& app, const Trace& t) {
  ASSERT_EQ(app.size(), t.steps.size());
  for (size_t i = 0; i < app.size(); ++i) {
    EXPECT_EQ(app[i].in, WindowOf(t, i) >= 0 ? 1 : 0) << "after the push of step " << i;
    unsigned long long started = 0;
    for (const Window& w : t.windows) started += w.start <= t.steps[i].second;
    EXPECT_EQ(app[i].gen, started) << "generation after step " << i;
    if (i + 1 < app.size()) {
      const bool stays = WindowOf(t, i) >= 0 && WindowOf(t, i) == WindowOf(t, i + 1);
      EXPECT_EQ(app[i].out, stays ? 1 : 0) << "after the pop of step " << i;
    }
  }
}

std::vector<std::string> Env(const TempDir& dir, std::vector<std::string> more) {
  auto env = InjectEnv(dir.path());
  env.insert(env.end(), more.begin(), more.end());
  return env;
}

TEST(DetailWindow, APlantedSlowStepOpensAWindowAtTheNextStep) {
  TempDir dir;
  // F = 10 rather than 3 keeps a loaded test machine's late wake-ups (a 5 ms step lasting over
  // 15 ms, common under ThreadSanitizer) from opening windows of their own; the planted step
  // is 30x the others.
  Exit e = RunProgram({AppPath("truffld_detail_app"), "slowstep"},
                      Env(dir, {"TRUFFLD_DEVICE_WINDOWS=requested", "TRUFFLD_WINDOW_SLOW=10",
                                "TRUFFLD_WINDOW_STEPS=3"}));
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(e.err, "");
  auto dumps = ReadDumps(dir.path());
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(ValidateAgainstSchema(dumps), "");
  const auto& config = dumps[0].records.front()["config"];
  EXPECT_EQ(config["device_windows"], "requested");
  EXPECT_EQ(config["window_slow"], "10");
  EXPECT_EQ(config["window_steps"], "3");
  const std::vector<AppStep> app = ParseSteps(e.out);
  const Trace t = ReadTrace(dumps[0]);
  ASSERT_EQ(app.size(), 19u);
  ASSERT_EQ(t.steps.size(), 19u);
  ASSERT_GE(t.windows.size(), 1u) << "the slow step (12) opened no window";
  const Window& w = t.windows[0];
  EXPECT_EQ(w.start_trigger, "slow_step");
  EXPECT_EQ(w.end_trigger, "slow_step");
  // No window before the slow step (prefill steps are 6x the decode steps, but phases are
  // judged apart); the window holds steps 13-15, opening between the slow step and the next.
  for (size_t i = 0; i <= 12; ++i) EXPECT_EQ(WindowOf(t, i), -1) << "step " << i;
  EXPECT_GT(w.start, t.steps[12].second);
  for (size_t i = 13; i <= 15; ++i) EXPECT_EQ(WindowOf(t, i), 0) << "step " << i;
  EXPECT_LT(w.end, t.steps[16].first);
  ExpectStateMatchesRecords(app, t);
  EXPECT_EQ(app[13].in, 1);
  EXPECT_EQ(app[15].out, 0);
  EXPECT_EQ(app[15].gen, 1u);
  EXPECT_NE(e.out.find("monotonic=1"), std::string::npos) << "a polling thread saw the generation go back";
}

// A collective far slower than the recent ones of its name (the step around it is not slower)
// opens a window at the next step, trigger slow_collective. F = 6: the planted collective (55 ms)
// stays over 6x the others' median even when a loaded machine stretches their 2 ms sleeps to
// 9 ms, and a late wake-up must add 10 ms to a 2 ms collective to look slow.
TEST(DetailWindow, APlantedSlowCollectiveOpensAWindowAtTheNextStep) {
  TempDir dir;
  Exit e = RunProgram({AppPath("truffld_detail_app"), "slowcomm"},
                      Env(dir, {"TRUFFLD_DEVICE_WINDOWS=requested", "TRUFFLD_WINDOW_SLOW=6",
                                "TRUFFLD_WINDOW_STEPS=2"}));
  ASSERT_EQ(e.code, 0) << e.err;
  auto dumps = ReadDumps(dir.path());
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(ValidateAgainstSchema(dumps), "");
  const Trace t = ReadTrace(dumps[0]);
  ASSERT_EQ(t.steps.size(), 16u);
  ASSERT_GE(t.windows.size(), 1u) << "the slow collective (step 12) opened no window";
  const Window& w = t.windows[0];
  EXPECT_EQ(w.start_trigger, "slow_collective");
  for (size_t i = 0; i <= 12; ++i) EXPECT_EQ(WindowOf(t, i), -1) << "step " << i;
  for (size_t i = 13; i <= 14; ++i) EXPECT_EQ(WindowOf(t, i), 0) << "step " << i;
  EXPECT_EQ(WindowOf(t, 15), -1);
}

TEST(DetailWindow, AllReadsMinusOneAndOffReadsZero) {
  for (const std::string mode : {"all", "off"}) {
    TempDir dir;
    Exit e = RunProgram({AppPath("truffld_detail_app"), "slowstep"},
                        Env(dir, {"TRUFFLD_DEVICE_WINDOWS=" + mode}));
    ASSERT_EQ(e.code, 0) << e.err;
    const std::vector<AppStep> app = ParseSteps(e.out);
    ASSERT_EQ(app.size(), 19u);
    const int want = mode == "all" ? -1 : 0;
    for (const AppStep& s : app) {
      EXPECT_EQ(s.in, want) << mode;
      EXPECT_EQ(s.out, want) << mode;
      EXPECT_EQ(s.gen, 0u) << mode;
    }
    auto dumps = ReadDumps(dir.path());
    ASSERT_EQ(dumps.size(), 1u);
    EXPECT_TRUE(OfType(dumps[0], "DEVICE_WINDOW").empty()) << mode;
  }
}

int64_t NowRaw() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

TEST(DetailWindow, TouchingTheControlFileOpensAWindow) {
  TempDir dir;
  const std::string control = dir.path() + "/truffld.detail";
  {  // a file left from an earlier run asks for nothing
    const int fd = ::open(control.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
    ASSERT_GE(fd, 0);
    ::close(fd);
    const timespec old[2] = {{1000000, 0}, {1000000, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, control.c_str(), old, 0), 0);
  }
  Child c = Spawn({AppPath("truffld_detail_app"), "ondemand", "4"},
                  Env(dir, {"TRUFFLD_DEVICE_WINDOWS=requested", "TRUFFLD_WINDOW_SLOW=0",
                            "TRUFFLD_WINDOW_STEPS=3", "TRUFFLD_FLUSH_MS=10"}));
  ASSERT_GT(c.pid, 0);
  std::string out, line;
  while (!(line = ReadLine(c)).empty() && line != "ready\n") out += line;
  ASSERT_EQ(line, "ready\n") << out;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // past a few writer wake-ups
  const int64_t touched = NowRaw();
  ASSERT_EQ(::utimensat(AT_FDCWD, control.c_str(), nullptr, 0), 0);  // touch
  while (!(line = ReadLine(c)).empty()) out += line;
  Exit e = Wait(c);
  ASSERT_EQ(e.code, 0) << e.err;
  auto dumps = ReadDumps(dir.path());
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(ValidateAgainstSchema(dumps), "");
  EXPECT_EQ(dumps[0].records.front()["config"]["window_control"], control);
  const std::vector<AppStep> app = ParseSteps(out);
  const Trace t = ReadTrace(dumps[0]);
  ASSERT_EQ(t.windows.size(), 1u);
  const Window& w = t.windows[0];
  EXPECT_EQ(w.start_trigger, "request");
  EXPECT_EQ(w.end_trigger, "request");
  EXPECT_GT(w.start, touched) << "the leftover file opened a window";
  ASSERT_GE(app.size(), 9u);
  const size_t first = app.size() - 5;  // the loop stops at the window's first step; 4 follow
  EXPECT_EQ(app[first - 1].in, 0);
  for (size_t i = first - 1; i < first + 3; ++i) EXPECT_EQ(WindowOf(t, i), i == first - 1 ? -1 : 0) << "step " << i;
  EXPECT_EQ(WindowOf(t, first + 3), -1);
  ExpectStateMatchesRecords(app, t);
  struct stat st;
  ASSERT_EQ(::stat(control.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 0) << "the injector never writes the control file";
}

}  // namespace
}  // namespace truffld::inject::testing
