#include "truffld/byte_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <isa-l/igzip_lib.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_FRAMEHEADERSIZE_MAX
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

namespace truffld {

const char* CompressionName(Compression c) noexcept {
  switch (c) {
    case Compression::kNone: return "none";
    case Compression::kGzip: return "gzip";
    case Compression::kZstd: return "zstd";
  }
  return "?";
}

namespace {

constexpr size_t kInChunk = 1 << 20;

// Reads the raw file with a one-shot peek buffer so the codec can be sniffed.
class RawFile {
 public:
  RawFile(int fd) : fd_(fd) {}
  ~RawFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawFile(const RawFile&) = delete;
  RawFile& operator=(const RawFile&) = delete;
  // Returns bytes read, 0 at EOF, -1 on error (errno set).
  ssize_t Read(char* buf, size_t n) {
    for (;;) {
      ssize_t r = ::read(fd_, buf, n);
      if (r < 0 && errno == EINTR) continue;
      if (r > 0) consumed_ += static_cast<uint64_t>(r);
      return r;
    }
  }
  uint64_t consumed() const { return consumed_; }
  int fd() const { return fd_; }
  void set_consumed(uint64_t n) { consumed_ = n; }

 private:
  int fd_;
  uint64_t consumed_ = 0;
};

Status ReadError(const std::string& path) {
  return IoError(path + ": read failed: " + std::strerror(errno));
}

class PlainSource final : public ByteSource {
 public:
  PlainSource(std::string path, std::unique_ptr<RawFile> f, std::string head)
      : ByteSource(std::move(path)), file_(std::move(f)), head_(std::move(head)) {}
  Result<size_t> ReadMore(char* buf, size_t n) override {
    if (head_pos_ < head_.size()) {
      size_t k = std::min(n, head_.size() - head_pos_);
      std::memcpy(buf, head_.data() + head_pos_, k);
      head_pos_ += k;
      return k;
    }
    ssize_t r = file_->Read(buf, n);
    if (r < 0) return ReadError(path());
    return static_cast<size_t>(r);
  }
  bool truncated() const override { return false; }
  Compression compression() const override { return Compression::kNone; }
  uint64_t raw_bytes_read() const override { return file_->consumed(); }

 private:
  std::unique_ptr<RawFile> file_;
  std::string head_;
  size_t head_pos_ = 0;
};

// Shared input buffering for the two codecs: refill from the head bytes, then the file.
class CompressedSource : public ByteSource {
 protected:
  CompressedSource(std::string path, std::unique_ptr<RawFile> f, std::string head)
      : ByteSource(std::move(path)), file_(std::move(f)), in_(kInChunk) {
    std::memcpy(in_.data(), head.data(), head.size());
    in_len_ = head.size();
  }
  // Ensures unread input is available; returns false at EOF of the raw file.
  Result<bool> Refill() {
    if (in_pos_ < in_len_) return true;
    ssize_t r = file_->Read(in_.data(), in_.size());
    if (r < 0) return ReadError(path());
    in_pos_ = 0;
    in_len_ = static_cast<size_t>(r);
    return r > 0;
  }
  uint64_t raw_bytes_read() const override { return file_->consumed(); }
  // The file offset of in_[pos]: where the decoder stands in the compressed file.
  uint64_t InputOffset(size_t pos) const { return file_->consumed() - (in_len_ - pos); }

