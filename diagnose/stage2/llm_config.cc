// StageTwoConfig helpers: mode parsing, environment, validation, URL and backoff arithmetic.
#include "stage2/llm_config.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

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
  ReadEnvInt("TRUFFLD_LLM_BREAKER_FAILURES", 0, 1'000'000, &c.breaker_failures, &c.env_error);
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
  if (breaker_failures < 0) return InvalidArgument("LLM circuit breaker failures must be >= 0");
  return Status::Ok();
}

std::string StageTwoConfig::Describe() const {
  std::string s = std::string("llm=") + LlmModeName(mode);
  if (!UsesLlm()) return s + " (offline policy)";
  s += " url=" + RedactUrl(url) + " model=" + model + " timeout_ms=" + std::to_string(timeout_ms) +
       " retries=" + std::to_string(max_retries) + " concurrency=" +
       std::to_string(max_concurrency) + " cache=" + (cache_dir.empty() ? "off" : cache_dir) +
       " api key: " + (api_key.empty() ? "unset" : "set");
  return s;
}

namespace {

// "scheme://[userinfo@]host[:port][/path][?query][#fragment]" in parts (no percent-decoding:
// parts are kept exactly as given and put back together as such).
struct UrlParts {
  std::string scheme;    // "http" / "https" (as written)
  std::string userinfo;  // "user:password" (without '@'), "" when absent
  bool has_userinfo = false;
  std::string host;      // host[:port]
  std::string path;      // from the first '/' after the host, "" when absent
  std::string query;     // after '?', without it
  bool has_query = false;
};

std::string Trimmed(std::string_view url) {
  size_t b = 0, e = url.size();
  while (b < e && (url[b] == ' ' || url[b] == '\t')) ++b;
  while (e > b && (url[e - 1] == ' ' || url[e - 1] == '\t' || url[e - 1] == '\r' || url[e - 1] == '\n')) --e;
  return std::string(url.substr(b, e - b));
}

// nullopt when `url` has no "scheme://".
std::optional<UrlParts> SplitUrl(const std::string& url) {
  const size_t colon = url.find("://");
  if (colon == std::string::npos || colon == 0) return std::nullopt;
  UrlParts u;
  u.scheme = url.substr(0, colon);
  std::string rest = url.substr(colon + 3);
  if (size_t hash = rest.find('#'); hash != std::string::npos) rest.resize(hash);  // never sent
  const size_t auth_end = std::min(rest.find_first_of("/?"), rest.size());
  std::string authority = rest.substr(0, auth_end);
  if (size_t at = authority.rfind('@'); at != std::string::npos) {
    u.userinfo = authority.substr(0, at);
    u.has_userinfo = true;
    authority = authority.substr(at + 1);
  }
  u.host = authority;
  std::string tail = rest.substr(auth_end);
  if (size_t q = tail.find('?'); q != std::string::npos) {
    u.query = tail.substr(q + 1);
    u.has_query = true;
    tail.resize(q);
  }
  u.path = tail;
  return u;
}

std::string JoinUrl(const UrlParts& u) {
  return u.scheme + "://" + (u.has_userinfo ? u.userinfo + "@" : "") + u.host + u.path +
         (u.has_query ? "?" + u.query : "");
}

// Query parameters shown as given; every other value may be a credential (key, code, sig, ...).
bool PublicQueryParameter(std::string_view name) { return name == "api-version" || name == "api_version"; }

constexpr const char* kRedacted = "[redacted]";

// RFC 4648 base64 with padding: how user:password travels in an Authorization: Basic header.
std::string Base64(std::string_view in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t v = static_cast<unsigned char>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
    if (i + 2 < in.size()) v |= static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kAlphabet[v & 63] : '=';
  }
  return out;
}

}  // namespace

std::string RedactUrl(std::string_view url) {
  std::string text = Trimmed(url);
  std::optional<UrlParts> u = SplitUrl(text);
  if (!u) {  // no scheme: still hide what looks like credentials
    if (size_t at = text.find('@'); at != std::string::npos) text = kRedacted + text.substr(at);
    if (size_t q = text.find('?'); q != std::string::npos) text = text.substr(0, q + 1) + kRedacted;
    return text;
  }
  if (u->has_userinfo) u->userinfo = kRedacted;
  if (u->has_query) {
    std::string query;
    for (size_t pos = 0; pos <= u->query.size();) {
      size_t amp = u->query.find('&', pos);
      if (amp == std::string::npos) amp = u->query.size();
      const std::string item = u->query.substr(pos, amp - pos);
      const size_t eq = item.find('=');
      const std::string name = item.substr(0, eq);
      if (pos > 0) query += '&';
      if (item.empty() || (eq != std::string::npos && PublicQueryParameter(name))) query += item;
      else query += eq == std::string::npos ? std::string(kRedacted) : name + "=" + kRedacted;
      pos = amp + 1;
    }
    u->query = query;
  }
  return JoinUrl(*u);
}

std::vector<std::string> UrlSecrets(std::string_view url) {
  std::vector<std::string> secrets;
  std::optional<UrlParts> u = SplitUrl(Trimmed(url));
  if (!u) return secrets;
  if (u->has_userinfo && !u->userinfo.empty()) {
    secrets.push_back(u->userinfo);
    secrets.push_back(Base64(u->userinfo));  // as a server echoing Authorization: Basic shows it
    if (size_t colon = u->userinfo.find(':'); colon != std::string::npos && colon + 1 < u->userinfo.size()) {
      secrets.push_back(u->userinfo.substr(colon + 1));
    }
  }
  size_t pos = 0;
  while (u->has_query && pos <= u->query.size()) {
    size_t amp = u->query.find('&', pos);
    if (amp == std::string::npos) amp = u->query.size();
    const std::string item = u->query.substr(pos, amp - pos);
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      if (!item.empty()) secrets.push_back(item);
    } else if (eq + 1 < item.size() && !PublicQueryParameter(item.substr(0, eq))) {
      secrets.push_back(item.substr(eq + 1));
    }
    pos = amp + 1;
  }
  return secrets;
}

Result<std::string> ResolveChatCompletionsUrl(std::string_view base) {
  const std::string url = Trimmed(base);
  if (url.empty()) return InvalidArgument("--llm-url is empty");
  std::optional<UrlParts> u = SplitUrl(url);
  if (!u || (u->scheme != "http" && u->scheme != "https") || u->host.empty()) {
    return InvalidArgument("--llm-url must start with http:// or https:// and name a host, got '" + RedactUrl(url) + "'");
  }
  auto ends_with = [&](std::string_view suffix) {
    return u->path.size() >= suffix.size() &&
           u->path.compare(u->path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (!ends_with("/chat/completions")) {
    while (!u->path.empty() && u->path.back() == '/') u->path.pop_back();
    // OpenAI-style servers answer under /v1; Azure's deployment URLs have no version segment.
    if (!ends_with("/v1") && u->path.find("/deployments/") == std::string::npos) u->path += "/v1";
    u->path += "/chat/completions";
  }
  return JoinUrl(*u);
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
