#include "truffld/byte_source.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>
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
  Result<size_t> Read(char* buf, size_t n) override {
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

  std::unique_ptr<RawFile> file_;
  std::vector<char> in_;
  size_t in_pos_ = 0, in_len_ = 0;
  bool eof_ = false;
  bool truncated_ = false;
};

class GzipSource final : public CompressedSource {
 public:
  GzipSource(std::string path, std::unique_ptr<RawFile> f, std::string head)
      : CompressedSource(std::move(path), std::move(f), std::move(head)) {
    std::memset(&zs_, 0, sizeof(zs_));
    ok_ = inflateInit2(&zs_, 15 + 32) == Z_OK;
  }
  ~GzipSource() override { inflateEnd(&zs_); }
  Result<size_t> Read(char* buf, size_t n) override {
    if (!ok_) return Internal(path() + ": zlib initialisation failed");
    size_t produced = 0;
    while (produced == 0 && !eof_) {
      auto more = Refill();
      if (!more.ok()) return more.status();
      if (!*more) {
        eof_ = true;
        truncated_ = in_member_;
        break;
      }
      zs_.next_in = reinterpret_cast<Bytef*>(in_.data() + in_pos_);
      zs_.avail_in = static_cast<uInt>(in_len_ - in_pos_);
      zs_.next_out = reinterpret_cast<Bytef*>(buf);
      zs_.avail_out = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
      in_member_ = true;
      int rc = inflate(&zs_, Z_NO_FLUSH);
      in_pos_ = in_len_ - zs_.avail_in;
      produced = static_cast<size_t>(reinterpret_cast<char*>(zs_.next_out) - buf);
      if (rc == Z_STREAM_END) {
        in_member_ = false;
        inflateReset(&zs_);  // a following gzip member, if any, starts fresh
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return ParseError(path() + ": corrupt gzip data after " +
                          std::to_string(raw_bytes_read()) + " compressed bytes (" +
                          (zs_.msg ? zs_.msg : "zlib error") + ")");
      }
    }
    return produced;
  }
  bool truncated() const override { return truncated_; }
  Compression compression() const override { return Compression::kGzip; }

 private:
  z_stream zs_;
  bool ok_ = false;
  bool in_member_ = false;
};

class ZstdSource final : public CompressedSource {
 public:
  ZstdSource(std::string path, std::unique_ptr<RawFile> f, std::string head)
      : CompressedSource(std::move(path), std::move(f), std::move(head)), ds_(ZSTD_createDStream()) {}
  ~ZstdSource() override { ZSTD_freeDStream(ds_); }
  Result<size_t> Read(char* buf, size_t n) override {
    if (!ds_) return Internal(path() + ": zstd initialisation failed");
    size_t produced = 0;
    while (produced == 0 && !eof_) {
      auto more = Refill();
      if (!more.ok()) return more.status();
      if (!*more) {
        eof_ = true;
        truncated_ = last_hint_ != 0;
        break;
      }
      ZSTD_inBuffer in{in_.data(), in_len_, in_pos_};
      ZSTD_outBuffer out{buf, n, 0};
      size_t hint = ZSTD_decompressStream(ds_, &out, &in);
      if (ZSTD_isError(hint)) {
        return ParseError(path() + ": corrupt zstd data after " +
                          std::to_string(raw_bytes_read()) + " compressed bytes (" +
                          ZSTD_getErrorName(hint) + ")");
      }
      last_hint_ = hint;
      in_pos_ = in.pos;
      produced = out.pos;
    }
    return produced;
  }
  bool truncated() const override { return truncated_; }
  Compression compression() const override { return Compression::kZstd; }

 private:
  ZSTD_DStream* ds_;
  size_t last_hint_ = 0;
};

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
  if (got >= 2 && u[0] == 0x1f && u[1] == 0x8b)
    return std::unique_ptr<ByteSource>(new GzipSource(path, std::move(file), std::move(head)));
  if (got >= 4 && u[0] == 0x28 && u[1] == 0xb5 && u[2] == 0x2f && u[3] == 0xfd)
    return std::unique_ptr<ByteSource>(new ZstdSource(path, std::move(file), std::move(head)));
  return std::unique_ptr<ByteSource>(new PlainSource(path, std::move(file), std::move(head)));
}

Result<std::string> ReadWholeFile(const std::string& path, bool allow_truncated) {
  auto src = OpenByteSource(path);
  if (!src.ok()) return src.status();
  std::string out;
  size_t cap = 1 << 20;
  for (;;) {
    size_t old = out.size();
    if (out.capacity() - old < cap) out.reserve(std::max(out.capacity() * 2, old + cap));
    out.resize(out.capacity());
    auto r = (*src)->Read(out.data() + old, out.size() - old);
    if (!r.ok()) return r.status();
    out.resize(old + *r);
    if (*r == 0) break;
  }
  if ((*src)->truncated() && !allow_truncated)
    return Truncated(path + ": " + CompressionName((*src)->compression()) +
                     " stream ends early (file cut short?) after " + std::to_string(out.size()) +
                     " decompressed bytes");
  return out;
}

}  // namespace truffld
