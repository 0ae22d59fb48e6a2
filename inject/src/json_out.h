// JsonLine: appends one flat-ish JSON object to a std::string, with correct string escaping.
//
// The writer thread formats every record through this helper, so it favours speed over
// generality: keys are trusted literals, values are escaped by the project's one routine
// (truffld/json_escape.h, header-only: strict UTF-8, so lone surrogates, overlong forms and code
// points above U+10FFFF in a name become \ufffd and every line is valid UTF-8 JSON).
// Thread-safety: none needed; one instance per formatting call on one thread.
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "truffld/json_escape.h"

namespace truffld::inject {

// Appends `s` as a JSON string literal (with quotes) to `out` (truffld::AppendJsonString).
inline void AppendJsonString(std::string& out, std::string_view s) { truffld::AppendJsonString(&out, s); }

// Appends the decimal form of an integer without allocating.
template <class T>
inline void AppendInt(std::string& out, T v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, static_cast<size_t>(r.ptr - buf));
}

class JsonLine {
 public:
  explicit JsonLine(std::string& out) : out_(out) { out_.push_back('{'); }

  JsonLine& Str(const char* key, std::string_view v) { Key(key); AppendJsonString(out_, v); return *this; }
  JsonLine& Int(const char* key, int64_t v) { Key(key); AppendInt(out_, v); return *this; }
  JsonLine& UInt(const char* key, uint64_t v) { Key(key); AppendInt(out_, v); return *this; }
  JsonLine& Double(const char* key, double v);
  JsonLine& Null(const char* key) { Key(key); out_ += "null"; return *this; }
  JsonLine& Bool(const char* key, bool v) { Key(key); out_ += v ? "true" : "false"; return *this; }
  JsonLine& Triple(const char* key, int64_t x, int64_t y, int64_t z);
  // Inserts already-formatted JSON text as the value of `key`.
  JsonLine& Raw(const char* key, std::string_view json) { Key(key); out_ += json; return *this; }
  // Closes the object and appends '\n'.
  void End() { out_ += "}\n"; }

 private:
  void Key(const char* key) {
    if (!first_) out_.push_back(',');
    first_ = false;
    out_.push_back('"');
    out_ += key;
    out_ += "\":";
  }
  std::string& out_;
  bool first_ = true;
};

// Builds a nested JSON object (no trailing newline), e.g. a decoded payload.
class JsonObject {
 public:
  JsonObject() { s_.push_back('{'); }
  JsonObject& Str(std::string_view key, std::string_view v) { Key(key); AppendJsonString(s_, v); return *this; }
  JsonObject& Int(std::string_view key, int64_t v) { Key(key); AppendInt(s_, v); return *this; }
  JsonObject& UInt(std::string_view key, uint64_t v) { Key(key); AppendInt(s_, v); return *this; }
  JsonObject& Double(std::string_view key, double v);
  JsonObject& Raw(std::string_view key, std::string_view json) { Key(key); s_ += json; return *this; }
  bool empty() const { return s_.size() == 1; }
  std::string Finish() { return s_ + "}"; }

 private:
  void Key(std::string_view key) {
    if (s_.size() > 1) s_.push_back(',');
    AppendJsonString(s_, key);
    s_.push_back(':');
  }
  std::string s_;
};

}  // namespace truffld::inject
