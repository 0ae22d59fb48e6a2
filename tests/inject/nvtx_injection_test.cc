// Integration: a real NVTX 3 program run with NVTX_INJECTION64_PATH=libcupti_injector.so on a
// machine with no GPU. The dump must validate against the events schema and contain exactly
// what nvtx_app's "basic" script did (see programs/nvtx_app.cc).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <map>
#include <set>

#include "inject_test_util.h"

namespace truffld::inject::testing {
namespace {

using nlohmann::json;

class NvtxInjection : public ::testing::Test {
 protected:
  void RunBasic(const std::vector<std::string>& extra_env = {}) {
    auto env = InjectEnv(dir_.path());
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    result_ = RunProgram({AppPath("truffld_nvtx_app"), "basic"}, env);
    ASSERT_EQ(result_.code, 0) << result_.err;
    dumps_ = ReadDumps(dir_.path());
    ASSERT_EQ(dumps_.size(), 1u) << "expected exactly one dump in " << dir_.path();
  }
  TempDir dir_;
  Exit result_;
  std::vector<Dump> dumps_;
};

// Non-META/STATS records in file order, as (type, name-or-empty, domain-or-empty).
std::vector<std::tuple<std::string, std::string, std::string>> Events(const Dump& d) {
  std::vector<std::tuple<std::string, std::string, std::string>> v;
  for (const auto& r : d.records) {
    const std::string t = r.value("type", "");
    if (t == "META" || t == "STATS" || t == "CLOCK") continue;
    v.emplace_back(t, r.value("name", ""), r.value("domain", ""));
  }
  return v;
}

TEST_F(NvtxInjection, DumpValidatesAndMatchesTheProgram) {
  RunBasic();
  const Dump& d = dumps_[0];
  EXPECT_EQ(ValidateAgainstSchema(dumps_), "");
  ASSERT_GE(d.records.size(), 2u);
  EXPECT_EQ(d.records.front()["type"], "META");
  EXPECT_EQ(d.records.back()["type"], "STATS");
  EXPECT_FALSE(d.truncated_last_line);

  // Per thread, records appear in program order (each thread has its own ring).
  std::map<uint64_t, std::vector<json>> by_thread;
  for (const auto& r : d.records) {
    if (r.contains("thread_id")) by_thread[r["thread_id"].get<uint64_t>()].push_back(r);
  }
  ASSERT_EQ(by_thread.size(), 2u) << "main thread and the helper thread";
  const uint64_t main_tid = d.records.front()["process_id"].get<uint64_t>();  // main: tid == pid
  ASSERT_TRUE(by_thread.count(main_tid));
  std::vector<std::string> main_seq, other_seq;
  for (const auto& [tid, recs] : by_thread) {
    for (const auto& r : recs) {
      std::string s = r["type"].get<std::string>();
      if (r.contains("name")) s += ":" + r["name"].get<std::string>();
      if (r.contains("domain")) s += "@" + r["domain"].get<std::string>();
      (tid == main_tid ? main_seq : other_seq).push_back(s);
    }
  }
  const std::vector<std::string> want_main = {
      "NVTX_PUSH:outer", "NVTX_PUSH:inner", "NVTX_MARK:tick", "NVTX_POP", "NVTX_POP",
      "NVTX_START:request cmpl-1", "NVTX_PUSH:registered step@myDomain",
      "NVTX_MARK:domain mark@myDomain", "NVTX_POP@myDomain", "NVTX_PUSH:ncclAllReduce@NCCL",
      "NVTX_POP@NCCL", "NVTX_MARK:ncclSend@NCCL", "NVTX_PUSH:ncclCommInitRank@NCCL",
      "NVTX_POP@NCCL", "NVTX_PUSH:@NCCL", "NVTX_POP@NCCL", "NVTX_START:@NCCL", "NVTX_END@NCCL"};
  EXPECT_EQ(main_seq, want_main);
  const std::vector<std::string> want_other = {"NVTX_PUSH:wide \u2713", "NVTX_POP", "NVTX_END"};
  EXPECT_EQ(other_seq, want_other);

  // Field-level checks.
  int pop_payloads = 0, nameless = 0;
  for (const auto& r : d.records) {
    const std::string t = r["type"];
    const std::string name = r.value("name", "");
    if (t == "NVTX_PUSH" && name == "inner") {
      EXPECT_EQ(r["color"], 0xFF00FF00u);
      EXPECT_EQ(r["category"], "compute");
      EXPECT_EQ(r["payload"]["value"], 42);
    }
    if (t == "NVTX_MARK" && name == "domain mark") {
      EXPECT_DOUBLE_EQ(r["payload"]["value"].get<double>(), 2.5);
    }
    if (t == "NVTX_PUSH" && name == "ncclAllReduce") {
      EXPECT_EQ(r["payload"]["schema"], "AllReduce");
      EXPECT_EQ(r["payload"]["comm"], 0x1234abcdull);
      EXPECT_EQ(r["payload"]["bytes"], 4096);
      EXPECT_EQ(r["payload"]["op"], "Sum");
    }
    if (t == "NVTX_POP" && r.contains("payload")) {  // nvtxRangePopPayload after ncclCommInitRank
      ++pop_payloads;
      EXPECT_EQ(r["payload"]["schema"], "CommInitRank");
      EXPECT_EQ(r["payload"]["comm"], 0x77u);
      EXPECT_EQ(r["payload"]["nranks"], 8);
      EXPECT_EQ(r["payload"]["rank"], 5);
      EXPECT_EQ(r["payload"]["cuda_device"], 1);
    }
    if ((t == "NVTX_PUSH" || t == "NVTX_START") && name.empty()) {  // nvtxRange{Push,Start}Payload
      ++nameless;
      EXPECT_EQ(r["payload"]["schema"], t == "NVTX_PUSH" ? "Send" : "AllReduce");
    }
    if (t == "NVTX_END" && r.contains("payload")) {
      ++nameless;
      EXPECT_EQ(r["payload"]["nranks"], 8);
    }
    if (t == "NVTX_MARK" && name == "ncclSend") {
      EXPECT_EQ(r["payload"]["comm"], 0x1234abcdull);
      EXPECT_EQ(r["payload"]["bytes"], 1024);
      EXPECT_EQ(r["payload"]["peer"], 3);
    }
  }
  EXPECT_EQ(pop_payloads, 1);
  EXPECT_EQ(nameless, 3);
  // The start/end pair shares one id, across threads, and time moves forward.
  json start, end;
  for (const auto& r : d.records) {
    if (r["type"] == "NVTX_START" && r["name"] == "request cmpl-1") start = r;
  }
  ASSERT_FALSE(start.is_null());
  for (const auto& r : d.records) {
    if (r["type"] == "NVTX_END" && r["id"] == start["id"]) end = r;
  }
  ASSERT_FALSE(start.is_null());
  ASSERT_FALSE(end.is_null());
  EXPECT_EQ(start["id"], end["id"]);
  EXPECT_NE(start["thread_id"], end["thread_id"]);
  EXPECT_LE(start["timestamp"].get<int64_t>(), end["timestamp"].get<int64_t>());

  // META and STATS.
  const json& meta = d.records.front();
  EXPECT_EQ(meta["schema"], "truffld.events/1");
  EXPECT_EQ(meta["clock"], "monotonic_raw");
  EXPECT_TRUE(meta["rank"].is_null());
  EXPECT_NE(d.path.find("-r--p"), std::string::npos) << d.path;
  const json& stats = d.records.back();
  EXPECT_EQ(stats["records_written"]["NVTX_PUSH"], 7);
  EXPECT_EQ(stats["records_written"]["NVTX_POP"], 7);
  EXPECT_EQ(stats["records_written"]["NVTX_MARK"], 3);
  for (const auto& [k, v] : stats["records_dropped"].items()) EXPECT_EQ(v, 0) << k;
  // No GPU, no CUDA injection here: CUPTI is never started and says so.
  EXPECT_NE(stats["cupti_status"].get<std::string>().find("not initialised"), std::string::npos);
}

TEST_F(NvtxInjection, RankHostAndRealtimeClockFromEnvironment) {
  RunBasic({"RANK=3", "LOCAL_RANK=1", "WORLD_SIZE=8", "TRUFFLD_CLOCK=realtime"});
  const json& meta = dumps_[0].records.front();
  EXPECT_EQ(meta["rank"], 3);
  EXPECT_EQ(meta["local_rank"], 1);
  EXPECT_EQ(meta["world_size"], 8);
  EXPECT_EQ(meta["clock"], "realtime");
  EXPECT_NE(dumps_[0].path.find("-r3-p"), std::string::npos) << dumps_[0].path;
  EXPECT_EQ(ValidateAgainstSchema(dumps_), "");
}

TEST_F(NvtxInjection, ZstdOutputDecodesToTheSameEvents) {
  RunBasic({"TRUFFLD_COMPRESS=zstd"});
  ASSERT_NE(dumps_[0].path.find(".jsonl.zst"), std::string::npos);
  const auto events = Events(dumps_[0]);
  EXPECT_EQ(events.size(), 21u);
  EXPECT_EQ(dumps_[0].records.back()["type"], "STATS");
}

TEST_F(NvtxInjection, ProcessFilterThatDoesNotMatchWritesNothing) {
  auto env = InjectEnv(dir_.path());
  env.push_back("TRUFFLD_PROCESS_FILTER=vllm.*worker");
  Exit e = RunProgram({AppPath("truffld_nvtx_app"), "basic"}, env);
  EXPECT_EQ(e.code, 0);
  EXPECT_TRUE(ReadDumps(dir_.path()).empty());
  EXPECT_EQ(e.err, "");
}

TEST_F(NvtxInjection, ProcessFilterThatMatchesTraces) {
  RunBasic({"TRUFFLD_PROCESS_FILTER=nvtx_app +basic$"});
  EXPECT_EQ(Events(dumps_[0]).size(), 21u);
}

TEST_F(NvtxInjection, FileIsPrivateAndExclusive) {
  RunBasic();
  struct stat st {};
  ASSERT_EQ(::stat(dumps_[0].path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

TEST(NvtxNames, AStepNamingHundredsOfRequestsKeepsEveryId) {
  // A decode batch of 512 requests is a 22 KB step name. Names were cut at 2,048 bytes
  // (name_truncated), which lost all but ~50 ids and the [phase:] tag.
  TempDir dir;
  Exit e = RunProgram({AppPath("truffld_nvtx_app"), "longstep", "512"}, InjectEnv(dir.path()));
  ASSERT_EQ(e.code, 0) << e.err;
  auto dumps = ReadDumps(dir.path());
  ASSERT_EQ(dumps.size(), 1u);
  auto pushes = OfType(dumps[0], "NVTX_PUSH");
  ASSERT_EQ(pushes.size(), 1u);
  const std::string name = pushes[0]["name"];
  EXPECT_FALSE(pushes[0].contains("name_truncated"));
  EXPECT_EQ(name.size(), 31u + 512u * 43u - 1u + 15u);  // 42-byte ids joined by "_"
  EXPECT_EQ(name.rfind("step_execute_model[request_ids:chatcmpl-00000000-", 0), 0u);
  EXPECT_NE(name.find("_chatcmpl-00000511-"), std::string::npos);
  EXPECT_EQ(name.substr(name.size() - 15), "][phase:decode]");
  EXPECT_EQ(dumps[0].records.back()["names_truncated"], 0);
}

}  // namespace
}  // namespace truffld::inject::testing
