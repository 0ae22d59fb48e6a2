// Filesystem adapter for ByteSink: stdio for plain output, streaming zstd for .zst output.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include <zstd.h>

#include "truffld/synth/byte_sink.h"

namespace truffld::synth {
namespace {

class FileSink final : public ByteSink {
 public:
  FileSink(std::FILE* f, std::string path, int zstd_level) : f_(f), path_(std::move(path)) {
    if (zstd_level > 0) {
      cctx_ = ZSTD_createCCtx();
      ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, zstd_level);
      out_.resize(ZSTD_CStreamOutSize());
    }
  }
  ~FileSink() override { (void)Close(); }

  Status Write(std::string_view bytes) override {
    if (!f_) return IoError(path_ + ": write after close");
    if (!cctx_) return Put(bytes.data(), bytes.size());
    ZSTD_inBuffer in{bytes.data(), bytes.size(), 0};
    while (in.pos < in.size) {
      ZSTD_outBuffer out{out_.data(), out_.size(), 0};
      const size_t rc = ZSTD_compressStream2(cctx_, &out, &in, ZSTD_e_continue);
      if (ZSTD_isError(rc)) return IoError(path_ + ": zstd: " + ZSTD_getErrorName(rc));
      TRUFFLD_RETURN_IF_ERROR(Put(out_.data(), out.pos));
    }
    return Status::Ok();
  }

  Status Close() override {
    if (!f_) return Status::Ok();
    Status st;
    if (cctx_) {
      ZSTD_inBuffer in{nullptr, 0, 0};
      size_t remaining = 1;
      while (remaining != 0 && st.ok()) {
        ZSTD_outBuffer out{out_.data(), out_.size(), 0};
        remaining = ZSTD_compressStream2(cctx_, &out, &in, ZSTD_e_end);
        if (ZSTD_isError(remaining)) {
          st = IoError(path_ + ": zstd: " + ZSTD_getErrorName(remaining));
          break;
        }
        st = Put(out_.data(), out.pos);
      }
      ZSTD_freeCCtx(cctx_);
      cctx_ = nullptr;
    }
    if (std::fclose(f_) != 0 && st.ok()) st = IoError(path_ + ": close: " + std::strerror(errno));
    f_ = nullptr;
    return st;
  }

 private:
  Status Put(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n) return IoError(path_ + ": write: " + std::strerror(errno));
    return Status::Ok();
  }
  std::FILE* f_;
  std::string path_;
  ZSTD_CCtx* cctx_ = nullptr;
  std::vector<char> out_;
};

}  // namespace

Result<std::unique_ptr<ByteSink>> OpenFileSink(const std::string& path, int zstd_level) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return IoError(path + ": cannot create: " + std::strerror(errno));
  std::setvbuf(f, nullptr, _IOFBF, 1 << 20);
  return std::unique_ptr<ByteSink>(new FileSink(f, path, zstd_level));
}

}  // namespace truffld::synth
