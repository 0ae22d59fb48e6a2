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

// The code point of a bidirectional formatting control (U+200E/U+200F, U+202A..U+202E,
// U+2066..U+2069) encoded as the valid 3-byte sequence at text[i], or 0. They reorder the text
// after them on screen (a U+202E makes a name read backwards), so they are escaped.
unsigned BidiControl(std::string_view text, size_t i) {
  if (static_cast<unsigned char>(text[i]) != 0xE2) return 0;
  const unsigned cp = 0x2000 | ((static_cast<unsigned char>(text[i + 1]) & 0x3F) << 6) |
                      (static_cast<unsigned char>(text[i + 2]) & 0x3F);
  const bool bidi = cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
  return bidi ? cp : 0;
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
    if (n == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) {  // C1 control
      AppendHex(&out, "\\u", static_cast<unsigned char>(text[i + 1]), 4);
    } else if (const unsigned bidi = n == 3 ? BidiControl(text, i) : 0) {
      AppendHex(&out, "\\u", bidi, 4);
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
