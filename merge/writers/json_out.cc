// JSON string escaping with UTF-8 validation, integer and microsecond formatting, the buffer.
#include "truffld/merge/json_out.h"

#include <cerrno>
#include <cstring>

#include "truffld/json_escape.h"

namespace truffld::merge {
namespace {

// Decimal digits of non-negative integers in independent 8-digit chunks (one timestamp in ns
// since the epoch has 19 digits, and the writers print millions of them: std::to_chars's
// digit-pair loop was ~4 % of a merge, a pair table ~2.5 %).
// The eight decimal digits of v < 10^8, leading zeros included, as numbers 0-9 in the bytes of
// a little-endian word (the first digit in the lowest byte): v split into 4-digit halves, each
// half into 2-digit pairs, each pair into digits, all lanes at once (multiply-shift division:
// *10486 >> 20 is /100 below 43,699 and *103 >> 10 is /10 below 179).
inline uint64_t EightDigitValues(uint32_t v) {
  const uint64_t halves = (uint64_t(v % 10000) << 32) | (v / 10000);
  const uint64_t hundreds = ((halves * 10486) >> 20) & 0x0000007F0000007Full;
  const uint64_t pairs = hundreds | ((halves - 100 * hundreds) << 16);
  const uint64_t tens = ((pairs * 103) >> 10) & 0x000F000F000F000Full;
  return tens | ((pairs - 10 * tens) << 8);
}
constexpr uint64_t kAsciiZeros = 0x3030303030303030ull;

inline char* Write8(char* p, uint32_t v) {  // exactly 8 digits, v < 10^8
  const uint64_t w = EightDigitValues(v) + kAsciiZeros;
  std::memcpy(p, &w, 8);
  return p + 8;
}

// v < 10^8 as exactly eight digits with a '.' before the last three ("12345.678"): the low
// eight digits of a time in ns, printed in us by Micros. Writes 9 bytes.
inline char* Write8Dot(char* p, uint32_t v) {
  const uint64_t w = EightDigitValues(v) + kAsciiZeros;
  const uint64_t head = (w & 0xFFFFFFFFFFull) | (uint64_t('.') << 40) | ((w >> 40) << 48);
  std::memcpy(p, &head, 8);
  p[8] = char(w >> 56);
  return p + 9;
}

// v < 10^8, no leading zeros. Writes 8 bytes (room for them needed), advances by the digits.
inline char* WriteSmall(char* p, uint32_t v) {
  if (v < 10) {  // most ids, streams, devices: one digit
    *p = char('0' + v);
    return p + 1;
  }
  const uint64_t d = EightDigitValues(v);
  const unsigned zeros = unsigned(__builtin_ctzll(d)) / 8;  // leading zero digits (v > 0: d != 0)
  const uint64_t w = (d >> (8 * zeros)) + kAsciiZeros;
  std::memcpy(p, &w, 8);
  return p + (8 - zeros);
}

char* WriteU64(char* p, uint64_t v) {
  constexpr uint64_t k8 = 100000000;
  if (v < k8) return WriteSmall(p, uint32_t(v));
  if (v < k8 * k8) {
    const uint64_t hi = v / k8;
    p = WriteSmall(p, uint32_t(hi));
    return Write8(p, uint32_t(v - hi * k8));
  }
  const uint64_t top = v / (k8 * k8);  // at most 1844
  const uint64_t rest = v - top * (k8 * k8);
  p = WriteSmall(p, uint32_t(top));
  p = Write8(p, uint32_t(rest / k8));
  return Write8(p, uint32_t(rest % k8));
}

char* WriteI64(char* p, int64_t v) {
  if (v >= 0) return WriteU64(p, uint64_t(v));
  *p++ = '-';
  return WriteU64(p, 0 - uint64_t(v));  // INT64_MIN included
}

}  // namespace

JsonOut::JsonOut(std::FILE* f, std::string name) : f_(f), name_(std::move(name)) {
  buf_.reset(new char[kBlock]);
  buf_cap_ = kBlock;
  base_ = p_ = buf_.get();
  end_ = p_ + kBlock;
}

JsonOut::JsonOut(DirectWriter* dw, std::string name) : name_(std::move(name)), dw_(dw) {
  UseBlock(dw_->current());
}

void JsonOut::UseBlock(DirectWriter::Block b) {
  base_ = b.data;
  p_ = b.data + b.size;
  end_ = b.data + b.capacity;
  spilled_ = false;
}

char* JsonOut::Grow(size_t n) {
  if (dw_) return GrowDirect(n);
  if (f_ && p_ != base_) (void)Flush();  // a failure is kept in error_ and reported by Flush
  const size_t used = size_t(p_ - base_);
  const size_t cap = size_t(end_ - base_);
  if (cap - used >= n) return p_;
  size_t want = cap;
  while (want - used < n) want *= 2;
  std::unique_ptr<char[]> bigger(new char[want]);
  std::memcpy(bigger.get(), base_, used);
  buf_ = std::move(bigger);
  buf_cap_ = want;
  base_ = buf_.get();
  p_ = base_ + used;
  end_ = base_ + want;
  return p_;
}

// With a DirectWriter: hand the block over and continue in the next one; a piece that does not
// fit in what a block has left after its carried-over bytes goes into buf_, copied in later.
char* JsonOut::GrowDirect(size_t n) {
  (void)Flush();
  if (size_t(end_ - p_) >= n) return p_;
  if (buf_cap_ < n) {
    buf_.reset(new char[n]);
    buf_cap_ = n;
  }
  base_ = p_ = buf_.get();
  end_ = base_ + buf_cap_;
  spilled_ = true;
  return p_;
}

void JsonOut::String(std::string_view s) {
  char* d = Room(JsonEscapedBound(s.size()) + 2);
  *d++ = '"';
  d = EscapeJsonTo(d, s);
  *d++ = '"';
  p_ = d;
}

char* JsonOut::HighDigits::Write(char* d, uint64_t high) {
  if (high != value) {
    value = high;
    len = size_t(WriteU64(text, high) - text);
  }
  std::memcpy(d, text, sizeof text);
  return d + len;
}

void JsonOut::Int(int64_t v) {
  constexpr uint64_t k8 = 100000000;
  char* d = Room(24);
  if (v < int64_t(k8)) {
    p_ = WriteI64(d, v);
    return;
  }
  const uint64_t u = uint64_t(v), high = u / k8;  // high < 10^11
  d = int_high_.Write(d, high);  // 16 of the 24 bytes
  p_ = Write8(d, uint32_t(u - high * k8));
}

void JsonOut::Micros(int64_t ns) {
  constexpr uint64_t k8 = 100000000;
  char* d = Room(32);
  if (ns < 0) {
    *d++ = '-';
    // -INT64_MIN overflows; clamp (no real timestamp is that far off).
    ns = ns == INT64_MIN ? INT64_MAX : -ns;
  }
  if (uint64_t(ns) >= k8) {  // the digits of ns / 1000 are those of ns / 10^8, then five more
    const uint64_t u = uint64_t(ns), high = u / k8;
    d = micros_high_.Write(d, high);  // 16 bytes, then 9 (26 of the 32 with the sign)
    p_ = Write8Dot(d, uint32_t(u - high * k8));
    return;
  }
  d = WriteU64(d, uint64_t(ns / 1000));
  const int64_t f = ns % 1000;
  d[0] = '.';
  d[1] = char('0' + f / 100);
  d[2] = char('0' + f / 10 % 10);
  d[3] = char('0' + f % 10);
  p_ = d + 4;
}

Status JsonOut::Flush() {
  const size_t used = size_t(p_ - base_);
  if (dw_) {
    if (spilled_) UseBlock(dw_->Append(base_, used));
    else if (used > dw_->current().size) UseBlock(dw_->Commit(used));
    return error_;  // the writer's errors come with Close
  }
  if (!f_) return Status::Ok();
  if (error_.ok() && used) {
    if (std::fwrite(base_, 1, used, f_) != used)
      error_ = IoError(name_ + ": write failed: " + std::strerror(errno));
  }
  p_ = base_;
  return error_;
}

Status JsonOut::Close() {
  Status st = Flush();  // with a DirectWriter: the current block now holds what is left
  if (!dw_) return st;
  st = dw_->Finish(size_t(p_ - base_));
  base_ = p_ = end_ = nullptr;  // nothing may be written after Close
  dw_ = nullptr;
  return st;
}

}  // namespace truffld::merge
