// Small pure helpers around StageTwoConfig: endpoint URL resolution and retry backoff.
//
// Kept apart from the HTTP adapter so they are unit-tested without a network.
// Thread-safety: all functions are reentrant. Times are milliseconds of wall-clock delay.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stage2/llm_stage2.h"

namespace truffld::diagnose {

// Base URL -> full chat-completions URL. Accepts "http://h:p", "http://h:p/", "http://h:p/v1",
// "http://h:p/v1/" and a URL whose path already ends in "/chat/completions" (kept as is). The
// path is completed before any query string ("https://x.openai.azure.com/openai/deployments/d
// ?api-version=2024-06-01" -> ".../openai/deployments/d/chat/completions?api-version=..."; an
// Azure deployment path gets no "/v1"); a fragment is dropped; credentials (user:password@) are
// kept for the request. kInvalidArgument for an empty URL or one without "http://" / "https://"
// and a host (the message shows the URL redacted).
Result<std::string> ResolveChatCompletionsUrl(std::string_view base);

// The URL as it may be shown (stats.json, report.html, messages): user:password@ becomes
// "[redacted]@" and the value of every query parameter but api-version becomes "[redacted]".
std::string RedactUrl(std::string_view url);

// The secret pieces of a URL (user:password, its base64 form as sent in an Authorization: Basic
// header, the password, query values RedactUrl hides), for
// scrubbing any text that might echo them. Empty when there are none.
std::vector<std::string> UrlSecrets(std::string_view url);

// HTTP statuses worth another attempt: 408, 409, 425, 429 and every 5xx.
bool IsRetryableHttpStatus(long status) noexcept;

// Delay before retry number `attempt` (0 = first retry): the server's Retry-After when it gave
// one, else initial_backoff_ms * 2^attempt; both capped at max_backoff_ms, never negative.
int64_t BackoffDelayMs(const StageTwoConfig& config, int attempt,
                       std::optional<int64_t> retry_after_ms) noexcept;

// A Retry-After value given in delta-seconds ("3", " 120 ") -> milliseconds; nullopt otherwise
// (HTTP-dates are converted by the HTTP adapter, which has a clock).
std::optional<int64_t> ParseRetryAfterSeconds(std::string_view value) noexcept;

}  // namespace truffld::diagnose
