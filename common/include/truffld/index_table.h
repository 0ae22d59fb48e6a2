// IndexTable: an open-addressing set of uint32 indices into a vector of keys the caller owns,
// for interning tables (TraceFile's shared extras records and its thread table).
//
// The table holds only indices + 1 (0 marks an empty slot); keys are compared and rehashed
// through the caller's callbacks. Probed linearly, at most half full, rebuilt from the
// caller's keys when it grows or after Reset. Keys come from untrusted input: callers hash them
// with HashBytes and ProcessHashSeed() (string_pool.h), so no input can be crafted against a
// fixed hash.
// Thread-safety: not thread-safe; one per table of keys.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace truffld {

class IndexTable {
 public:
  // `n` is the caller's key count. Returns the index i (first <= i < n) of the key equal to the
  // one looked up (eq(i) true), or n after inserting it: the caller then appends the key at
  // index n. `hash` is the looked-up key's hash, hash_of(i) key i's (for rebuilding).
  template <class Eq, class HashOf>
  uint32_t FindOrInsert(uint64_t hash, uint32_t n, Eq&& eq, HashOf&& hash_of) {
    Fit(n, hash_of);
    const size_t mask = slots_.size() - 1;
    size_t k = hash & mask;
    for (; slots_[k] != 0; k = (k + 1) & mask)
      if (eq(slots_[k] - 1)) return slots_[k] - 1;
    slots_[k] = n + 1;
    return n;
  }
  // The index i of the key equal to the one looked up, or n when there is none (nothing is
  // inserted). Same arguments as FindOrInsert.
  template <class Eq, class HashOf>
  uint32_t Find(uint64_t hash, uint32_t n, Eq&& eq, HashOf&& hash_of) {
    Fit(n, hash_of);
    const size_t mask = slots_.size() - 1;
    for (size_t k = hash & mask; slots_[k] != 0; k = (k + 1) & mask)
      if (eq(slots_[k] - 1)) return slots_[k] - 1;
    return n;
  }
  // Frees the table. From here on it holds the keys from index `first` on, rebuilt from the
  // caller's keys at the next lookup (keys before `first` are no longer found).
  void Reset(uint32_t first) {
    std::vector<uint32_t>().swap(slots_);
    first_ = first;
  }

 private:
  // Keeps the table at most half full with room for one more key (so every probe ends).
  template <class HashOf>
  void Fit(uint32_t n, HashOf& hash_of) {
    if ((size_t(n - first_) + 1) * 2 > slots_.size()) Rebuild(n, hash_of);
  }
  template <class HashOf>
  void Rebuild(uint32_t n, HashOf& hash_of) {
    size_t want = 64;
    while (want < (size_t(n - first_) + 1) * 2) want *= 2;
    slots_.assign(want, 0);
    const size_t mask = want - 1;
    for (uint32_t i = first_; i < n; ++i) {
      size_t k = hash_of(i) & mask;
      while (slots_[k] != 0) k = (k + 1) & mask;
      slots_[k] = i + 1;
    }
  }

  std::vector<uint32_t> slots_;
  uint32_t first_ = 0;
};

}  // namespace truffld
