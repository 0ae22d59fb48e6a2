// One way to combine hashes in diagnose: splitmix64's finaliser over each input. Used for work
// signatures, positions and the grouping keys of peer comparisons, where keys built from small
// integers (unit indices, occurrences) must not collide. Internal header; pure.
#pragma once

#include <cstdint>
#include <string_view>

namespace truffld::diagnose::detail {

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Order-dependent combination: Mix(Mix(a, b), c) differs from Mix(Mix(a, c), b).
inline uint64_t Mix(uint64_t h, uint64_t v) { return SplitMix64(h ^ SplitMix64(v)); }

// FNV-1a over the bytes of a string.
inline uint64_t HashText(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

}  // namespace truffld::diagnose::detail
