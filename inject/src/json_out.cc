// JsonLine / AppendJsonString: see json_out.h.
#include "json_out.h"

#include <cmath>
#include <cstdio>

namespace truffld::inject {

namespace {
// Length of a valid UTF-8 sequence starting at s[i], or 0 when invalid.
size_t Utf8SeqLen(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0 && c >= 0xC2) n = 2;
  else if ((c & 0xF0) == 0xE0) n = 3;
  else if ((c & 0xF8) == 0xF0 && c <= 0xF4) n = 4;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  }
  return n;
}

void AppendNumber(std::string& out, double v) {
  if (!std::isfinite(v)) { out += "null"; return; }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  out += buf;
}
}  // namespace

void AppendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') { out.push_back('\\'); out.push_back(static_cast<char>(c)); ++i; continue; }
    if (c < 0x20) {
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default: {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        }
      }
      ++i;
      continue;
    }
    const size_t n = Utf8SeqLen(s, i);
    if (n == 0) { out += "\xEF\xBF\xBD"; ++i; continue; }
    out.append(s.data() + i, n);
    i += n;
  }
  out.push_back('"');
}

JsonLine& JsonLine::Double(const char* key, double v) { Key(key); AppendNumber(out_, v); return *this; }

JsonLine& JsonLine::Triple(const char* key, int64_t x, int64_t y, int64_t z) {
  Key(key);
  out_.push_back('[');
  AppendInt(out_, x);
  out_.push_back(',');
  AppendInt(out_, y);
  out_.push_back(',');
  AppendInt(out_, z);
  out_.push_back(']');
  return *this;
}

JsonObject& JsonObject::Double(std::string_view key, double v) { Key(key); AppendNumber(s_, v); return *this; }

}  // namespace truffld::inject
