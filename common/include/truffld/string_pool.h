// StringPool: interns strings to dense 32-bit ids so events stay fixed-size.
//
// Id 0 (kNoStr) means "absent"; the empty string has its own id. Views returned by Get stay
// valid for the pool's lifetime (storage is chunked and never moved).
// Every record of a dump interns one to three strings (name, NVTX domain, category), and
// profilers name each operator call differently, so the pool is on the import's hot path: an
// open-addressing table of (hash tag, id) words, probed linearly, with the strings compared
// only on a tag match; no allocation per string beyond the arena bytes.
// Thread-safety: not thread-safe; one pool per TraceFile, filled by the importer's thread.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace truffld {

using StrId = uint32_t;
constexpr StrId kNoStr = 0;

// 64-bit hash of a byte string (multiply-fold mixing, 16 bytes a round), for hash tables whose
// keys come from untrusted input: `seed` varies per process.
uint64_t HashBytes(std::string_view s, uint64_t seed) noexcept;
// The same mixing over n 64-bit words (records hashed field by field, without copying them into
// bytes first).
uint64_t HashWords(const uint64_t* w, size_t n, uint64_t seed) noexcept;
// The seed for such tables: from the address-space layout, so no two runs hash alike. Outputs
// never depend on it (the tables give indices in first-seen order).
uint64_t ProcessHashSeed() noexcept;

class StringPool {
 public:
  StringPool();
  StringPool(StringPool&&) = default;
  StringPool& operator=(StringPool&&) = default;
  StringPool(const StringPool&) = delete;
  StringPool& operator=(const StringPool&) = delete;

  StrId Intern(std::string_view s);
  // Stores `s` under a new id without looking it up or entering it for later lookups: for
  // strings that are nearly all distinct and only ever read back by id (a Kineto event's args
  // object), where hashing would cost time and save nothing.
  StrId Add(std::string_view s);
  // The string for id; "" for kNoStr.
  std::string_view Get(StrId id) const { return views_[id]; }
  size_t size() const { return views_.size(); }
  size_t bytes() const { return bytes_; }

 private:
  char* Store(std::string_view s);
  void Grow();
  // Arenas for ordinary strings, uninitialised: 64 KiB first (most files hold few distinct
  // strings), then 1 MiB each.
  std::deque<std::unique_ptr<char[]>> chunks_;
  std::deque<std::string> big_;     // strings over 256 KiB, one each
  size_t chunk_used_ = 0;
  size_t chunk_size_ = 0;
  std::vector<std::string_view> views_;  // by id; the views point into the arenas
  // Slots: 0 empty, else (upper 32 bits of the string's hash) << 32 | id. Size a power of two,
  // at most half full.
  std::vector<uint64_t> slots_;
  size_t interned_ = 0;  // ids in slots_
  uint64_t seed_ = 0;
  size_t bytes_ = 0;
};

}  // namespace truffld
