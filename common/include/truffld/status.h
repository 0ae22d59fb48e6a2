// Status and Result<T>: how truffld reports what stopped a piece of work.
//
// No exception crosses a module boundary: functions that can fail return a Status (or a
// Result<T> holding either a value or a non-ok Status). Codes form a closed enum, each with a
// fixed human-readable description (simdjson style); the message carries the specifics, and by
// convention names the file and line ("trace.jsonl:17: ...") when the failure has a location.
// Thread-safety: plain values; safe to copy and move across threads.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace truffld {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument,  // caller passed something unusable (bad flag, bad regex)
  kNotFound,         // a file or entity does not exist
  kIoError,          // open/read/write failed at the OS level
  kParseError,       // input is not in the expected format
  kTruncated,        // input ended in the middle of a record
  kUnsupported,      // well-formed input we do not handle (unknown version, codec)
  kLimitExceeded,    // a configured bound was hit (memory, line length)
  kUnavailable,      // an external service (CUPTI, HTTP endpoint) cannot be used
  kInternal,         // a bug in truffld
};

// Fixed description of a code, e.g. "parse error". Never null.
const char* StatusCodeName(StatusCode code) noexcept;

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const noexcept { return code_ == StatusCode::kOk; }
  StatusCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }
  // "parse error: trace.jsonl:3: expected '}'"; "ok" when ok.
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status ParseError(std::string m) { return {StatusCode::kParseError, std::move(m)}; }
inline Status Truncated(std::string m) { return {StatusCode::kTruncated, std::move(m)}; }
inline Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
inline Status LimitExceeded(std::string m) { return {StatusCode::kLimitExceeded, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// Either a T or a non-ok Status. Accessing value() of an error is a bug (asserts in debug).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}                   // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {             // NOLINT: implicit by design
    assert(!status_.ok() && "Result built from an ok Status carries no value");
    if (status_.ok()) status_ = Internal("Result constructed from ok status without value");
  }

  bool ok() const noexcept { return value_.has_value(); }
  const Status& status() const noexcept { return status_; }
  T& value() & { assert(ok()); return *value_; }
  const T& value() const& { assert(ok()); return *value_; }
  T&& value() && { assert(ok()); return std::move(*value_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

// Prefix a location ("file:line: ") onto a message.
std::string AtLocation(std::string_view file, long long line, std::string_view message);

}  // namespace truffld

// Propagate a non-ok Status from an expression returning Status.
#define TRUFFLD_RETURN_IF_ERROR(expr)              \
  do {                                             \
    ::truffld::Status truffld_status_ = (expr);    \
    if (!truffld_status_.ok()) return truffld_status_; \
  } while (0)
