// Terminal-safe text (see terminal_text.h).
#include "truffld/terminal_text.h"

#include <cstdint>
#include <cstdio>

namespace truffld {
namespace {

// Length of the valid UTF-8 sequence starting at text[i], or 0 when the bytes there are not one
// (overlong forms, surrogates and code points past U+10FFFF are invalid).
size_t Utf8Length(std::string_view text, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char c = b(0);
  size_t n = 0;
  uint32_t cp = 0;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) { n = 2; cp = c & 0x1F; }
  else if (c >= 0xE0 && c <= 0xEF) { n = 3; cp = c & 0x0F; }
  else if (c >= 0xF0 && c <= 0xF4) { n = 4; cp = c & 0x07; }
  else return 0;
  if (i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))) {
    return 0;
  }
  return n;
}

// The code point of the valid n-byte UTF-8 sequence at text[i].
uint32_t CodePoint(std::string_view text, size_t i, size_t n) {
  static constexpr unsigned char kLead[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  uint32_t cp = static_cast<unsigned char>(text[i]) & kLead[n];
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
  return cp;
}

// Code points shown as escapes although valid: C1 controls, the bidirectional controls (U+061C,
// U+200E/U+200F, U+202A..U+202E, U+2066..U+2069: a U+202E makes a name read backwards) and the
// invisible format characters that make two different names look the same (soft hyphen, zero
// width space, word joiner and invisible operators, deprecated format controls, BOM,
// interlinear annotation, tags). ZWNJ/ZWJ (U+200C/U+200D), which scripts and emoji need, are kept.
bool EscapedCodePoint(uint32_t cp) {
  static constexpr uint32_t kRanges[][2] = {
      {0x80, 0x9F},     {0xAD, 0xAD},     {0x61C, 0x61C},   {0x180E, 0x180E},   {0x200B, 0x200B},
      {0x200E, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x2064}, {0x2066, 0x206F},   {0xFEFF, 0xFEFF},
      {0xFFF9, 0xFFFB}, {0xE0001, 0xE0001}, {0xE0020, 0xE007F}};
  for (const auto& r : kRanges)
    if (cp >= r[0] && cp <= r[1]) return true;
  return false;
}

void AppendHex(std::string* out, const char* prefix, unsigned value, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%s%0*x", prefix, digits, value);
  *out += buf;
}

}  // namespace

std::string EscapeForTerminal(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F) {
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        case 0x1B: out += "\\e"; break;
        default: AppendHex(&out, "\\x", c, 2);
      }
      ++i;
      continue;
    }
    if (c == '\\') { out += "\\\\"; ++i; continue; }
    const size_t n = Utf8Length(text, i);
    if (n == 0) { AppendHex(&out, "\\x", c, 2); ++i; continue; }
    if (const uint32_t cp = CodePoint(text, i, n); EscapedCodePoint(cp)) {
      if (cp > 0xFFFF) AppendHex(&out, "\\U", cp, 8);
      else AppendHex(&out, "\\u", cp, 4);
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
  return out;
}

std::string EscapeLinesForTerminal(std::string_view text) {
  std::string out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    out += EscapeForTerminal(text.substr(0, nl)) + "\n";
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  return out;
}

size_t DisplayWidth(std::string_view text) {
  size_t width = 0;
  for (size_t i = 0; i < text.size(); ++width) {
    const size_t n = Utf8Length(text, i);
    i += n == 0 ? 1 : n;
  }
  return width;
}

std::string TruncateForDisplay(std::string_view text, size_t max_width) {
  if (DisplayWidth(text) <= max_width) return std::string(text);
  if (max_width == 0) return "";
  size_t i = 0;
  for (size_t width = 0; width + 1 < max_width && i < text.size(); ++width) {
    const size_t n = Utf8Length(text, i);
    i += n == 0 ? 1 : n;
  }
  return std::string(text.substr(0, i)) + "\xE2\x80\xA6";  // U+2026 HORIZONTAL ELLIPSIS
}

std::string TableCell(std::string_view text, size_t width) {
  std::string cell = TruncateForDisplay(EscapeForTerminal(text), width);
  const size_t w = DisplayWidth(cell);
  if (w < width) cell.append(width - w, ' ');
  return cell;
}

}  // namespace truffld
