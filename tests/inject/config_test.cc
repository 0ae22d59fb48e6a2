// Unit tests of configuration parsing, rank detection, file naming and the process filter.
#include <gtest/gtest.h>

#include <map>

#include "config.h"

namespace truffld::inject {
namespace {

EnvLookup Env(std::map<std::string, std::string> m) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(m));
  return [shared](const char* n) -> const char* {
    auto it = shared->find(n);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

TEST(Config, DefaultsWithAnEmptyEnvironment) {
  std::vector<std::string> w;
  Config c = ParseConfig(Env({}), &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(c.output_dir, "/tmp/truffld");
  EXPECT_EQ(c.flush_ms, 500);
  EXPECT_LE(c.flush_ms, 1000);
  EXPECT_EQ(c.max_buffer_mb, 256);
  EXPECT_EQ(c.compress, Compression::kNone);
  EXPECT_FALSE(c.clock_realtime);
  EXPECT_TRUE(c.cupti && c.trace_runtime && c.trace_driver);
  EXPECT_EQ(c.api_set, Config::ApiSet::kTiered);  // the essential set, in two tiers
  EXPECT_EQ(c.file_mode, 0640u);
}

TEST(Config, ValidValuesAreTaken) {
  std::vector<std::string> w;
  Config c = ParseConfig(Env({{"TRUFFLD_OUTPUT_DIR", "/data/t"}, {"TRUFFLD_FLUSH_MS", "200"},
                              {"TRUFFLD_COMPRESS", "zstd"}, {"TRUFFLD_CLOCK", "realtime"},
                              {"TRUFFLD_CUPTI_API", "runtime"}, {"TRUFFLD_FILE_MODE", "0600"},
                              {"TRUFFLD_PROCESS_FILTER", "vllm"}, {"TRUFFLD_CUPTI_API_SET", "all"}}), &w);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(c.api_set, Config::ApiSet::kAll);
  EXPECT_EQ(c.output_dir, "/data/t");
  EXPECT_EQ(c.flush_ms, 200);
  EXPECT_EQ(c.compress, Compression::kZstd);
  EXPECT_TRUE(c.clock_realtime);
  EXPECT_TRUE(c.trace_runtime);
  EXPECT_FALSE(c.trace_driver);
  EXPECT_EQ(c.file_mode, 0600u);
  EXPECT_EQ(c.process_filter, "vllm");
}

TEST(Config, ApiSetNamesEachChoice) {
  for (const auto& [value, want] : {std::pair{"tiered", Config::ApiSet::kTiered},
                                    std::pair{"essential", Config::ApiSet::kEssential},
                                    std::pair{"all", Config::ApiSet::kAll}}) {
    std::vector<std::string> w;
    Config c = ParseConfig(Env({{"TRUFFLD_CUPTI_API_SET", value}}), &w);
    EXPECT_TRUE(w.empty()) << value;
    EXPECT_EQ(c.api_set, want) << value;
    bool described = false;
    for (const auto& [k, v] : c.Describe()) described |= k == "cupti_api_set" && v == value;
    EXPECT_TRUE(described) << value;
  }
}

TEST(Config, BadValuesWarnByNameAndKeepDefaults) {
  std::vector<std::string> w;
  Config c = ParseConfig(Env({{"TRUFFLD_FLUSH_MS", "soon"}, {"TRUFFLD_COMPRESS", "gzip"},
                              {"TRUFFLD_MAX_BUFFER_MB", "lots"}, {"TRUFFLD_CUPTI", "maybe"},
                              {"TRUFFLD_CUPTI_API_SET", "some"}}), &w);
  ASSERT_EQ(w.size(), 5u);
  EXPECT_EQ(c.api_set, Config::ApiSet::kTiered);
  bool named = false;
  for (const auto& m : w) named |= m.find("TRUFFLD_CUPTI_API_SET='some' is not 'tiered'") != std::string::npos;
  EXPECT_TRUE(named);
  EXPECT_NE(w[0].find("TRUFFLD_FLUSH_MS"), std::string::npos);
  EXPECT_EQ(c.flush_ms, 500);
  EXPECT_EQ(c.compress, Compression::kNone);
  EXPECT_EQ(c.max_buffer_mb, 256);
  EXPECT_TRUE(c.cupti);
}

TEST(Config, SizesOutsideTheirRangeAreClampedAndSaidSo) {
  // TRUFFLD_MAX_BUFFER_MB=1 once fell back to the 256 MB default: a user asking for less
  // memory got 64 times more. It becomes the documented minimum, with a warning.
  for (const char* v : {"1", "0", "-3"}) {
    std::vector<std::string> w;
    Config c = ParseConfig(Env({{"TRUFFLD_MAX_BUFFER_MB", v}}), &w);
    EXPECT_EQ(c.max_buffer_mb, kMinMaxBufferMb) << v;
    EXPECT_EQ(c.thread_buffer_kb, 2048) << "a large ring is at most half of the budget";
    ASSERT_EQ(w.size(), 2u) << v;
    EXPECT_NE(w[0].find("TRUFFLD_MAX_BUFFER_MB"), std::string::npos) << w[0];
    EXPECT_NE(w[0].find("below the minimum 4"), std::string::npos) << w[0];
  }
  std::vector<std::string> w;
  Config c = ParseConfig(Env({{"TRUFFLD_THREAD_BUFFER_KB", "1"}, {"TRUFFLD_FLUSH_MS", "999999"}}), &w);
  EXPECT_EQ(c.thread_buffer_kb, 16);
  EXPECT_EQ(c.flush_ms, 60000);
  EXPECT_EQ(w.size(), 2u);
}

TEST(Rank, FirstLauncherVariableWins) {
  RankInfo r = DetectRank(Env({{"OMPI_COMM_WORLD_RANK", "5"}, {"SLURM_PROCID", "9"},
                               {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"WORLD_SIZE", "16"}}));
  EXPECT_EQ(r.rank, 5);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.world_size, 16);
  EXPECT_EQ(DetectRank(Env({{"RANK", "x"}, {"PMI_RANK", "2"}})).rank, 2);
  EXPECT_FALSE(DetectRank(Env({})).rank.has_value());
}

TEST(FileName, ContractNaming) {
  EXPECT_EQ(DumpFileName("gpu-node1", 3, 1234, Compression::kNone, 0), "truffld-gpu-node1-r3-p1234.jsonl");
  EXPECT_EQ(DumpFileName("h", std::nullopt, 7, Compression::kZstd, 0), "truffld-h-r--p7.jsonl.zst");
  EXPECT_EQ(DumpFileName("h", 0, 7, Compression::kNone, 2), "truffld-h-r0-p7.2.jsonl");
  EXPECT_EQ(SanitizeHost("a/b c..d"), "abc..d");
  EXPECT_EQ(SanitizeHost(""), "unknown");
}

TEST(Filter, RegexOnTheCommandLine) {
  std::string err;
  EXPECT_TRUE(ProcessMatches("", "anything", &err));
  EXPECT_TRUE(ProcessMatches("vllm.*worker", "python -m vllm.worker", &err));
  EXPECT_FALSE(ProcessMatches("vllm.*worker", "gcc -c x.c", &err));
  EXPECT_TRUE(err.empty());
  EXPECT_FALSE(ProcessMatches("([", "x", &err));
  EXPECT_NE(err.find("TRUFFLD_PROCESS_FILTER"), std::string::npos);
  EXPECT_EQ(SplitCmdline(std::string("a\0bb\0", 5)), (std::vector<std::string>{"a", "bb"}));
}

}  // namespace
}  // namespace truffld::inject
