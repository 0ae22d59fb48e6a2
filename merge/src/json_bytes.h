// The bytes a JSON string cannot hold as they are ('"', '\\', controls, and non-ASCII, which
// needs UTF-8 checking), found a word at a time. Shared by the writers' escaper and plain-name
// test (json_out.cc) and the raw-record scanner (raw_fast_scan.cc).
// Pure functions; the caller loads 8 bytes little-endian (memcpy), as on x86-64 and AArch64.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace truffld::merge {

// The high bit is set in each byte of w that is '"', '\\', below 0x20 or 0x80 and above, and
// in no byte before the first such byte: the usual "has a zero byte" tricks may also flag
// bytes after a flagged one (a borrow runs upwards), never before it, so "any flag" and "the
// lowest flag" (on a little-endian load: the first such byte in memory) are both exact.
inline uint64_t JsonSpecialBytes(uint64_t w) {
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  constexpr uint64_t kHighs = 0x8080808080808080ull;
  const uint64_t quote = w ^ (kOnes * '"');
  const uint64_t slash = w ^ (kOnes * '\\');
  return (w | ((w - kOnes * 0x20) & ~w) | ((quote - kOnes) & ~quote) | ((slash - kOnes) & ~slash)) & kHighs;
}

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "JsonSpecialBytes users assume little-endian loads");

// One byte of the same set.
inline bool JsonSpecialByte(unsigned char c) { return c < 0x20 || c >= 0x80 || c == '"' || c == '\\'; }

// Length of the longest prefix of p[0, n) without such a byte (n when there is none).
// 16 bytes at a time where SSE2 is there (every x86-64), then 8, then one.
inline size_t JsonPlainPrefix(const char* p, size_t n) {
  size_t i = 0;
#if defined(__SSE2__)
  // A signed compare with 0x20 takes both the controls and every byte >= 0x80 (negative).
  const __m128i space = _mm_set1_epi8(0x20), quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\');
  for (; i + 16 <= n; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    const __m128i special =
        _mm_or_si128(_mm_cmplt_epi8(v, space), _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, slash)));
    if (const unsigned m = unsigned(_mm_movemask_epi8(special))) return i + size_t(__builtin_ctz(m));
  }
#endif
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    if (const uint64_t m = JsonSpecialBytes(w)) return i + size_t(__builtin_ctzll(m)) / 8;
  }
  while (i < n && !JsonSpecialByte(static_cast<unsigned char>(p[i]))) ++i;
  return i;
}

}  // namespace truffld::merge
