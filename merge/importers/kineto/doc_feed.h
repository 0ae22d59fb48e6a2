// Private to the Kineto importer: where the batch reader gets the document's bytes from.
//
// DocFeed holds either the whole document (in memory, from ImportKinetoFromBuffer or a
// source already read) or a window on a source that moves forward as the batches are read: the
// bytes before the next batch are dropped, the rest moved to the front and the window filled
// from the source again, so a trace is never held whole. The window grows when one batch does
// not fit. Its bytes are writable and followed by simdjson's padding.
// Thread-safety: one per import; not shared.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "truffld/byte_source.h"

namespace truffld::merge::kineto {

class DocFeed {
 public:
  // The whole document: `size` bytes at `text`, `capacity` >= size + SIMDJSON_PADDING.
  DocFeed(char* text, size_t size, size_t capacity);
  // A window of about `window` bytes on `src` (not owned), filled by the first Refill(0).
  DocFeed(ByteSource* src, size_t window);

  char* data() const { return data_; }
  size_t size() const { return size_; }
  std::string_view view() const { return {data_, size_}; }
  uint64_t base() const { return base_; }   // the document's offset of data()[0]
  bool complete() const { return complete_; }  // the document ends at data() + size()
  // The document's size when known up front (the source's hint), else 0.
  uint64_t size_hint() const { return src_ ? src_->size_hint() : size_; }

  // Drops the bytes before `keep_from`, moves the rest to the front and reads more after them
  // (growing the window when less than a quarter of it would be free). False when nothing more
  // could be read: the document was complete, or the source failed or was cut short (error()).
  bool Refill(size_t keep_from);
  // Appends everything after the window to *out (the whole document's rest). False as Refill.
  bool ReadRest(std::string* out);
  // The read error that stopped a Refill, if any (ok otherwise).
  const Status& error() const { return error_; }

 private:
  bool ReadInto(char* at, size_t n, size_t* got);

  ByteSource* src_ = nullptr;
  Bytes window_;
  char* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;  // usable bytes at data_ (the padding excluded)
  uint64_t base_ = 0;
  bool complete_ = false;
  Status error_ = Status::Ok();
};

}  // namespace truffld::merge::kineto
