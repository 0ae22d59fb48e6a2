// StageTwoConfig helpers: mode parsing, environment, validation, URL and backoff arithmetic.
#include "truffld/diagnose/llm_config.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace truffld::diagnose {

Result<LlmMode> ParseLlmMode(std::string_view text) {
  if (text == "off") return LlmMode::kOff;
  if (text == "auto") return LlmMode::kAuto;
  if (text == "on") return LlmMode::kOn;
  return InvalidArgument("--llm: expected off, auto or on, got '" + std::string(text) + "'");
}

const char* LlmModeName(LlmMode mode) noexcept {
  switch (mode) {
    case LlmMode::kOff: return "off";
    case LlmMode::kAuto: return "auto";
    case LlmMode::kOn: return "on";
  }
  return "unknown";
}

namespace {

// Reads an optional integer variable into `out`; a malformed or out-of-range value leaves `out`
// alone and records the first problem in `error`.
template <typename T>
void ReadEnvInt(const char* name, int64_t min, int64_t max, T* out, std::string* error) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return;
  char* end = nullptr;
  errno = 0;
  const long long parsed = std::strtoll(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || parsed < min || parsed > max) {
    if (error->empty()) {
      *error = std::string(name) + ": expected an integer in [" + std::to_string(min) + ", " +
               std::to_string(max) + "], got '" + v + "'";
    }
    return;
  }
  *out = static_cast<T>(parsed);
}

}  // namespace

StageTwoConfig StageTwoConfig::FromEnvironment() {
  StageTwoConfig c;
  for (const char* name : {"TRUFFLD_LLM_API_KEY", "OPENAI_API_KEY"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') {
      c.api_key = v;
      break;
    }
  }
  ReadEnvInt("TRUFFLD_LLM_TIMEOUT_MS", 1, 3'600'000, &c.timeout_ms, &c.env_error);
  ReadEnvInt("TRUFFLD_LLM_MAX_RETRIES", 0, 100, &c.max_retries, &c.env_error);
  ReadEnvInt("TRUFFLD_LLM_CONCURRENCY", 1, 256, &c.max_concurrency, &c.env_error);
  ReadEnvInt("TRUFFLD_LLM_SEED", INT64_MIN, INT64_MAX, &c.seed, &c.env_error);
  ReadEnvInt("TRUFFLD_LLM_MAX_TOKENS", 1, 1'000'000, &c.max_tokens, &c.env_error);
  return c;
}

bool StageTwoConfig::UsesLlm() const noexcept {
  return mode != LlmMode::kOff && !url.empty();
}

Status StageTwoConfig::Validate() const {
  if (!env_error.empty()) return InvalidArgument(env_error);
  if (mode == LlmMode::kOn && url.empty()) {
    return InvalidArgument("--llm on needs an endpoint: pass --llm-url (e.g. http://127.0.0.1:8000)");
  }
  if (UsesLlm()) {
    Result<std::string> resolved = ResolveChatCompletionsUrl(url);
    if (!resolved.ok()) return resolved.status();
    if (model.empty()) return InvalidArgument("--llm-model must not be empty");
  }
  if (timeout_ms <= 0) return InvalidArgument("LLM timeout must be positive (ms)");
  if (max_retries < 0) return InvalidArgument("LLM max retries must be >= 0");
  if (max_concurrency <= 0) return InvalidArgument("LLM concurrency must be >= 1");
  if (initial_backoff_ms < 0 || max_backoff_ms < 0) return InvalidArgument("LLM backoff must be >= 0");
  if (max_tokens <= 0) return InvalidArgument("LLM max tokens must be positive");
  return Status::Ok();
}

std::string StageTwoConfig::Describe() const {
  std::string s = std::string("llm=") + LlmModeName(mode);
  if (!UsesLlm()) return s + " (offline policy)";
  s += " url=" + url + " model=" + model + " timeout_ms=" + std::to_string(timeout_ms) +
       " retries=" + std::to_string(max_retries) + " concurrency=" +
       std::to_string(max_concurrency) + " cache=" + (cache_dir.empty() ? "off" : cache_dir) +
       " api key: " + (api_key.empty() ? "unset" : "set");
  return s;
}

Result<std::string> ResolveChatCompletionsUrl(std::string_view base) {
  std::string url(base);
  while (!url.empty() && (url.back() == ' ' || url.back() == '\t')) url.pop_back();
  if (url.empty()) return InvalidArgument("--llm-url is empty");
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
    return InvalidArgument("--llm-url must start with http:// or https://, got '" + url + "'");
  }
  auto ends_with = [&](std::string_view suffix) {
    return url.size() >= suffix.size() &&
           url.compare(url.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with("/chat/completions")) return url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (!ends_with("/v1")) url += "/v1";
  return url + "/chat/completions";
}

bool IsRetryableHttpStatus(long status) noexcept {
  return status == 408 || status == 409 || status == 425 || status == 429 ||
         (status >= 500 && status <= 599);
}

int64_t BackoffDelayMs(const StageTwoConfig& config, int attempt,
                       std::optional<int64_t> retry_after_ms) noexcept {
  const int64_t cap = std::max<int64_t>(0, config.max_backoff_ms);
  if (retry_after_ms.has_value()) return std::clamp<int64_t>(*retry_after_ms, 0, cap);
  int64_t delay = std::max<int64_t>(0, config.initial_backoff_ms);
  for (int i = 0; i < attempt && delay < cap; ++i) delay *= 2;
  return std::min(delay, cap);
}

std::optional<int64_t> ParseRetryAfterSeconds(std::string_view value) noexcept {
  size_t b = 0, e = value.size();
  while (b < e && (value[b] == ' ' || value[b] == '\t')) ++b;
  while (e > b && (value[e - 1] == ' ' || value[e - 1] == '\t' || value[e - 1] == '\r')) --e;
  if (b == e || e - b > 9) return std::nullopt;  // > 9 digits: not a sane delay
  int64_t seconds = 0;
  for (size_t i = b; i < e; ++i) {
    if (value[i] < '0' || value[i] > '9') return std::nullopt;
    seconds = seconds * 10 + (value[i] - '0');
  }
  return seconds * 1000;
}

}  // namespace truffld::diagnose
