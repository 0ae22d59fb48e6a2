// Cursor: the byte-level reader under FastScan (raw_fast_scan.cc): plain strings, integers read
// a word at a time (SWAR digit checks and conversion), remembered keys compared as masked words.
// Internal to the raw reader. Pure functions on a caller's string; not thread-safe per object.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "truffld/json_escape.h"
#include "importers/raw/raw_fields.h"

namespace truffld::merge::raw {

// Eight ASCII digits in one little-endian word (timestamps have 19): the check and the
// three-multiply conversion are the usual SWAR ones.
// Each byte of the result is 0 where w holds a digit. A carry out of `+ 6` can only disturb
// bytes after a non-digit, so the first non-zero byte (little-endian) is always exact.
inline uint64_t NonDigits(uint64_t w) {
  return ((w & 0xF0F0F0F0F0F0F0F0ull) | (((w + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) >> 4)) ^
         0x3333333333333333ull;
}
inline bool AllDigits(uint64_t w) { return NonDigits(w) == 0; }

constexpr uint64_t kPow10[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};

__attribute__((always_inline)) inline uint64_t EightDigits(uint64_t w) {
  w -= 0x3030303030303030ull;
  w = w * 10 + (w >> 8);
  return (((w & 0x000000FF000000FFull) * (100 + (1000000ull << 32))) +
          (((w >> 16) & 0x000000FF000000FFull) * (1 + (10000ull << 32)))) >> 32;
}

// The first k (1-7) digits of word x, as a number: shifted to the top behind '0' padding.
__attribute__((always_inline)) inline uint64_t HeadDigits(uint64_t x, unsigned k) {
  return EightDigits((x << (64 - 8 * k)) | (0x3030303030303030ull >> (8 * k)));
}

class Cursor {
 public:
  explicit Cursor(std::string_view s) : p_(s.data()), end_(s.data() + s.size()) {}

  bool Eat(char c) {
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  bool AtEnd() const { return p_ == end_; }
  const char* pos() const { return p_; }
  size_t left() const { return size_t(end_ - p_); }
  void Skip(size_t n) { p_ += n; }  // n <= left()
  char Peek() const { return p_ == end_ ? '\0' : *p_; }

  // After the opening quote: a string of printable ASCII without escapes, up to its closing
  // quote (consumed). False for anything else.
  __attribute__((always_inline)) bool PlainString(std::string_view* out) {
    const char* s = p_;
    const char* q = s + JsonPlainPrefix(s, size_t(end_ - s));
    return q != end_ && Close(s, q, out);
  }

  // -?(0|[1-9][0-9]*) that fits int64, followed by ',', '}' or ']' (not consumed).
  __attribute__((always_inline)) bool Integer(int64_t* out) {
    const bool neg = Eat('-');
    if (end_ - p_ >= 24) return WordInteger(neg, out);
    const char* s = p_;
    uint64_t v = 0;  // wraps beyond 19 digits, which are refused below
    uint64_t w = 0;
    for (; end_ - p_ >= 8 && (std::memcpy(&w, p_, 8), AllDigits(w)); p_ += 8)
      v = v * 100000000 + EightDigits(w);
    if (end_ - p_ >= 8) {
      // The 0-7 digits left, in one go.
      const unsigned n = unsigned(__builtin_ctzll(NonDigits(w))) / 8;  // not all digits: non-zero
      if (n) {
        v = v * kPow10[n] + HeadDigits(w, n);
        p_ += n;
      }
    } else {
      while (p_ != end_ && unsigned(*p_ - '0') < 10) v = v * 10 + unsigned(*p_++ - '0');
    }
    const size_t digits = size_t(p_ - s);
    if (digits == 0 || digits > 19 || (digits > 1 && *s == '0')) return false;
    const char c = Peek();
    if (c != ',' && c != '}' && c != ']') return false;
    if (v > uint64_t(INT64_MAX) + (neg ? 1 : 0)) return false;
    *out = neg ? int64_t(0 - v) : int64_t(v);
    return true;
  }

  // Integer's common case, with 24 bytes or more left: up to 19 digits lie in the three words
  // at the cursor, and the byte after the last digit too. Each word is checked and converted
  // once, without a loop: timestamps (19 digits) are most of a dump's integers.
  __attribute__((always_inline)) bool WordInteger(bool neg, int64_t* out) {
    uint64_t w[3];
    std::memcpy(w, p_, sizeof w);
    const uint64_t n0 = NonDigits(w[0]);
    uint64_t v;
    unsigned digits;
    uint64_t next;  // the word holding the byte after the digits, that byte at the bottom
    if (n0) {
      digits = unsigned(__builtin_ctzll(n0)) / 8;
      if (digits == 0) return false;
      v = HeadDigits(w[0], digits);
      next = w[0] >> (8 * digits);
    } else if (const uint64_t n1 = NonDigits(w[1])) {
      const unsigned k = unsigned(__builtin_ctzll(n1)) / 8;
      v = EightDigits(w[0]);
      if (k) v = v * kPow10[k] + HeadDigits(w[1], k);
      digits = 8 + k;
      next = w[1] >> (8 * k);
    } else {
      const uint64_t n2 = NonDigits(w[2]);
      const unsigned k = n2 ? unsigned(__builtin_ctzll(n2)) / 8 : 8;
      if (k > 3) return false;  // over 19 digits
      v = EightDigits(w[0]) * 100000000 + EightDigits(w[1]);
      if (k) v = v * kPow10[k] + HeadDigits(w[2], k);  // 19 digits: below 2^64, checked below
      digits = 16 + k;
      next = w[2] >> (8 * k);
    }
    // The same checks as Integer's last lines, written out again: a shared helper for both cost
    // 0.6 % more instructions on a whole merge (callgrind, 1 M dump).
    if (digits > 1 && *p_ == '0') return false;
    const char c = char(next & 0xFF);
    if (c != ',' && c != '}' && c != ']') return false;
    if (v > uint64_t(INT64_MAX) + (neg ? 1 : 0)) return false;
    p_ += digits;
    *out = neg ? int64_t(0 - v) : int64_t(v);
    return true;
  }

  // The bytes at the cursor are k's text: consumed, true.
  __attribute__((always_inline)) bool Match(const KeyMemo::Key& k) {
    const size_t n = k.len;
    if (size_t(end_ - p_) >= sizeof k.text) {
      // As many words as the key fills (most keys, quotes and colon included, fit in one or two).
      uint64_t w[4];
      std::memcpy(w, p_, sizeof w);
      uint64_t diff = (w[0] ^ k.text[0]) & k.mask[0];
      if (n > 8) {
        diff |= (w[1] ^ k.text[1]) & k.mask[1];
        if (n > 16) diff |= ((w[2] ^ k.text[2]) & k.mask[2]) | ((w[3] ^ k.text[3]) & k.mask[3]);
      }
      if (diff) return false;
    } else if (size_t(end_ - p_) < n || std::memcmp(p_, k.text, n) != 0) {
      return false;
    }
    p_ += n;
    return true;
  }

  template <size_t N>
  bool Literal(const char (&lit)[N]) {
    if (size_t(end_ - p_) < N - 1 || std::memcmp(p_, lit, N - 1) != 0) return false;
    p_ += N - 1;
    return true;
  }

 private:
  bool Close(const char* s, const char* q, std::string_view* out) {
    if (*q != '"') return false;  // an escape, a control or non-ASCII byte: not plain
    *out = std::string_view(s, size_t(q - s));
    p_ = q + 1;
    return true;
  }

  const char* p_;
  const char* end_;
};

}  // namespace truffld::merge::raw
