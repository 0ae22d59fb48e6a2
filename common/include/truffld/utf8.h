// Strict UTF-8: the one validation rule every truffld stage applies to text it reads or writes.
//
// A sequence is valid when it is the shortest form of a Unicode scalar value (RFC 3629): no
// overlong forms (C0 80, E0 80 80, F0 80 80 80), no UTF-16 surrogates (ED A0 80 - ED BF BF), no
// code point above U+10FFFF (F4 90 80 80 and up), no stray continuation bytes, no truncated
// sequences. Repairing replaces each byte that does not start a valid sequence with U+FFFD and
// goes on with the next byte (what truffld-merge has always done, so outputs stay stable).
// Header-only so the injector (a shared library loaded into applications) uses the same rule
// without linking anything. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace truffld {

// Length (1-4) of the valid UTF-8 sequence at p[0, n), or 0 when the bytes there do not start
// one (n == 0 included).
inline size_t Utf8SequenceLength(const unsigned char* p, size_t n) noexcept {
  if (n == 0) return 0;
  const unsigned char c = p[0];
  if (c < 0x80) return 1;
  const size_t len = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (len == 0 || len > n) return 0;
  uint32_t cp = len == 2 ? (c & 0x1Fu) : len == 3 ? (c & 0x0Fu) : (c & 0x07u);
  for (size_t k = 1; k < len; ++k) {
    if ((p[k] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[k] & 0x3Fu);
  }
  const bool ok = (len == 2 && cp >= 0x80) || (len == 3 && cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF)) ||
                  (len == 4 && cp >= 0x10000 && cp <= 0x10FFFF);
  return ok ? len : 0;
}
inline size_t Utf8SequenceLength(std::string_view s, size_t i) noexcept {
  return i < s.size() ? Utf8SequenceLength(reinterpret_cast<const unsigned char*>(s.data()) + i, s.size() - i) : 0;
}

// True when every byte of s belongs to a valid sequence.
inline bool IsValidUtf8(std::string_view s) noexcept {
  for (size_t i = 0; i < s.size();) {
    const size_t len = Utf8SequenceLength(s, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

// U+FFFD as UTF-8.
inline constexpr std::string_view kReplacementUtf8 = "\xEF\xBF\xBD";

// Valid UTF-8 copy of the first max_bytes bytes of `s` (each bad byte becomes U+FFFD; a
// character that does not fit whole is left out). `*replaced` (when given) counts bad bytes.
inline std::string RepairedUtf8(std::string_view s, size_t max_bytes = std::string::npos, size_t* replaced = nullptr) {
  std::string out;
  out.reserve(s.size() < max_bytes ? s.size() : max_bytes);
  size_t bad = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t len = Utf8SequenceLength(s, i);
    if (i + (len ? len : 1) > max_bytes) break;
    if (len) {
      out.append(s.data() + i, len);
      i += len;
    } else {
      out.append(kReplacementUtf8);
      ++bad;
      ++i;
    }
  }
  if (replaced) *replaced = bad;
  return out;
}

// Replaces every byte of *s that does not start a valid sequence with U+FFFD, in place;
// returns how many were replaced (0: *s is untouched).
inline size_t RepairUtf8(std::string* s) {
  if (IsValidUtf8(*s)) return 0;
  size_t bad = 0;
  *s = RepairedUtf8(*s, std::string::npos, &bad);
  return bad;
}

}  // namespace truffld
