// ByteSource: a file's bytes, transparently decompressed.
//
// Compression is detected from the first bytes, not the file name: gzip (1f 8b, including
// concatenated members) and zstd (28 b5 2f fd, including several frames); anything else is read
// as plain bytes. A compressed stream that ends early (a killed writer) yields every byte that
// could be decoded and then reports it through truncated() rather than failing; a corrupt one
// yields every byte decoded before the corruption, and the error on the read after them.
// The file is opened once: "-" (standard input), a pipe, a process substitution or a FIFO can
// be read only once, so a reader that must look at the start first (format sniffing) peeks:
// Peek reads ahead without consuming, and Read returns those bytes again. Opening a FIFO waits
// for its writer, as cat does; its end is the writer closing it.
// Thread-safety: one instance per thread; distinct instances are independent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "truffld/status.h"

namespace truffld {

enum class Compression { kNone, kGzip, kZstd };
const char* CompressionName(Compression c) noexcept;

// A whole input in memory: `size` bytes at `data`, and `capacity` >= size bytes allocated
// (the bytes past `size` are unspecified). Unlike std::string, nothing is zeroed before the
// data is read into it.
struct Bytes {
  std::unique_ptr<char[]> data;
  size_t size = 0;
  size_t capacity = 0;
  std::string_view view() const { return {data.get(), size}; }
  // Makes capacity at least n, keeping the data. A buffer of 4 MiB or more is advised to the
  // kernel as wanting transparent huge pages before it is touched (madvise MADV_HUGEPAGE: a
  // 53 MB trace then costs about 30 page faults instead of 13,000; TRUFFLD_HUGE_PAGES=0 turns
  // this off).
  void Reserve(size_t n);
};

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to n bytes into buf (peeked bytes first). Returns 0 at end of data. A non-ok
  // Result is a hard error (read failure, corrupt compressed data), reported once every byte
  // decoded before it has been returned; the message names the file.
  Result<size_t> Read(char* buf, size_t n);
  // The first n bytes still to be read (fewer at the end of data or before an error, which the
  // following Read reports), without consuming them. Decompressed.
  Result<std::string_view> Peek(size_t n);
  // True once the end was reached inside an unfinished compressed frame/member.
  virtual bool truncated() const = 0;
  virtual Compression compression() const = 0;
  // Bytes consumed from the underlying file so far (compressed size).
  virtual uint64_t raw_bytes_read() const = 0;
  // The decompressed size when it is known up front, else 0: a regular file's size, a gzip
  // file's ISIZE trailer, a zstd frame's content size. A hint for sizing buffers (so a reader
  // allocates once instead of doubling), never trusted for anything else.
  uint64_t size_hint() const { return size_hint_; }
  // Whether the source is a regular file, which can be opened and read again by its path.
  bool rereadable() const { return rereadable_; }
  const std::string& path() const { return path_; }
  void set_size_hint(uint64_t bytes) { size_hint_ = bytes; }
  void set_rereadable(bool on) { rereadable_ = on; }

 protected:
  explicit ByteSource(std::string path) : path_(std::move(path)) {}
  // The next decoded bytes (up to n; 0 at the end of data), or the error met.
  virtual Result<size_t> ReadMore(char* buf, size_t n) = 0;

 private:
  std::string path_;
  uint64_t size_hint_ = 0;
  bool rereadable_ = false;
  std::string peeked_;      // bytes read ahead by Peek, not yet returned by Read
  size_t peeked_pos_ = 0;
  Status pending_;          // an error met by Peek, returned once the peeked bytes are read
};

// Opens path ("-" is standard input). NotFound / IoError with the path in the message.
Result<std::unique_ptr<ByteSource>> OpenByteSource(const std::string& path);

// Reads everything left in `src` into memory, sized from its size_hint when known; `spare` more
// bytes of capacity are left after the data (simdjson's padding). A truncated compressed stream
// is an error here unless allow_truncated is set. A read error (corrupt compressed data, an I/O
// error) fails the call, unless `read_error` is given: the bytes before it are then returned and
// the error stored there (left as it was when there is none).
Result<Bytes> ReadAll(ByteSource& src, bool allow_truncated = false, size_t spare = 0,
                      Status* read_error = nullptr);

// Opens `path` and ReadAll's it.
Result<Bytes> ReadWholeFile(const std::string& path, bool allow_truncated = false, size_t spare = 0);

}  // namespace truffld
