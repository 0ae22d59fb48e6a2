// JsonOut: a buffered, append-only JSON text writer for the merge outputs.
//
// Strings are escaped per RFC 8259 and any invalid UTF-8 byte sequence is written as \ufffd,
// so every file truffld-merge writes is valid JSON whatever the input names held. Text is
// accumulated in memory and written to the FILE* in ~1 MiB blocks (or kept in memory when no
// FILE* is given, which is how the unit tests read it back).
// Thread-safety: one JsonOut per thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "truffld/status.h"

namespace truffld::merge {

class JsonOut {
 public:
  explicit JsonOut(std::FILE* f = nullptr, std::string name = "<memory>") : f_(f), name_(std::move(name)) {}
  void Raw(std::string_view s) { buf_.append(s); MaybeFlush(); }
  void Char(char c) { buf_.push_back(c); }
  void String(std::string_view s);    // quoted + escaped
  void Int(int64_t v);
  void Micros(int64_t ns);            // ns as decimal microseconds with 3 decimals ("12.345")
  // Writes pending text; fails with IoError naming the output on a short write.
  Status Flush();
  // Memory mode: everything written so far.
  const std::string& text() const { return buf_; }

 private:
  void MaybeFlush() { if (f_ && buf_.size() > (1u << 20)) (void)Flush(); }
  std::FILE* f_;
  std::string name_;
  std::string buf_;
  bool failed_ = false;
};

// Appends `s` as a JSON string literal (with quotes) to *out.
void AppendJsonString(std::string* out, std::string_view s);

// True when `s` is printable ASCII without '"' or '\\': it can be written between quotes as is.
bool JsonNeedsNoEscape(std::string_view s);

}  // namespace truffld::merge
