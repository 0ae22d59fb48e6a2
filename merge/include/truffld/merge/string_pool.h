// StringPool: interns strings to dense 32-bit ids so events stay fixed-size.
//
// Id 0 (kNoStr) means "absent"; the empty string has its own id. Views returned by Get stay
// valid for the pool's lifetime (storage is chunked and never moved).
// Thread-safety: not thread-safe; one pool per TraceFile, filled by the importer's thread.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace truffld::merge {

using StrId = uint32_t;
constexpr StrId kNoStr = 0;

class StringPool {
 public:
  StringPool();
  StringPool(StringPool&&) = default;
  StringPool& operator=(StringPool&&) = default;
  StringPool(const StringPool&) = delete;
  StringPool& operator=(const StringPool&) = delete;

  StrId Intern(std::string_view s);
  // The string for id; "" for kNoStr.
  std::string_view Get(StrId id) const { return views_[id]; }
  size_t size() const { return views_.size(); }
  size_t bytes() const { return bytes_; }

 private:
  char* Store(std::string_view s);
  // Arenas for ordinary strings, uninitialised: 64 KiB first (most files hold few distinct
  // strings), then 1 MiB each.
  std::deque<std::unique_ptr<char[]>> chunks_;
  std::deque<std::string> big_;     // strings over 256 KiB, one each
  size_t chunk_used_ = 0;
  size_t chunk_size_ = 0;
  std::deque<std::string_view> views_;
  std::unordered_map<std::string_view, StrId> index_;
  size_t bytes_ = 0;
};

}  // namespace truffld::merge
