// StageTwoConfig helpers: modes, environment, validation, URL resolution, backoff, Retry-After.
#include <cstdlib>

#include <gtest/gtest.h>

#include "stage2/llm_config.h"

namespace truffld::diagnose {
namespace {

TEST(LlmConfig, ParsesModes) {
  EXPECT_EQ(ParseLlmMode("off").value(), LlmMode::kOff);
  EXPECT_EQ(ParseLlmMode("auto").value(), LlmMode::kAuto);
  EXPECT_EQ(ParseLlmMode("on").value(), LlmMode::kOn);
  Result<LlmMode> bad = ParseLlmMode("yes");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'yes'"), std::string::npos);
  EXPECT_STREQ(LlmModeName(LlmMode::kAuto), "auto");
}

TEST(LlmConfig, ApiKeyComesFromTruffldVariableFirstThenOpenAi) {
  ::setenv("OPENAI_API_KEY", "sk-openai", 1);
  ::setenv("TRUFFLD_LLM_API_KEY", "sk-truffld", 1);
  EXPECT_EQ(StageTwoConfig::FromEnvironment().api_key, "sk-truffld");
  ::unsetenv("TRUFFLD_LLM_API_KEY");
  EXPECT_EQ(StageTwoConfig::FromEnvironment().api_key, "sk-openai");
  ::unsetenv("OPENAI_API_KEY");
  EXPECT_EQ(StageTwoConfig::FromEnvironment().api_key, "");
}

TEST(LlmConfig, IntegerOverridesFromTheEnvironment) {
  ::setenv("TRUFFLD_LLM_TIMEOUT_MS", "1500", 1);
  ::setenv("TRUFFLD_LLM_CONCURRENCY", "8", 1);
  ::setenv("TRUFFLD_LLM_SEED", "-3", 1);
  StageTwoConfig c = StageTwoConfig::FromEnvironment();
  EXPECT_EQ(c.timeout_ms, 1500);
  EXPECT_EQ(c.max_concurrency, 8);
  EXPECT_EQ(c.seed, -3);
  EXPECT_TRUE(c.Validate().ok());
  ::setenv("TRUFFLD_LLM_CONCURRENCY", "lots", 1);
  c = StageTwoConfig::FromEnvironment();
  EXPECT_EQ(c.max_concurrency, 4);  // default kept
  Status st = c.Validate();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("TRUFFLD_LLM_CONCURRENCY"), std::string::npos) << st.message();
  ::setenv("TRUFFLD_LLM_CONCURRENCY", "0", 1);
  EXPECT_FALSE(StageTwoConfig::FromEnvironment().Validate().ok());
  ::unsetenv("TRUFFLD_LLM_TIMEOUT_MS");
  ::unsetenv("TRUFFLD_LLM_CONCURRENCY");
  ::unsetenv("TRUFFLD_LLM_SEED");
  EXPECT_EQ(StageTwoConfig::FromEnvironment().breaker_failures, 3);
  ::setenv("TRUFFLD_LLM_BREAKER_FAILURES", "0", 1);
  EXPECT_EQ(StageTwoConfig::FromEnvironment().breaker_failures, 0);
  ::unsetenv("TRUFFLD_LLM_BREAKER_FAILURES");
}

TEST(LlmConfig, AutoUsesTheLlmOnlyWithAUrl) {
  StageTwoConfig c;
  EXPECT_FALSE(c.UsesLlm());
  EXPECT_TRUE(c.Validate().ok());
  c.url = "http://127.0.0.1:8000";
  EXPECT_TRUE(c.UsesLlm());
  c.mode = LlmMode::kOff;
  EXPECT_FALSE(c.UsesLlm());
}

TEST(LlmConfig, ValidateRejectsUnusableSettings) {
  StageTwoConfig c;
  c.mode = LlmMode::kOn;
  EXPECT_EQ(c.Validate().code(), StatusCode::kInvalidArgument);
  c.url = "ftp://x";
  EXPECT_EQ(c.Validate().code(), StatusCode::kInvalidArgument);
  c.url = "http://x";
  EXPECT_TRUE(c.Validate().ok());
  c.max_concurrency = 0;
  EXPECT_FALSE(c.Validate().ok());
  c.max_concurrency = 2;
  c.timeout_ms = 0;
  EXPECT_FALSE(c.Validate().ok());
  c.timeout_ms = 10;
  c.max_retries = -1;
  EXPECT_FALSE(c.Validate().ok());
}

TEST(LlmConfig, DescribeNeverContainsTheKey) {
  StageTwoConfig c;
  c.url = "http://127.0.0.1:1";
  c.api_key = "sk-very-secret-123";
  const std::string text = c.Describe();
  EXPECT_EQ(text.find("sk-very-secret-123"), std::string::npos);
  EXPECT_NE(text.find("api key: set"), std::string::npos);
}

TEST(LlmConfig, ResolvesChatCompletionsUrlWithOrWithoutV1) {
  const std::string want = "http://h:8000/v1/chat/completions";
  EXPECT_EQ(ResolveChatCompletionsUrl("http://h:8000").value(), want);
  EXPECT_EQ(ResolveChatCompletionsUrl("http://h:8000/").value(), want);
  EXPECT_EQ(ResolveChatCompletionsUrl("http://h:8000/v1").value(), want);
  EXPECT_EQ(ResolveChatCompletionsUrl("http://h:8000/v1/").value(), want);
  EXPECT_EQ(ResolveChatCompletionsUrl(want).value(), want);
  EXPECT_EQ(ResolveChatCompletionsUrl("https://api.example.com/openai/v1").value(),
            "https://api.example.com/openai/v1/chat/completions");
  EXPECT_FALSE(ResolveChatCompletionsUrl("").ok());
  EXPECT_FALSE(ResolveChatCompletionsUrl("h:8000").ok());
  EXPECT_FALSE(ResolveChatCompletionsUrl("http://").ok());
}

// A query string (Azure's ?api-version=) stays after the path, which is completed before it.
TEST(LlmConfig, ResolvesUrlsWithQueryCredentialsAndAzureDeployments) {
  EXPECT_EQ(ResolveChatCompletionsUrl("https://x.openai.azure.com/openai/deployments/gpt4o?api-version=2024-06-01").value(),
            "https://x.openai.azure.com/openai/deployments/gpt4o/chat/completions?api-version=2024-06-01");
  EXPECT_EQ(ResolveChatCompletionsUrl("https://x.openai.azure.com/openai/deployments/d/chat/completions?api-version=1").value(),
            "https://x.openai.azure.com/openai/deployments/d/chat/completions?api-version=1");
  EXPECT_EQ(ResolveChatCompletionsUrl("http://h:8000/?key=abc&x=1").value(), "http://h:8000/v1/chat/completions?key=abc&x=1");
  EXPECT_EQ(ResolveChatCompletionsUrl("http://h:8000/v1?key=abc#frag").value(), "http://h:8000/v1/chat/completions?key=abc");
  EXPECT_EQ(ResolveChatCompletionsUrl("http://u:p@h:8000").value(), "http://u:p@h:8000/v1/chat/completions");
  EXPECT_EQ(ResolveChatCompletionsUrl(" http://h:8000/v1 \n").value(), "http://h:8000/v1/chat/completions");
}

TEST(LlmConfig, RedactsCredentialsInUrls) {
  EXPECT_EQ(RedactUrl("http://alice:s3cret-pw@h:8000/v1"), "http://[redacted]@h:8000/v1");
  EXPECT_EQ(RedactUrl("https://h/openai/deployments/d?api-version=2024-06-01&api-key=k123456&sig=zz"),
            "https://h/openai/deployments/d?api-version=2024-06-01&api-key=[redacted]&sig=[redacted]");
  EXPECT_EQ(RedactUrl("http://h:1/v1?tokenonly"), "http://h:1/v1?[redacted]");
  EXPECT_EQ(RedactUrl("http://h:1/v1"), "http://h:1/v1");
  EXPECT_EQ(RedactUrl("user:pw@h?key=1"), "[redacted]@h?[redacted]");
  const std::vector<std::string> secrets = UrlSecrets("http://alice:s3cret-pw@h/v1?api-version=1&key=abcdef");
  EXPECT_EQ(secrets, (std::vector<std::string>{"alice:s3cret-pw", "YWxpY2U6czNjcmV0LXB3", "s3cret-pw", "abcdef"}));
  StageTwoConfig c;
  c.url = "http://alice:s3cret-pw@h:8000/v1?key=abcdef";
  const std::string text = c.Describe();
  EXPECT_EQ(text.find("s3cret-pw"), std::string::npos) << text;
  EXPECT_EQ(text.find("abcdef"), std::string::npos) << text;
  EXPECT_NE(text.find("url=http://[redacted]@h:8000/v1?key=[redacted]"), std::string::npos) << text;
  c.url = "ftp://alice:s3cret-pw@h";
  c.mode = LlmMode::kOn;
  const Status st = c.Validate();
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.message().find("s3cret-pw"), std::string::npos) << st.message();
}

