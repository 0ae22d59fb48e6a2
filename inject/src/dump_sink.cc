// DumpSink: see dump_sink.h.
#include "dump_sink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#ifndef TRUFFLD_WITHOUT_ZSTD
#include <zstd.h>
#endif

#include <cerrno>
#include <cstring>
#include <vector>

namespace truffld::inject {

#ifdef TRUFFLD_WITHOUT_ZSTD
// A build without libzstd (tests/gpu/run.sh's direct compile on a machine with no zstd.h):
// Config never selects kZstd there, so these stand-ins are never reached with real data.
struct ZSTD_CStream;
namespace {
constexpr size_t ZSTD_CStreamOutSize() { return 0; }
inline ZSTD_CStream* ZSTD_createCStream() { return nullptr; }
inline void ZSTD_freeCStream(ZSTD_CStream*) {}
inline void ZSTD_initCStream(ZSTD_CStream*, int) {}
struct ZSTD_inBuffer { const void* src; size_t size; size_t pos; };
struct ZSTD_outBuffer { void* dst; size_t size; size_t pos; };
inline size_t ZSTD_compressStream(ZSTD_CStream*, ZSTD_outBuffer*, ZSTD_inBuffer* in) { in->pos = in->size; return 1; }
inline size_t ZSTD_flushStream(ZSTD_CStream*, ZSTD_outBuffer*) { return 1; }
inline size_t ZSTD_endStream(ZSTD_CStream*, ZSTD_outBuffer*) { return 1; }
inline bool ZSTD_isError(size_t) { return true; }
inline const char* ZSTD_getErrorName(size_t) { return "this build has no zstd"; }
}  // namespace
#endif

struct DumpSink::Zstd {
  ZSTD_CStream* stream = nullptr;
  std::vector<char> out;
  ~Zstd() { if (stream) ZSTD_freeCStream(stream); }
};

DumpSink::DumpSink(std::string dir, Compression c, unsigned mode, Log log)
    : dir_(std::move(dir)), compression_(c), mode_(mode), log_(std::move(log)) {}

DumpSink::~DumpSink() { Close(); }

void DumpSink::Fail(const std::string& what, int err) {
  ++write_errors_;
  if (!warned_) {
    warned_ = true;
    log_(what + (err ? std::string(": ") + std::strerror(err) : std::string()) +
         "; further trace data of this process is counted as write errors, the application is unaffected");
  }
}

bool DumpSink::Open(const std::function<std::string(int)>& name_for_attempt) {
  if (::mkdir(dir_.c_str(), 0750) != 0 && errno != EEXIST) {
    Fail("cannot create output directory " + dir_, errno);
    broken_ = true;
    return false;
  }
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::string p = dir_ + "/" + name_for_attempt(attempt);
    const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode_);
    if (fd >= 0) {
      ::fchmod(fd, mode_);  // not narrowed by the umask: the documented mode is what you get
      fd_ = fd;
      path_ = std::move(p);
      if (compression_ == Compression::kZstd) {
        zstd_ = std::make_unique<Zstd>();
        zstd_->stream = ZSTD_createCStream();
        ZSTD_initCStream(zstd_->stream, 3);
        zstd_->out.resize(ZSTD_CStreamOutSize());
      }
      return true;
    }
    if (errno != EEXIST) {
      Fail("cannot create trace file " + p, errno);
      broken_ = true;
      return false;
    }
  }
  Fail("cannot create a trace file in " + dir_ + " (16 names already exist)", 0);
  broken_ = true;
  return false;
}

bool DumpSink::WriteRaw(const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      Fail("writing " + path_ + " failed", errno);
      broken_ = true;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
    bytes_written_ += static_cast<uint64_t>(w);
  }
  return true;
}

bool DumpSink::Write(std::string_view bytes) {
  if (bytes.empty()) return true;
  if (fd_ < 0 || broken_) { ++write_errors_; return false; }
  if (!zstd_) return WriteRaw(bytes.data(), bytes.size());
  ZSTD_inBuffer in{bytes.data(), bytes.size(), 0};
  while (in.pos < in.size) {
    ZSTD_outBuffer out{zstd_->out.data(), zstd_->out.size(), 0};
    const size_t rc = ZSTD_compressStream(zstd_->stream, &out, &in);
    if (ZSTD_isError(rc)) { Fail(std::string("zstd: ") + ZSTD_getErrorName(rc), 0); broken_ = true; return false; }
    if (out.pos && !WriteRaw(zstd_->out.data(), out.pos)) return false;
  }
  return true;
}

void DumpSink::Flush() {
  if (fd_ < 0 || broken_ || !zstd_) return;
  size_t rc;
  do {
    ZSTD_outBuffer out{zstd_->out.data(), zstd_->out.size(), 0};
    rc = ZSTD_flushStream(zstd_->stream, &out);
    if (ZSTD_isError(rc)) { Fail(std::string("zstd: ") + ZSTD_getErrorName(rc), 0); broken_ = true; return; }
    if (out.pos && !WriteRaw(zstd_->out.data(), out.pos)) return;
  } while (rc != 0);
}

void DumpSink::Close() {
  if (fd_ < 0) return;
  if (zstd_ && !broken_) {
    size_t rc;
    do {
      ZSTD_outBuffer out{zstd_->out.data(), zstd_->out.size(), 0};
      rc = ZSTD_endStream(zstd_->stream, &out);
      if (ZSTD_isError(rc) || (out.pos && !WriteRaw(zstd_->out.data(), out.pos))) break;
    } while (rc != 0);
  }
  zstd_.reset();
  ::close(fd_);
  fd_ = -1;
}

}  // namespace truffld::inject

namespace truffld::inject {
void DumpSink::AbandonInChild() {
  if (zstd_) (void)zstd_.release();  // its state belongs to the parent's stream
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}
}  // namespace truffld::inject
