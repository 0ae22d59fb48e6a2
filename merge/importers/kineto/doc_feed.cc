// DocFeed (see doc_feed.h): the whole document, or a window on a source that moves forward.
#include "importers/kineto/doc_feed.h"

#include <cstring>

#include <simdjson.h>

namespace truffld::merge::kineto {

DocFeed::DocFeed(char* text, size_t size, size_t capacity)
    : data_(text), size_(size), capacity_(capacity - simdjson::SIMDJSON_PADDING), complete_(true) {}

DocFeed::DocFeed(ByteSource* src, size_t window) : src_(src) {
  window_.Reserve(window + simdjson::SIMDJSON_PADDING);
  data_ = window_.data.get();
  capacity_ = window;
}

bool DocFeed::ReadInto(char* at, size_t n, size_t* got) {
  *got = 0;
  while (*got < n) {
    Result<size_t> r = src_->Read(at + *got, n - *got);
    if (!r.ok()) {
      error_ = r.status();
      return false;
    }
    if (*r == 0) {
      complete_ = true;
      if (src_->truncated()) {
        error_ = Truncated(src_->path() + ": " + CompressionName(src_->compression()) + " stream ends early");
        return false;
      }
      break;
    }
    *got += *r;
  }
  return true;
}

bool DocFeed::Refill(size_t keep_from) {
  if (complete_ || !src_ || !error_.ok()) return false;
  std::memmove(data_, data_ + keep_from, size_ - keep_from);
  size_ -= keep_from;
  base_ += keep_from;
  if (capacity_ - size_ < capacity_ / 4) {
    window_.size = size_;  // what Reserve keeps
    capacity_ *= 2;
    window_.Reserve(capacity_ + simdjson::SIMDJSON_PADDING);
    data_ = window_.data.get();
  }
  size_t got = 0;
  const bool ok = ReadInto(data_ + size_, capacity_ - size_, &got);
  size_ += got;
  return ok && (got > 0 || complete_);
}

bool DocFeed::ReadRest(std::string* out) {
  if (complete_ || !src_) return error_.ok();
  char buf[1 << 16];
  for (;;) {
    size_t got = 0;
    if (!ReadInto(buf, sizeof buf, &got)) return false;
    out->append(buf, got);
    if (got < sizeof buf && complete_) return true;
  }
}

}  // namespace truffld::merge::kineto