TEST(LlmConfig, RetryableStatuses) {
  EXPECT_TRUE(IsRetryableHttpStatus(429));
  EXPECT_TRUE(IsRetryableHttpStatus(500));
  EXPECT_TRUE(IsRetryableHttpStatus(503));
  EXPECT_FALSE(IsRetryableHttpStatus(400));
  EXPECT_FALSE(IsRetryableHttpStatus(401));
  EXPECT_FALSE(IsRetryableHttpStatus(404));
}

TEST(LlmConfig, BackoffDoublesIsCappedAndHonoursRetryAfter) {
  StageTwoConfig c;
  c.initial_backoff_ms = 100;
  c.max_backoff_ms = 1000;
  EXPECT_EQ(BackoffDelayMs(c, 0, std::nullopt), 100);
  EXPECT_EQ(BackoffDelayMs(c, 1, std::nullopt), 200);
  EXPECT_EQ(BackoffDelayMs(c, 3, std::nullopt), 800);
  EXPECT_EQ(BackoffDelayMs(c, 4, std::nullopt), 1000);
  EXPECT_EQ(BackoffDelayMs(c, 60, std::nullopt), 1000);  // no overflow
  EXPECT_EQ(BackoffDelayMs(c, 0, 3000), 1000);           // Retry-After capped
  EXPECT_EQ(BackoffDelayMs(c, 5, 250), 250);             // Retry-After wins over doubling
  EXPECT_EQ(BackoffDelayMs(c, 0, -5), 0);
}

TEST(LlmConfig, ParsesRetryAfterSeconds) {
  EXPECT_EQ(ParseRetryAfterSeconds("3").value(), 3000);
  EXPECT_EQ(ParseRetryAfterSeconds(" 120 \r").value(), 120000);
  EXPECT_EQ(ParseRetryAfterSeconds("0").value(), 0);
  EXPECT_FALSE(ParseRetryAfterSeconds("").has_value());
  EXPECT_FALSE(ParseRetryAfterSeconds("1.5").has_value());
  EXPECT_FALSE(ParseRetryAfterSeconds("Wed, 21 Oct 2015 07:28:00 GMT").has_value());
  EXPECT_FALSE(ParseRetryAfterSeconds("99999999999999").has_value());
}

}  // namespace
}  // namespace truffld::diagnose
