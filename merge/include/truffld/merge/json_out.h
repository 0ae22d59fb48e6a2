// JsonOut: a buffered, append-only JSON text writer for the merge outputs.
//
// Strings are escaped by the shared routine (truffld/json_escape.h: RFC 8259, strict UTF-8,
// every bad byte written as \ufffd), so every file truffld-merge writes is valid JSON whatever
// the input names held. Text goes into one plain byte buffer through a write pointer (each
// append checks the room left once and copies; no std::string bookkeeping per piece: the
// writers append ~20 pieces per slice, for millions of slices) and reaches the FILE* in blocks
// of about kBlock bytes, or stays in memory when no FILE* is given (how the unit tests read it
// back). Given a DirectWriter instead, the text is written straight into the writer's aligned blocks,
// which go to the disk without a copy (direct_writer.h); a piece too large for one block is
// written into a heap buffer and copied in after it.
// Thread-safety: one JsonOut per thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "truffld/direct_writer.h"
#include "truffld/json_escape.h"
#include "truffld/status.h"

namespace truffld::merge {

class JsonOut {
 public:
  static constexpr size_t kBlock = size_t{1} << 20;

  explicit JsonOut(std::FILE* f = nullptr, std::string name = "<memory>");
  // Writes into `dw`'s blocks; Close must be called to end the file. `dw` must outlive this.
  JsonOut(DirectWriter* dw, std::string name);
  JsonOut(const JsonOut&) = delete;
  JsonOut& operator=(const JsonOut&) = delete;

  void Raw(std::string_view s) {
    char* p = Room(s.size());
    std::memcpy(p, s.data(), s.size());
    p_ = p + s.size();
  }
  void Char(char c) { *Room(1) = c; ++p_; }
  void String(std::string_view s);    // quoted + escaped
  // `s` known to need no escaping (JsonNeedsNoEscape): quoted, copied as is.
  void PlainString(std::string_view s) {
    char* p = Room(s.size() + 2);
    *p++ = '"';
    std::memcpy(p, s.data(), s.size());
    p += s.size();
    *p++ = '"';
    p_ = p;
  }
  // Integers of 9 or more digits (timestamps in ns) reuse the text of the digits above the last
  // eight when they equal the previous such integer's: the writers print times in near order.
  void Int(int64_t v);
  void Micros(int64_t ns);            // ns as decimal microseconds with 3 decimals ("12.345")
  // Writes pending text; fails with IoError naming the output on a short write (the first error
  // is kept and returned by every later Flush). With a
  // DirectWriter, hands over what fills whole blocks (the rest goes at Close).
  Status Flush();
  // Ends the output: Flush, and with a DirectWriter, writes the last bytes and closes the file
  // (its first error is returned). Nothing may be written after. (A FILE* is the caller's to
  // close.)
  Status Close();
  // Memory mode: everything written so far.
  std::string text() const { return std::string(base_, size_t(p_ - base_)); }
  // Memory mode: the text written so far, valid until the next write or Clear; Clear forgets it.
  std::string_view view() const { return std::string_view(base_, size_t(p_ - base_)); }
  void Clear() { p_ = base_; }

 private:
  // A pointer with at least n writable bytes behind it (flushes or grows the buffer).
  char* Room(size_t n) { return size_t(end_ - p_) >= n ? p_ : Grow(n); }
  char* Grow(size_t n);
  char* GrowDirect(size_t n);
  void UseBlock(DirectWriter::Block b);

  std::FILE* f_ = nullptr;
  std::string name_;
  std::unique_ptr<char[]> buf_;  // the buffer, but with a DirectWriter: for oversized pieces
  size_t buf_cap_ = 0;
  char* base_ = nullptr;         // start of the buffer written now (buf_ or a direct block)
  char* p_ = nullptr;
  char* end_ = nullptr;
  DirectWriter* dw_ = nullptr;
  bool spilled_ = false;  // with dw_: writing into buf_, to be appended after the block's text
  Status error_;
  // The digits of a number's part above its last eight, kept while it repeats: the writers print
  // times in near order, so that part changes rarely. One for Int (ns), one for Micros (ns of
  // "ts" values, printed as us).
  struct HighDigits {
    uint64_t value = UINT64_MAX;
    char text[16] = {};
    size_t len = 0;
    // Writes the digits of `high` (< 10^11) at d (16 bytes of room); returns the end.
    char* Write(char* d, uint64_t high);
  };
  HighDigits int_high_, micros_high_;
};

// The shared escaping routine (truffld/json_escape.h) under the names the writers use.
using truffld::AppendJsonString;
using truffld::JsonNeedsNoEscape;

}  // namespace truffld::merge