  std::unique_ptr<RawFile> file_;
  std::vector<char> in_;
  size_t in_pos_ = 0, in_len_ = 0;
  bool eof_ = false;
  bool truncated_ = false;
  Status error_;  // corruption met; returned once the bytes decoded before it are
};

// What an ISA-L inflate error code means, for messages.
const char* IsalError(int rc) {
  switch (rc) {
    case ISAL_INVALID_BLOCK: return "invalid deflate block";
    case ISAL_INVALID_SYMBOL: return "invalid deflate symbol";
    case ISAL_INVALID_LOOKBACK: return "invalid back-reference distance";
    case ISAL_INVALID_WRAPPER: return "not a gzip header";
    case ISAL_UNSUPPORTED_METHOD: return "compression method is not deflate";
    case ISAL_INCORRECT_CHECKSUM: return "CRC or length check failed";
    default: return "inflate error";
  }
}

// gzip, streamed with Intel's ISA-L (igzip): about three times zlib's speed (10 ms against 31
// for a 53 MB trace), which lets a Kineto trace be decoded as it is read instead of whole.
// Members follow one another (each is checked against its CRC and length trailer).
class GzipSource final : public CompressedSource {
 public:
  GzipSource(std::string path, std::unique_ptr<RawFile> f, std::string head)
      : CompressedSource(std::move(path), std::move(f), std::move(head)),
        state_(std::make_unique<inflate_state>()) {}
  Result<size_t> ReadMore(char* buf, size_t n) override {
    if (!error_.ok()) return error_;
    size_t produced = 0;
    while (produced == 0 && !eof_) {
      auto more = Refill();
      if (!more.ok()) return more.status();
      if (!*more) {
        eof_ = true;
        truncated_ = in_member_;
        break;
      }
      if (!in_member_) {  // the first member, or one after another
        // Bytes after a member that do not start another: zlib's "incorrect header check".
        // (ISA-L would wait for a whole header first and call a short tail cut short.)
        const unsigned char* at = reinterpret_cast<const unsigned char*>(in_.data() + in_pos_);
        if (at[0] != 0x1f || (in_len_ - in_pos_ > 1 && at[1] != 0x8b)) return Corrupt(ISAL_INVALID_WRAPPER);
        isal_inflate_init(state_.get());
        state_->crc_flag = ISAL_GZIP;
        in_member_ = true;
      }
      state_->next_in = reinterpret_cast<uint8_t*>(in_.data() + in_pos_);
      state_->avail_in = static_cast<uint32_t>(in_len_ - in_pos_);
      state_->next_out = reinterpret_cast<uint8_t*>(buf);
      state_->avail_out = static_cast<uint32_t>(std::min<size_t>(n, 1u << 30));
      const int rc = isal_inflate(state_.get());
      in_pos_ = in_len_ - state_->avail_in;
      produced = static_cast<size_t>(reinterpret_cast<char*>(state_->next_out) - buf);
      if (rc < 0) {
        // What was decoded before the corruption is returned first; the error comes next.
        const Status bad = Corrupt(rc);
        return produced ? Result<size_t>(produced) : Result<size_t>(bad);
      }
      if (state_->block_state == ISAL_BLOCK_FINISH) in_member_ = false;
    }
    return produced;
  }
  bool truncated() const override { return truncated_; }
  Compression compression() const override { return Compression::kGzip; }

 private:
  // Records (error_) and returns the corruption an ISA-L code names.
  Status Corrupt(int rc) {
    error_ = ParseError(path() + ": corrupt gzip data at about compressed byte " + std::to_string(InputOffset(in_pos_)) +
                        " (" + IsalError(rc) + ")");
    return error_;
  }

  std::unique_ptr<inflate_state> state_;  // about 40 KB: on the heap
  bool in_member_ = false;
};

class ZstdSource final : public CompressedSource {
 public:
  ZstdSource(std::string path, std::unique_ptr<RawFile> f, std::string head)
      : CompressedSource(std::move(path), std::move(f), std::move(head)), ds_(ZSTD_createDStream()) {}
  ~ZstdSource() override { ZSTD_freeDStream(ds_); }
  // Input and output go in slices of zstd's recommended stream buffer sizes, one block or so a
  // call, as the zstd tool decodes: the output of a call that meets corruption is lost, so
  // small calls keep what was decoded before it, and it is returned before the error.
  Result<size_t> ReadMore(char* buf, size_t n) override {
    if (!ds_) return Internal(path() + ": zstd initialisation failed");
    if (!error_.ok()) return error_;
    size_t produced = 0;
    while (produced < n && !eof_) {
      auto more = Refill();
      if (!more.ok()) return more.status();
      // At the end of the input, zstd may still hold decoded bytes a full output slice left
      // behind: called with no input until it gives none.
      ZSTD_inBuffer in{in_.data(), *more ? std::min(in_len_, in_pos_ + ZSTD_DStreamInSize()) : in_pos_, in_pos_};
      ZSTD_outBuffer out{buf + produced, std::min(n - produced, ZSTD_DStreamOutSize()), 0};
      const size_t hint = ZSTD_decompressStream(ds_, &out, &in);
      if (ZSTD_isError(hint)) {
        error_ = ParseError(path() + ": corrupt zstd data at about compressed byte " + std::to_string(InputOffset(in.pos)) +
                            " (" + ZSTD_getErrorName(hint) + ")");
        return produced ? Result<size_t>(produced) : Result<size_t>(error_);
      }
      if (!*more && out.pos == 0) {  // the end: judged by the last call that did something
        eof_ = true;
        truncated_ = last_hint_ != 0;
        break;
      }
      last_hint_ = hint;
      in_pos_ = in.pos;
      produced += out.pos;
      if (out.pos == 0 && produced > 0) break;  // nothing more without new input: hand over
    }
    return produced;
  }
  bool truncated() const override { return truncated_; }
  Compression compression() const override { return Compression::kZstd; }

