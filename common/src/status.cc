#include "truffld/status.h"

namespace truffld {

const char* StatusCodeName(StatusCode code) noexcept {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kIoError: return "I/O error";
    case StatusCode::kParseError: return "parse error";
    case StatusCode::kTruncated: return "truncated input";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kLimitExceeded: return "limit exceeded";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kInternal: return "internal error";
  }
  return "unknown status";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out = StatusCodeName(code_);
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  return out;
}

std::string AtLocation(std::string_view file, long long line, std::string_view message) {
  std::string out(file);
  if (line > 0) {
    out += ':';
    out += std::to_string(line);
  }
  out += ": ";
  out += message;
  return out;
}

}  // namespace truffld
