// The LLM answer cache never holds a secret: an endpoint that echoes the Authorization header
// ("Bearer <key>") and the URL's ?key= value back in its answer is cached redacted, as the
// decision's own text is (StageTwo's Redact), and a rerun from the cache still decides the same.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <gtest/gtest.h>

#include "../llm_stub_server.h"
#include "../llm_test_helpers.h"
#include "stage2/llm_stage2.h"

namespace truffld::diagnose {
namespace {

using truffld::testing::AbnormalStep;
using truffld::testing::Answer;
using truffld::testing::ChatBody;
using truffld::testing::StubReply;
using truffld::testing::StubRequest;
using truffld::testing::StubServer;

TEST(LlmCacheRedaction, EchoedKeyAndQueryValueNeverReachTheCache) {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("truffld_llm_cache_redaction_" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  StubServer server([](const StubRequest& r) {
    const std::string echo = "seen " + r.path + " " + r.headers.at("authorization");
    return StubReply{200, ChatBody(Answer(true, {"aten::mm"}, echo)), {}, false};
  });
  StageTwoConfig c;
  c.mode = LlmMode::kOn;
  c.url = "http://127.0.0.1:" + std::to_string(server.port()) + "/v1?key=qk-cache-777777";
  c.model = "stub-model";
  c.api_key = "sk-cache-secret-5a4b3c";
  c.timeout_ms = 5000;
  c.cache_dir = dir;
  {
    StageTwo first(c);
    ASSERT_EQ(first.Decide({AbnormalStep()})[0].source, DecisionSource::kLlm);
  }
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::stringstream text;
    text << std::ifstream(entry.path()).rdbuf();
    EXPECT_EQ(text.str().find("sk-cache-secret-5a4b3c"), std::string::npos) << text.str();
    EXPECT_EQ(text.str().find("qk-cache-777777"), std::string::npos) << text.str();
    EXPECT_NE(text.str().find("[redacted]"), std::string::npos) << text.str();
    ++files;
  }
  EXPECT_EQ(files, 1u);
  StageTwo second(c);
  const StageTwoDecision d = second.Decide({AbnormalStep()})[0];
  EXPECT_EQ(d.source, DecisionSource::kCache) << d.note;
  EXPECT_TRUE(d.abnormal);
  EXPECT_EQ(server.request_count(), 1u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace truffld::diagnose
