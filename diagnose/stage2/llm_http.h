// The only place truffld talks HTTP: a thin POST-JSON adapter over libcurl, behind an interface
// so the Stage II logic never sees a libcurl type (and tests can count or fake calls).
//
// The bearer token is put in the Authorization header and nowhere else: not in error messages,
// not in logs (libcurl verbose mode is never enabled).
// Thread-safety: LlmTransport::Post must be safe to call from several threads at once; the curl
// implementation uses one easy handle per call and initialises libcurl globally exactly once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "truffld/status.h"

namespace truffld::diagnose {

struct HttpRequest {
  std::string url;           // full URL (see ResolveChatCompletionsUrl)
  std::string body;          // JSON text, sent with Content-Type: application/json
  std::string bearer_token;  // "" = no Authorization header; secret, never echoed
  int64_t timeout_ms = 60'000;  // whole transfer, wall clock
};

struct HttpReply {
  long status = 0;                         // HTTP status code
  std::string body;
  std::optional<int64_t> retry_after_ms;   // from a Retry-After header (seconds or HTTP-date)
};

class LlmTransport {
 public:
  virtual ~LlmTransport() = default;
  // A reply for any HTTP status; a non-ok Status (kUnavailable) only when no HTTP reply arrived:
  // connection refused, DNS, TLS, timeout ("timed out after N ms"), ...
  virtual Result<HttpReply> Post(const HttpRequest& request) = 0;
};

std::shared_ptr<LlmTransport> MakeCurlTransport();

}  // namespace truffld::diagnose
