// Integration: the real libcupti_injector.so runs InitializeInjection end to end on CPU against
// a CUPTI double (programs/cupti_double.cc) that replays a recorded session. The expectations
// below restate that session: API calls with correlation ids 1..11, graph 7 nodes 100/101
// created during capture and cloned into graph 8 as 200/201, activity for memcpy (corr 1),
// a kernel (corr 2), two graph-launched kernels (corr 7, nodes 200/201), a memset (corr 9), a
// stream synchronisation (corr 10), and five records CUPTI reports as dropped.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "inject_test_util.h"

namespace truffld::inject::testing {
namespace {

using nlohmann::json;

struct Replay {
  Exit exit;
  Dump dump;
  std::vector<Dump> all;
};

Replay Play(const std::string& scenario, const TempDir& dir) {
  auto env = InjectEnv(dir.path());
  env.push_back(std::string("TRUFFLD_CUPTI_LIBRARY=") + TRUFFLD_CUPTI_DOUBLE_PATH);
  Replay r;
  r.exit = RunProgram({AppPath("truffld_cupti_replay_app"), scenario}, env);
  r.all = ReadDumps(dir.path());
  if (r.all.size() == 1) r.dump = r.all[0];
  return r;
}

size_t Lines(const std::string& err) {
  size_t n = 0;
  for (size_t p = 0; (p = err.find("truffld:", p)) != std::string::npos; ++p) ++n;
  return n;
}

TEST(CuptiReplay, FlushPointsWriteDeviceActivityWhileTheProcessRuns) {
  // With a one-minute writer period, device activity can reach the file before exit only
  // through the flush that cudaDeviceReset / cuProfilerStop trigger; the app checks the file
  // before (nothing) and after (the kernel) the flush point.
  for (const char* scenario : {"flush_point_reset", "flush_point_profiler_stop"}) {
    TempDir dir;
    auto env = InjectEnv(dir.path());
    env.push_back(std::string("TRUFFLD_CUPTI_LIBRARY=") + TRUFFLD_CUPTI_DOUBLE_PATH);
    env.push_back("TRUFFLD_FLUSH_MS=60000");
    Exit e = RunProgram({AppPath("truffld_cupti_replay_app"), scenario}, env);
    EXPECT_EQ(e.code, 0) << scenario << ": " << e.out << e.err;
  }
}

TEST(CuptiReplay, MetaDescribesTheDevicesOfTheLoadedDriver) {
  // With libcuda in the process (a stand-in answering for two devices) META names the driver
  // version and each device with its name and UUID, as nvidia-smi spells it.
  TempDir dir;
  Replay r = Play("with_driver", dir);
  ASSERT_EQ(r.exit.code, 0) << r.exit.err;
  ASSERT_EQ(r.all.size(), 1u);
  EXPECT_EQ(ValidateAgainstSchema(r.all), "");
  auto meta = OfType(r.dump, "META");
  ASSERT_EQ(meta.size(), 1u);
  EXPECT_EQ(meta[0]["cuda_driver_version"], 13000);
  ASSERT_EQ(meta[0]["devices"].size(), 2u) << meta[0].dump();
  EXPECT_EQ(meta[0]["devices"][0]["name"], "Fake GPU \"zero\"");
  EXPECT_EQ(meta[0]["devices"][0]["uuid"], "GPU-ab010203-0405-0607-0809-0a0b0c0d0e0f");
  EXPECT_EQ(meta[0]["devices"][1]["id"], 1);
  EXPECT_EQ(meta[0]["devices"][1]["uuid"], "GPU-cd111213-1415-1617-1819-1a1b1c1d1e1f");
  EXPECT_FALSE(OfType(r.dump, "KERNEL").empty());  // the session itself is still recorded
}

TEST(CuptiReplay, NormalSessionIsRecordedCompletelyAndConsistently) {
  TempDir dir;
  Replay r = Play("normal", dir);
  ASSERT_EQ(r.exit.code, 0) << r.exit.err;
  ASSERT_EQ(r.all.size(), 1u);
  EXPECT_EQ(Lines(r.exit.err), 0u) << r.exit.err;
  EXPECT_EQ(ValidateAgainstSchema(r.all), "");
  const Dump& d = r.dump;

  std::map<uint64_t, json> runtime;  // by correlation id
  for (const auto& a : OfType(d, "RUNTIME")) runtime[a["correlation_id"].get<uint64_t>()] = a;
  EXPECT_EQ((std::set<uint64_t>{1, 2, 4, 5, 6, 7, 9, 11}),
            [&] { std::set<uint64_t> s; for (auto& [k, v] : runtime) s.insert(k); return s; }());
  EXPECT_EQ(runtime[1]["name"], "cudaMemcpy");
  EXPECT_EQ(runtime[1]["bytes"], 4096);
  EXPECT_EQ(runtime[1]["copy_kind"], "HtoD");
  EXPECT_EQ(runtime[1]["return_code"], 0);
  EXPECT_EQ(runtime[2]["stream"], 16);
  EXPECT_EQ(runtime[9]["bytes"], 512);
  for (auto& [corr, a] : runtime) EXPECT_LE(a["start"].get<int64_t>(), a["end"].get<int64_t>());

  // The essential API set: cudaGetDevice (21) and its nested cuCtxGetCurrent are not recorded;
  // the driver-launched kernel's cuLaunchKernelEx (22) is.
  auto drivers = OfType(d, "DRIVER");
  ASSERT_EQ(drivers.size(), 2u);
  EXPECT_EQ(drivers[1]["name"], "cuLaunchKernelEx");
  EXPECT_EQ(drivers[1]["correlation_id"], 22);
  EXPECT_EQ(drivers[0]["name"], "cuLaunchKernel");
  EXPECT_EQ(drivers[0]["correlation_id"], 3);
  // Nested inside its runtime call.
  EXPECT_GE(drivers[0]["start"].get<int64_t>(), runtime[2]["start"].get<int64_t>());
  EXPECT_LE(drivers[0]["end"].get<int64_t>(), runtime[2]["end"].get<int64_t>());

  std::map<uint64_t, json> nodes;
  for (const auto& g : OfType(d, "GRAPH_NODE")) nodes[g["graph_node_id"].get<uint64_t>()] = g;
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(nodes[100]["graph_id"], 7);
  EXPECT_EQ(nodes[100]["correlation_id"], 4);  // created inside capture-time launch 4
  EXPECT_EQ(nodes[101]["correlation_id"], 5);
  EXPECT_EQ(nodes[200]["graph_id"], 8);
  EXPECT_EQ(nodes[200]["original_graph_node_id"], 100);
  EXPECT_EQ(nodes[201]["original_graph_node_id"], 101);
  EXPECT_EQ(nodes[201]["correlation_id"], 6);

  auto kernels = OfType(d, "KERNEL");
  ASSERT_EQ(kernels.size(), 3u);
  for (const auto& k : kernels) {
    const uint64_t corr = k["correlation_id"];
    ASSERT_TRUE(runtime.count(corr)) << "kernel without its launching API call: " << k.dump();
    EXPECT_LE(runtime[corr]["start"].get<int64_t>(), k["gpu_start"].get<int64_t>());
    EXPECT_EQ(k["grid"], json::array({128, 1, 1}));
    EXPECT_EQ(k["block"], json::array({256, 1, 1}));
    EXPECT_EQ(k["registers"], 32);
    EXPECT_EQ(k["shared_memory"], 3072);
    if (k.contains("graph_node_id")) {
      // Graph kernel -> cloned node -> original node -> capture-time API call.
      const json& clone = nodes[k["graph_node_id"].get<uint64_t>()];
      const json& orig = nodes[clone["original_graph_node_id"].get<uint64_t>()];
      EXPECT_TRUE(runtime.count(orig["correlation_id"].get<uint64_t>()));
      EXPECT_EQ(k["correlation_id"], 7);
    }
  }
  auto memcpys = OfType(d, "MEMCPY");
  ASSERT_EQ(memcpys.size(), 1u);
  EXPECT_EQ(memcpys[0]["copy_kind"], "HtoD");
  EXPECT_EQ(memcpys[0]["src_kind"], "pageable");
  EXPECT_EQ(memcpys[0]["bytes"], 4096);
  ASSERT_EQ(OfType(d, "MEMSET").size(), 1u);
  auto syncs = OfType(d, "SYNC");
  ASSERT_EQ(syncs.size(), 1u);
  EXPECT_EQ(syncs[0]["sync_kind"], "stream_synchronize");

  // NVTX keeps flowing next to CUPTI, on the same clock.
  EXPECT_EQ(OfType(d, "NVTX_MARK").size(), 2u);
  const json& stats = d.records.back();
  ASSERT_EQ(stats["type"], "STATS");
  EXPECT_EQ(stats["cupti_dropped"], 5);
  EXPECT_EQ(stats["records_written"]["KERNEL"], 3);
  EXPECT_EQ(stats["records_written"]["RUNTIME"], 8);
  EXPECT_EQ(stats["cupti_status"], "ok");
  const json& meta = d.records.front();
  EXPECT_EQ(meta["cupti_version"], 130001);
  EXPECT_EQ(meta["config"]["cupti_api_set"], "tiered") << "without sampled windows: the essential set always";
  EXPECT_EQ(stats["api_unpaired"], 0);
}

TEST(CuptiReplay, AllApiCallsOnRequest) {
  TempDir dir;
  auto env = InjectEnv(dir.path());
  env.push_back(std::string("TRUFFLD_CUPTI_LIBRARY=") + TRUFFLD_CUPTI_DOUBLE_PATH);
  env.push_back("TRUFFLD_CUPTI_API_SET=all");
  Exit e = RunProgram({AppPath("truffld_cupti_replay_app"), "normal"}, env);
  ASSERT_EQ(e.code, 0) << e.err;
  auto all = ReadDumps(dir.path());
  ASSERT_EQ(all.size(), 1u);
  std::set<std::string> names;
  for (const auto& r : all[0].records)
    if (r["type"] == "RUNTIME" || r["type"] == "DRIVER") names.insert(r["name"].get<std::string>());
  EXPECT_TRUE(names.count("cudaGetDevice"));
  EXPECT_TRUE(names.count("cuCtxGetCurrent"));
  EXPECT_TRUE(names.count("cuLaunchKernelEx"));
  EXPECT_EQ(all[0].records.front()["config"]["cupti_api_set"], "all");
}

TEST(CuptiReplay, SubscriberConflictKeepsActivityAndNvtx) {
  TempDir dir;
  Replay r = Play("multiple_subscribers", dir);
  ASSERT_EQ(r.exit.code, 0) << r.exit.err;
  ASSERT_EQ(r.all.size(), 1u);
  EXPECT_EQ(Lines(r.exit.err), 1u) << r.exit.err;
  EXPECT_NE(r.exit.err.find("another CUPTI subscriber"), std::string::npos);
  EXPECT_TRUE(OfType(r.dump, "RUNTIME").empty());
  EXPECT_EQ(OfType(r.dump, "KERNEL").size(), 3u);  // flushed at exit
  EXPECT_EQ(OfType(r.dump, "NVTX_MARK").size(), 2u);
  const std::string status = r.dump.records.back()["cupti_status"];
  EXPECT_EQ(status.rfind("activity only", 0), 0u) << status;
  EXPECT_EQ(ValidateAgainstSchema(r.all), "");
}

TEST(CuptiReplay, InitialisationFailureLeavesTheProcessHealthyAndNvtxOn) {
  TempDir dir;
  Replay r = Play("init_failure", dir);
  ASSERT_EQ(r.exit.code, 0) << r.exit.err;
  ASSERT_EQ(r.all.size(), 1u);
  EXPECT_EQ(Lines(r.exit.err), 1u) << r.exit.err;
  EXPECT_NE(r.exit.err.find("CUPTI_ERROR_NOT_INITIALIZED"), std::string::npos) << r.exit.err;
  EXPECT_TRUE(OfType(r.dump, "KERNEL").empty());
  EXPECT_TRUE(OfType(r.dump, "RUNTIME").empty());
  EXPECT_EQ(OfType(r.dump, "NVTX_MARK").size(), 2u);
  EXPECT_EQ(OfType(r.dump, "NVTX_PUSH").size(), 1u);
  const std::string status = r.dump.records.back()["cupti_status"];
  EXPECT_EQ(status.rfind("unavailable", 0), 0u) << status;
}

// ---- Sampled device windows (TRUFFLD_DEVICE_WINDOWS), scenario "windows" of the replay app ----

struct WindowRun {
  Exit exit;
  Dump dump;
  std::vector<std::pair<int64_t, int64_t>> windows;  // [start, end] (end: INT64_MAX if open)
  std::vector<std::pair<int64_t, int64_t>> steps;    // [push, pop] of each step, in order
  std::set<uint64_t> device;                         // correlation ids of KERNEL/MEMCPY records
  std::map<uint64_t, std::pair<int64_t, int64_t>> launches;  // RUNTIME [start, end] by corr
};

WindowRun PlayWindows(const std::string& plan, int steps, int sleep_ms, const TempDir& dir,
                      int slow_step = -1, const std::vector<std::string>& more_env = {}) {
  auto env = InjectEnv(dir.path());
  env.push_back(std::string("TRUFFLD_CUPTI_LIBRARY=") + TRUFFLD_CUPTI_DOUBLE_PATH);
  env.push_back("TRUFFLD_DEVICE_WINDOWS=" + plan);
  // The slow-step trigger is off unless a test sets it: steps of a few microseconds on a
  // loaded machine are often 3x their median, and a triggered window would join the plan's.
  bool sets_slow = false;
  for (const auto& e : more_env) sets_slow |= e.rfind("TRUFFLD_WINDOW_SLOW=", 0) == 0;
  if (!sets_slow) env.push_back("TRUFFLD_WINDOW_SLOW=0");
  env.insert(env.end(), more_env.begin(), more_env.end());
  WindowRun w;
  w.exit = RunProgram({AppPath("truffld_cupti_replay_app"), "windows", std::to_string(steps),
                       std::to_string(sleep_ms), std::to_string(slow_step)}, env);
  auto dumps = ReadDumps(dir.path());
  if (dumps.size() != 1) return w;
  w.dump = dumps[0];
  std::map<uint64_t, std::pair<int64_t, int64_t>> by_index;
  for (const auto& r : w.dump.records) {
    const std::string t = r["type"];
    if (t == "DEVICE_WINDOW") {
      auto& win = by_index.try_emplace(r["id"].get<uint64_t>(), -1, INT64_MAX).first->second;
      (r["edge"] == "start" ? win.first : win.second) = r["timestamp"].get<int64_t>();
    }
    if (t == "KERNEL" || t == "MEMCPY") w.device.insert(r["correlation_id"].get<uint64_t>());
    if (t == "RUNTIME") w.launches[r["correlation_id"]] = {r["start"].get<int64_t>(), r["end"].get<int64_t>()};
  }
  // Steps: the outermost push/pop ranges of the one thread, in file order.
  int depth = 0;
  int64_t step_start = 0;
  for (const auto& r : w.dump.records) {
    const std::string t = r["type"];
    if (t == "NVTX_PUSH") {
      if (depth++ == 0) step_start = r["timestamp"].get<int64_t>();
    } else if (t == "NVTX_POP" && --depth == 0) {
      w.steps.emplace_back(step_start, r["timestamp"].get<int64_t>());
    }
  }
  for (const auto& [i, win] : by_index) w.windows.push_back(win);
  return w;
}

// The contract of sampled windows, whatever the plan: no window edge falls inside a step;
// device activity is recorded exactly for the launches made inside a window.
void ExpectWholeStepsAndExactActivity(const WindowRun& w) {
  for (const auto& [start, end] : w.windows) {
    ASSERT_GE(start, 0) << "a window end without its start";
    EXPECT_LT(start, end);
    for (const auto& [push, pop] : w.steps) {
      EXPECT_FALSE(push < start && start < pop) << "window starts inside a step";
      EXPECT_FALSE(push < end && end < pop) << "window ends inside a step";
    }
  }
  auto inside = [&](int64_t a, int64_t b) {
    for (const auto& [start, end] : w.windows) if (start <= a && b <= end) return true;
    return false;
  };
  auto straddles = [&](int64_t a, int64_t b) {
    for (const auto& [start, end] : w.windows)
      if ((a < start && start < b) || (a < end && end < b)) return true;
    return false;
  };
  for (const auto& [corr, span] : w.launches) {
    if (straddles(span.first, span.second)) continue;  // only time edges, between steps, can
    EXPECT_EQ(w.device.count(corr) > 0, inside(span.first, span.second)) << "launch " << corr;
  }
}

TEST(CuptiReplay, StepWindowsRecordDeviceActivityOfWholeSampledSteps) {
  TempDir dir;
  WindowRun w = PlayWindows("steps:4", 10, 0, dir);
  ASSERT_EQ(w.exit.code, 0) << w.exit.err;
  EXPECT_EQ(w.exit.err, "");
  EXPECT_EQ(ValidateAgainstSchema({w.dump}), "");
  ASSERT_EQ(w.steps.size(), 10u);
  ASSERT_EQ(w.windows.size(), 3u) << "steps 0, 4 and 8";
  for (size_t k = 0; k < 3; ++k) {  // each window holds exactly its one step
    const auto& [push, pop] = w.steps[4 * k];
    EXPECT_LE(w.windows[k].first, push);
    EXPECT_GE(w.windows[k].second, pop);
  }
  const std::set<uint64_t> want = {1000, 1001, 1005, 1040, 1041, 1045, 1080, 1081, 1085};
  EXPECT_EQ(w.device, want) << "kernels and the copy of steps 0, 4, 8; nothing between steps";
  // Per-operator calls (the launches) inside windows only; the blocking copies all the time.
  std::set<uint64_t> calls;
  for (const auto& [corr, span] : w.launches) calls.insert(corr);
  std::set<uint64_t> want_calls = {1000, 1001, 1040, 1041, 1080, 1081};
  for (uint64_t i = 0; i < 10; ++i) want_calls.insert(1000 + 10 * i + 5);
  EXPECT_EQ(calls, want_calls);
  ExpectWholeStepsAndExactActivity(w);
  const std::string status = OfType(w.dump, "STATS").back()["cupti_status"];
  EXPECT_NE(status.find("per-operator API calls inside device windows only"), std::string::npos) << status;
  EXPECT_EQ(w.dump.records.front()["config"]["device_windows"], "steps:4:1");
  for (const auto& r : OfType(w.dump, "DEVICE_WINDOW")) EXPECT_EQ(r["trigger"], "step");
  for (const auto& r : OfType(w.dump, "STATS")) EXPECT_FALSE(r.contains("window_period")) << "cost plans only";
}

TEST(CuptiReplay, StepWindowsOfSeveralStepsStayOpenBetweenThem) {
  TempDir dir;
  WindowRun w = PlayWindows("steps:5:2", 10, 0, dir);
  ASSERT_EQ(w.exit.code, 0) << w.exit.err;
  ASSERT_EQ(w.windows.size(), 2u) << "steps 0-1 and 5-6";
  // The launch between steps 0 and 1 (5000) is inside the first window, the one after step 1
  // (5001) is not.
  const std::set<uint64_t> want = {1000, 1001, 1005, 5000, 1010, 1011, 1015,
                                   1050, 1051, 1055, 5005, 1060, 1061, 1065};
  EXPECT_EQ(w.device, want);
  ExpectWholeStepsAndExactActivity(w);
}

TEST(CuptiReplay, TimeWindowsMoveTheirEdgesToStepBoundaries) {
  // 20 ms of device detail every 50 ms; steps of about 7 ms, so edges planned inside a step
  // wait for its end.
  TempDir dir;
  WindowRun w = PlayWindows("time:20:50", 40, 7, dir);
  ASSERT_EQ(w.exit.code, 0) << w.exit.err;
  EXPECT_EQ(ValidateAgainstSchema({w.dump}), "");
  ASSERT_EQ(w.steps.size(), 40u);
  EXPECT_GE(w.windows.size(), 2u);
  size_t with = 0;
  for (const auto& [push, pop] : w.steps)
    for (const auto& [start, end] : w.windows) if (start <= push && pop <= end) { ++with; break; }
  EXPECT_GT(with, 0u) << "some steps have device detail";
  EXPECT_LT(with, w.steps.size()) << "and some do not";
  ExpectWholeStepsAndExactActivity(w);
}

TEST(CuptiReplay, ASlowStepOpensAWindowWithTheDeviceActivityOfTheNextSteps) {
  // Requested windows only; steps of 3 ms, step 9 600 ms longer: the next 3 steps (10-12) have
  // their device activity, and so have the launches between them; nothing else has. The
  // factor 100 (a 300 ms step) keeps a loaded machine's stalls of tens of ms, seen under
  // ThreadSanitizer beside other builds, from triggering too.
  TempDir dir;
  WindowRun w = PlayWindows("requested", 14, 3, dir, 9, {"TRUFFLD_WINDOW_SLOW=100", "TRUFFLD_WINDOW_STEPS=3", "TRUFFLD_WINDOW_BUDGET=1"});
  ASSERT_EQ(w.exit.code, 0) << w.exit.err;
  EXPECT_EQ(ValidateAgainstSchema({w.dump}), "");
  ASSERT_EQ(w.steps.size(), 14u);
  ASSERT_EQ(w.windows.size(), 1u);
  const std::set<uint64_t> want = {1100, 1101, 1105, 5010, 1110, 1111, 1115, 5011, 1120, 1121, 1125};
  EXPECT_EQ(w.device, want);
  ExpectWholeStepsAndExactActivity(w);
  for (const auto& r : OfType(w.dump, "DEVICE_WINDOW")) EXPECT_EQ(r["trigger"], "slow_step");
}

TEST(CuptiReplay, ExitWithAWindowOpenKeepsItsActivityAndAValidDump) {
  // "steps:8:3" over 10 steps: the window of steps 8-10 is still open when the program
  // returns after step 9. Its device activity (steps 8 and 9, the launch between them and the
  // one after step 9) reaches the dump at exit, and the process exits cleanly.
  TempDir dir;
  WindowRun w = PlayWindows("steps:8:3", 10, 0, dir);
  ASSERT_EQ(w.exit.code, 0) << w.exit.err;
  EXPECT_EQ(w.exit.err, "");
  EXPECT_EQ(ValidateAgainstSchema({w.dump}), "");
  ASSERT_EQ(w.steps.size(), 10u);
  ASSERT_EQ(w.windows.size(), 2u) << "steps 0-2 and 8-";
  const std::set<uint64_t> want = {1000, 1001, 1005, 5000, 1010, 1011, 1015, 5001, 1020, 1021, 1025,
                                   1080, 1081, 1085, 5008, 1090, 1091, 1095, 5009};
  EXPECT_EQ(w.device, want);
  ExpectWholeStepsAndExactActivity(w);
}

TEST(CuptiReplay, ExitRightAfterASlowStepWithItsWindowPending) {
  // The last step is the slow one: its window would open at the next step's push, which never
  // comes, so no window and no device activity are recorded, and the exit is clean.
  TempDir dir;
  WindowRun w = PlayWindows("requested", 12, 3, dir, 11, {"TRUFFLD_WINDOW_SLOW=100", "TRUFFLD_WINDOW_STEPS=3"});
  ASSERT_EQ(w.exit.code, 0) << w.exit.err;
  EXPECT_EQ(w.exit.err, "");
  EXPECT_EQ(ValidateAgainstSchema({w.dump}), "");
  ASSERT_EQ(w.steps.size(), 12u);
  EXPECT_TRUE(w.windows.empty());
  EXPECT_TRUE(w.device.empty());
  EXPECT_EQ(w.launches.size(), 12u) << "the blocking copies; launches only inside windows";
}

TEST(CuptiReplay, TheEssentialSetRecordsEveryLaunchOutsideWindowsToo) {
  TempDir dir;
  WindowRun w = PlayWindows("steps:4", 10, 0, dir, -1, {"TRUFFLD_CUPTI_API_SET=essential"});
  ASSERT_EQ(w.exit.code, 0) << w.exit.err;
  EXPECT_EQ(w.launches.size(), 40u) << "two launches and a copy a step, a launch between steps";
  EXPECT_EQ(w.device.size(), 9u) << "device activity still follows the windows";
  ExpectWholeStepsAndExactActivity(w);
  EXPECT_EQ(w.dump.records.front()["config"]["cupti_api_set"], "essential");
}

TEST(CuptiReplay, HalfCallsAtAWindowEdgeAreCountedNotRecorded) {
  // A launch entered as its window closed never exits; one that exits without its enter has no
  // start: neither is written, the second is counted, and the whole calls around them are kept.
  TempDir dir;
  auto env = InjectEnv(dir.path());
  env.push_back(std::string("TRUFFLD_CUPTI_LIBRARY=") + TRUFFLD_CUPTI_DOUBLE_PATH);
  env.push_back("TRUFFLD_DEVICE_WINDOWS=steps:2");
  env.push_back("TRUFFLD_WINDOW_SLOW=0");
  Exit e = RunProgram({AppPath("truffld_cupti_replay_app"), "half_calls"}, env);
  ASSERT_EQ(e.code, 0) << e.err;
  auto dumps = ReadDumps(dir.path());
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(ValidateAgainstSchema({dumps[0]}), "");
  std::set<uint64_t> calls;
  for (const auto& r : OfType(dumps[0], "RUNTIME")) {
    calls.insert(r["correlation_id"].get<uint64_t>());
    EXPECT_LE(r["start"].get<int64_t>(), r["end"].get<int64_t>());
  }
  EXPECT_EQ(calls, (std::set<uint64_t>{902, 903, 904}));
  EXPECT_EQ(OfType(dumps[0], "STATS").back()["api_unpaired"], 1);
}

TEST(CuptiReplay, DeviceWindowsAllAndOff) {
  {
    TempDir dir;
    WindowRun w = PlayWindows("all", 6, 0, dir);
    ASSERT_EQ(w.exit.code, 0) << w.exit.err;
    EXPECT_TRUE(w.windows.empty()) << "the default writes no windows";
    EXPECT_EQ(w.device.size(), 6u * 4u) << "two kernels, a copy and the launch between steps";
  }
  {
    TempDir dir;
    WindowRun w = PlayWindows("off", 6, 0, dir);
    ASSERT_EQ(w.exit.code, 0) << w.exit.err;
    EXPECT_TRUE(w.windows.empty());
    EXPECT_TRUE(w.device.empty()) << "no device activity at all";
    EXPECT_EQ(w.launches.size(), 6u * 4u) << "API calls still recorded (no windows: no tiers)";
  }
}

TEST(CuptiReplay, MissingLibcuptiIsOneLineAndNvtxContinues) {
  TempDir dir;
  auto env = InjectEnv(dir.path());
  env.push_back("TRUFFLD_CUPTI_LIBRARY=/nonexistent/libcupti.so");
  Exit e = RunProgram({AppPath("truffld_cupti_replay_app"), "init_failure"}, env);
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(Lines(e.err), 1u) << e.err;
  auto dumps = ReadDumps(dir.path());
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(OfType(dumps[0], "NVTX_MARK").size(), 2u);
}

TEST(CuptiReplay, CostPlannedWindowsFollowWhatTheyCost) {
  // cost:100:1 lets windows take all of the step time, so what these 1 ms steps cost in
  // a window never stretches the period past its floor: the window at step 0 (not measured: no
  // history), then 512 (the start period), then every 16 steps.
  TempDir dir;
  WindowRun w = PlayWindows("cost:100:1", 600, 1, dir);  // 1 ms steps: jitter stays small
  ASSERT_EQ(w.exit.code, 0) << w.exit.err;
  EXPECT_EQ(ValidateAgainstSchema({w.dump}), "");
  ASSERT_EQ(w.steps.size(), 600u);
  EXPECT_EQ(w.dump.records.front()["config"]["device_windows"], "cost:100:1");
  std::vector<size_t> opened;  // the step each window holds
  for (const auto& [start, end] : w.windows) {
    for (size_t s = 0; s < w.steps.size(); ++s) {
      if (start <= w.steps[s].first && end >= w.steps[s].second) opened.push_back(s);
    }
  }
  ASSERT_GE(opened.size(), 5u);
  EXPECT_EQ(opened[0], 0u);
  EXPECT_EQ(opened[1], 512u);
  for (size_t k = 2; k < opened.size(); ++k) EXPECT_EQ(opened[k], 512u + 16 * (k - 1)) << "window " << k;
  EXPECT_EQ(opened.size(), 7u) << "0, 512, 528, ..., 592";
  ExpectWholeStepsAndExactActivity(w);
  const auto stats = OfType(w.dump, "STATS");
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0]["window_period"], 16) << "the period the plan settled on, for the reader";
}

}  // namespace
}  // namespace truffld::inject::testing
