// EventRank: the ordinal of an event among a file's events of one kind (its API calls, say), in
// constant time, from a bit per event.
//
// The tree builder keeps a few per-API-call tables (the call's owning range, later its node;
// the range open when a CUDA graph was captured). Indexed by event they took 4 bytes for every
// event of the file, though API calls are a fifth of a dump, and those were fresh pages to
// touch at the merge's busiest moment. Indexed by the call's ordinal they take 4 bytes a call;
// this table turns an event index into that ordinal with one bit per event plus a 32-bit count
// per 64 events (1.5 bits an event): a word load, a mask and a popcount.
// Thread-safety: none inside; built by one thread, then read-only (const calls may race freely).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "truffld/merge/event.h"

namespace truffld::merge {

// Set bits of x. Without -mpopcnt (the portable x86-64 baseline) __builtin_popcountll is a call
// into libgcc; this is the same count in a dozen inline instructions.
inline uint32_t PopCount(uint64_t x) {
#if defined(__POPCNT__) || !defined(__x86_64__)
  return uint32_t(__builtin_popcountll(x));
#else
  x -= (x >> 1) & 0x5555555555555555ull;
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
  return uint32_t((x * 0x0101010101010101ull) >> 56);
#endif
}

class EventRank {
 public:
  // Marks the events for which is_member(event) holds. O(events).
  template <class Pred>
  void Build(const std::vector<Event>& ev, Pred is_member) {
    const size_t words = (ev.size() + 63) / 64;
    bits_.assign(words, 0);
    before_.assign(words, 0);
    uint32_t count = 0;
    for (size_t w = 0; w < words; ++w) {
      before_[w] = count;
      uint64_t b = 0;
      const size_t end = std::min(ev.size(), 64 * w + 64);
      for (size_t i = 64 * w; i < end; ++i)
        if (is_member(ev[i])) b |= uint64_t{1} << (i - 64 * w);
      bits_[w] = b;
      count += PopCount(b);
    }
    size_ = count;
  }
  uint32_t size() const { return size_; }  // members
  // Whether event i is a member (i below the event count given to Build).
  bool Has(uint32_t i) const { return (bits_[i / 64] >> (i % 64)) & 1; }
  // Members before event i: event i's ordinal when Has(i).
  uint32_t Rank(uint32_t i) const {
    const uint64_t below = bits_[i / 64] & ((uint64_t{1} << (i % 64)) - 1);
    return before_[i / 64] + PopCount(below);
  }

 private:
  std::vector<uint64_t> bits_;     // bit i % 64 of word i / 64: event i is a member
  std::vector<uint32_t> before_;   // members in the words before this one
  uint32_t size_ = 0;
};

}  // namespace truffld::merge
