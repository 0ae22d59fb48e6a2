// JSON string escaping: the one routine every truffld writer uses (injector, merge, synth,
// diagnose), so every JSON file truffld writes is strictly valid UTF-8 whatever the names held.
//
// Rules (RFC 8259, output stable since the first merge release): '"' and '\\' are escaped with
// a backslash; \n, \r and \t by their short forms; other bytes below 0x20 as \u00xx (lowercase
// hex); valid UTF-8 (truffld/utf8.h: no overlong forms, surrogates or code points above
// U+10FFFF) is copied as is; every byte that does not start a valid sequence becomes the escape
// \ufffd. Plain runs are found 16 bytes at a time with SSE2 (a last, overlapping 16 for the
// rest), 8 with a word trick elsewhere.
// Header-only (the injector links nothing). Pure functions; thread-safe. Little-endian loads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "truffld/utf8.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace truffld {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the JSON scanners assume little-endian loads");

// The high bit is set in each byte of w that is '"', '\\', below 0x20 or 0x80 and above, and in
// no byte before the first such byte (a borrow may flag bytes after a flagged one, never before
// it), so "any flag" and "the lowest flag" (the first such byte in memory) are both exact.
inline uint64_t JsonSpecialBytes(uint64_t w) noexcept {
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  constexpr uint64_t kHighs = 0x8080808080808080ull;
  const uint64_t quote = w ^ (kOnes * '"');
  const uint64_t slash = w ^ (kOnes * '\\');
  return (w | ((w - kOnes * 0x20) & ~w) | ((quote - kOnes) & ~quote) | ((slash - kOnes) & ~slash)) & kHighs;
}

// One byte of the same set.
inline bool JsonSpecialByte(unsigned char c) noexcept { return c < 0x20 || c >= 0x80 || c == '"' || c == '\\'; }

// Length of the longest prefix of p[0, n) without such a byte (n when there is none).
inline size_t JsonPlainPrefix(const char* p, size_t n) noexcept {
  size_t i = 0;
#if defined(__SSE2__)
  // A signed compare with 0x20 takes both the controls and every byte >= 0x80 (negative).
  const __m128i space = _mm_set1_epi8(0x20), quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\');
  auto special_at = [&](const char* q) {  // one bit per special byte of q[0, 16)
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    return unsigned(_mm_movemask_epi8(
        _mm_or_si128(_mm_cmplt_epi8(v, space), _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, slash)))));
  };
  for (; i + 16 <= n; i += 16) {
    if (const unsigned m = special_at(p + i)) return i + size_t(__builtin_ctz(m));
  }
  if (i < n && n >= 16) {  // the rest in one load of the last 16 bytes, overlapping those checked
    const unsigned m = special_at(p + n - 16) >> (i - (n - 16));  // bytes from i on
    return m ? i + size_t(__builtin_ctz(m)) : n;
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

// True when `s` can be written between quotes as it is (printable ASCII, no '"' or '\\').
inline bool JsonNeedsNoEscape(std::string_view s) noexcept { return JsonPlainPrefix(s.data(), s.size()) == s.size(); }

// The most bytes EscapeJsonTo writes for n input bytes.
constexpr size_t JsonEscapedBound(size_t n) { return 6 * n; }

// Writes s escaped (without quotes) at dst, which has room for JsonEscapedBound(s.size())
// bytes; returns the end of what was written.
inline char* EscapeJsonTo(char* dst, std::string_view s) noexcept {
  static constexpr char kHex[] = "0123456789abcdef";
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const size_t run = i + JsonPlainPrefix(s.data() + i, n - i);  // copied as is
    std::memcpy(dst, p + i, run - i);
    dst += run - i;
    i = run;
    if (i >= n) break;
    const unsigned char c = p[i];
    if (c < 0x80) {
      *dst++ = '\\';
      switch (c) {
        case '"': *dst++ = '"'; break;
        case '\\': *dst++ = '\\'; break;
        case '\n': *dst++ = 'n'; break;
        case '\r': *dst++ = 'r'; break;
        case '\t': *dst++ = 't'; break;
        default:
          std::memcpy(dst, "u00", 3);
          dst[3] = kHex[c >> 4];
          dst[4] = kHex[c & 15];
          dst += 5;
      }
      ++i;
      continue;
    }
    const size_t len = Utf8SequenceLength(p + i, n - i);
    if (len) {
      std::memcpy(dst, p + i, len);
      dst += len;
      i += len;
    } else {
      std::memcpy(dst, "\\ufffd", 6);
      dst += 6;
      ++i;
    }
  }
  return dst;
}

// Appends `s` escaped, without quotes, to *out.
inline void AppendJsonEscaped(std::string* out, std::string_view s) {
  const size_t old = out->size();
  out->resize(old + JsonEscapedBound(s.size()));
  char* end = EscapeJsonTo(out->data() + old, s);
  out->resize(size_t(end - out->data()));
}

// Appends `s` as a JSON string literal (with quotes) to *out.
inline void AppendJsonString(std::string* out, std::string_view s) {
  out->push_back('"');
  AppendJsonEscaped(out, s);
  out->push_back('"');
}

// `s` escaped, without quotes.
inline std::string JsonEscaped(std::string_view s) {
  std::string out;
  AppendJsonEscaped(&out, s);
  return out;
}

// The value of the 4 hex digits at p (-1 when they are not hex).
inline int32_t Hex4(const char* p) noexcept {
  int32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    const char c = p[i];
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

// Rewrites, in place, every \uXXXX escape of JSON text that is half a UTF-16 surrogate pair
// without its other half (what Python's json writes for undecodable bytes, "\udcff") as
// \ufffd, so a strict parser reads U+FFFD instead of rejecting the document; returns how many.
// A high surrogate followed by a low one is a pair and stays. Same length: offsets keep.
inline size_t ReplaceLoneSurrogateEscapes(std::string* json) {
  size_t replaced = 0;
  char* p = json->data();
  const size_t n = json->size();
  auto escape_at = [&](size_t i) { return i + 6 <= n && p[i] == '\\' && p[i + 1] == 'u' ? Hex4(p + i + 2) : -1; };
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != '\\') continue;
    const int32_t u = escape_at(i);
    if (u < 0) {
      ++i;  // another escape (\\, \", ...): its second byte is no escape start
      continue;
    }
    if (u >= 0xD800 && u <= 0xDBFF) {
      const int32_t next = escape_at(i + 6);
      if (next >= 0xDC00 && next <= 0xDFFF) {
        i += 11;  // a pair
        continue;
      }
    }
    if (u >= 0xD800 && u <= 0xDFFF) {
      std::memcpy(p + i + 2, "fffd", 4);
      ++replaced;
    }
    i += 5;
  }
  return replaced;
}

}  // namespace truffld
