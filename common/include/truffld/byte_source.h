// ByteSource: a file's bytes, transparently decompressed.
//
// Compression is detected from the first bytes, not the file name: gzip (1f 8b, including
// concatenated members) and zstd (28 b5 2f fd, including several frames); anything else is read
// as plain bytes. A compressed stream that ends early (a killed writer) yields every byte that
// could be decoded and then reports it through truncated() rather than failing.
// Thread-safety: one instance per thread; distinct instances are independent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "truffld/status.h"

namespace truffld {

enum class Compression { kNone, kGzip, kZstd };
const char* CompressionName(Compression c) noexcept;

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to n bytes into buf. Returns 0 at end of data. A non-ok Result is a hard error
  // (read failure, corrupt compressed data) and the message names the file.
  virtual Result<size_t> Read(char* buf, size_t n) = 0;
  // True once the end was reached inside an unfinished compressed frame/member.
  virtual bool truncated() const = 0;
  virtual Compression compression() const = 0;
  // Bytes consumed from the underlying file so far (compressed size).
  virtual uint64_t raw_bytes_read() const = 0;
  // The decompressed size when it is known up front, else 0: a regular file's size, a gzip
  // file's ISIZE trailer, a zstd frame's content size. A hint for sizing buffers (so a reader
  // allocates once instead of doubling), never trusted for anything else.
  uint64_t size_hint() const { return size_hint_; }
  const std::string& path() const { return path_; }
  void set_size_hint(uint64_t bytes) { size_hint_ = bytes; }

 protected:
  explicit ByteSource(std::string path) : path_(std::move(path)) {}
  uint64_t size_hint_ = 0;

 private:
  std::string path_;
};

// Opens path ("-" is standard input). NotFound / IoError with the path in the message.
Result<std::unique_ptr<ByteSource>> OpenByteSource(const std::string& path);

// Reads a whole (possibly compressed) file into memory, sized from ByteSource::size_hint when
// known; `spare` more bytes of capacity are left after the data (simdjson's padding). A
// truncated compressed stream is an error here unless allow_truncated is set.
Result<std::string> ReadWholeFile(const std::string& path, bool allow_truncated = false, size_t spare = 0);

}  // namespace truffld
