// JSON string escaping with UTF-8 validation, integer and microsecond formatting.
#include "truffld/merge/json_out.h"

#include <charconv>
#include <cstring>

namespace truffld::merge {

void AppendJsonString(std::string* out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  out->push_back('"');
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    size_t run = i;  // copy plain ASCII runs in one go
    while (run < n && p[run] >= 0x20 && p[run] < 0x80 && p[run] != '"' && p[run] != '\\') ++run;
    out->append(s.data() + i, run - i);
    i = run;
    if (i >= n) break;
    unsigned char c = p[i];
    if (c < 0x80) {
      switch (c) {
        case '"': out->append("\\\""); break;
        case '\\': out->append("\\\\"); break;
        case '\n': out->append("\\n"); break;
        case '\r': out->append("\\r"); break;
        case '\t': out->append("\\t"); break;
        default: {
          char u[7] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15], 0};
          out->append(u, 6);
        }
      }
      ++i;
      continue;
    }
    size_t len = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) ok = (p[i + k] & 0xC0) == 0x80;
    if (ok) {
      uint32_t cp = len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (p[i + k] & 0x3F);
      ok = (len == 2 && cp >= 0x80) || (len == 3 && cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF)) ||
           (len == 4 && cp >= 0x10000 && cp <= 0x10FFFF);
    }
    if (ok) {
      out->append(s.data() + i, len);
      i += len;
    } else {
      out->append("\\ufffd");
      ++i;
    }
  }
  out->push_back('"');
}

bool JsonNeedsNoEscape(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') return false;
  return true;
}

void JsonOut::String(std::string_view s) {
  AppendJsonString(&buf_, s);
  MaybeFlush();
}

void JsonOut::Int(int64_t v) {
  char tmp[24];
  auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
  buf_.append(tmp, r.ptr);
}

void JsonOut::Micros(int64_t ns) {
  if (ns < 0) {
    buf_.push_back('-');
    // -INT64_MIN overflows; clamp (no real timestamp is that far off).
    ns = ns == INT64_MIN ? INT64_MAX : -ns;
  }
  Int(ns / 1000);
  char frac[5] = {'.', char('0' + ns % 1000 / 100), char('0' + ns % 100 / 10), char('0' + ns % 10), 0};
  buf_.append(frac, 4);
}

Status JsonOut::Flush() {
  if (!f_) return Status::Ok();
  if (!failed_ && !buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size()) failed_ = true;
  buf_.clear();
  if (failed_) return IoError(name_ + ": write failed: " + std::strerror(errno));
  return Status::Ok();
}

}  // namespace truffld::merge
