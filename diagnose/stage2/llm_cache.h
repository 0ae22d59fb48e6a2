// On-disk cache of validated model answers, so re-running truffld-diagnose on the same trace with
// the same model and prompt costs no request at all.
//
// Key: SHA-256 of (model, NUL, the first request body in json_schema mode). The body holds the
// system prompt, the step summary, temperature, seed and max_tokens, so changing any of them is a
// miss; it never holds the API key (that travels in a header), so nothing secret reaches disk.
// One file per answer: <dir>/<key>.json = {"version":1,"model":...,"content":...}, written to a
// temporary file and renamed, so concurrent writers and crashes never leave a torn entry.
// Thread-safety: Lookup/Store may be called concurrently from several threads and processes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "truffld/status.h"

namespace truffld::diagnose {

// Lower-case hex SHA-256 (FIPS 180-4) of `data`. Pure.
std::string Sha256Hex(std::string_view data);

class AnswerCache {
 public:
  explicit AnswerCache(std::string dir) : dir_(std::move(dir)) {}

  static std::string Key(std::string_view model, std::string_view request_body);

  // The cached model content for `key`, or nullopt (missing, unreadable or corrupt entries are
  // misses; a corrupt entry is overwritten by the next Store).
  std::optional<std::string> Lookup(const std::string& key) const;
  // Creates the directory when needed. kIoError naming the path on failure.
  Status Store(const std::string& key, std::string_view model, std::string_view content) const;

  const std::string& dir() const noexcept { return dir_; }

 private:
  std::string PathFor(const std::string& key) const;
  std::string dir_;
};

}  // namespace truffld::diagnose