 private:
  ZSTD_DStream* ds_;
  size_t last_hint_ = 0;
};

// The decompressed size of a regular file, read without moving its offset: its size, a gzip
// member's ISIZE trailer (the last member's size mod 2^32: a hint only), a zstd frame's content
// size when the frame header states it. 0 when unknown (pipes, other files).
uint64_t SizeHint(int fd, Compression kind) {
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) return 0;
  const uint64_t size = uint64_t(st.st_size);
  if (kind == Compression::kNone) return size;
  if (kind == Compression::kGzip) {
    unsigned char t[4];
    if (size < 18 || ::pread(fd, t, 4, off_t(size - 4)) != 4) return 0;
    return uint64_t(t[0]) | uint64_t(t[1]) << 8 | uint64_t(t[2]) << 16 | uint64_t(t[3]) << 24;
  }
  char h[ZSTD_FRAMEHEADERSIZE_MAX];
  const ssize_t n = ::pread(fd, h, sizeof h, 0);
  if (n <= 0) return 0;
  const unsigned long long c = ZSTD_getFrameContentSize(h, size_t(n));
  return c == ZSTD_CONTENTSIZE_UNKNOWN || c == ZSTD_CONTENTSIZE_ERROR ? 0 : uint64_t(c);
}

}  // namespace

Result<std::unique_ptr<ByteSource>> OpenByteSource(const std::string& path) {
  int fd = path == "-" ? ::dup(0) : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound(path + ": no such file");
    return IoError(path + ": cannot open: " + std::strerror(errno));
  }
  auto file = std::make_unique<RawFile>(fd);
  std::string head(4, '\0');
  size_t got = 0;
  while (got < head.size()) {
    ssize_t r = file->Read(head.data() + got, head.size() - got);
    if (r < 0) {
      if (errno == EISDIR) return InvalidArgument(path + ": is a directory");
      return ReadError(path);
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  head.resize(got);
  const auto* u = reinterpret_cast<const unsigned char*>(head.data());
  std::unique_ptr<ByteSource> src;
  Compression kind = Compression::kNone;
  if (got >= 2 && u[0] == 0x1f && u[1] == 0x8b) kind = Compression::kGzip;
  if (got >= 4 && u[0] == 0x28 && u[1] == 0xb5 && u[2] == 0x2f && u[3] == 0xfd) kind = Compression::kZstd;
  const uint64_t hint = SizeHint(fd, kind);
  if (kind == Compression::kGzip) src.reset(new GzipSource(path, std::move(file), std::move(head)));
  else if (kind == Compression::kZstd) src.reset(new ZstdSource(path, std::move(file), std::move(head)));
  else src.reset(new PlainSource(path, std::move(file), std::move(head)));
  src->set_size_hint(hint);
  struct stat st;
  src->set_rereadable(path != "-" && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode));
  return src;
}

Result<size_t> ByteSource::Read(char* buf, size_t n) {
  if (peeked_pos_ < peeked_.size()) {
    const size_t k = std::min(n, peeked_.size() - peeked_pos_);
    std::memcpy(buf, peeked_.data() + peeked_pos_, k);
    peeked_pos_ += k;
    if (peeked_pos_ == peeked_.size()) {
      std::string().swap(peeked_);
      peeked_pos_ = 0;
    }
    return k;
  }
  if (!pending_.ok()) return std::exchange(pending_, Status::Ok());
  return ReadMore(buf, n);
}

Result<std::string_view> ByteSource::Peek(size_t n) {
  if (peeked_pos_ > 0) {  // keep only what is still unread
    peeked_.erase(0, peeked_pos_);
    peeked_pos_ = 0;
  }
  while (peeked_.size() < n && pending_.ok()) {
    const size_t have = peeked_.size();
    peeked_.resize(n);
    Result<size_t> r = ReadMore(peeked_.data() + have, n - have);
    peeked_.resize(have + (r.ok() ? *r : 0));
    if (!r.ok()) pending_ = r.status();
    else if (*r == 0) break;
  }
  if (peeked_.empty() && !pending_.ok()) return std::exchange(pending_, Status::Ok());
  return std::string_view(peeked_).substr(0, n);
}

}  // namespace truffld
