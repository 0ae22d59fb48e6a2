// DumpSink: see dump_sink.h.
#include "dump_sink.h"

#include "truffld/direct_io.h"

#include <fcntl.h>
#include <time.h>
#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/stat.h>
#include <unistd.h>
#ifndef TRUFFLD_WITHOUT_ZSTD
#include <zstd.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstdlib>
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

namespace {
// tmpfs takes O_DIRECT (Linux 6.6 on) but still copies into its pages, and costs more so: a
// 1 M-pair NVTX run on /dev/shm added 381 ns a pair direct against 289 through the page cache.
bool InMemoryFileSystem(int fd) {
  struct statfs fs;
  return ::fstatfs(fd, &fs) == 0 && (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC);
}

int64_t MonotonicNs() {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
}  // namespace

DumpSink::DumpSink(std::string dir, Compression c, unsigned mode, Log log, bool direct)
    : dir_(std::move(dir)), compression_(c), mode_(mode), log_(std::move(log)), want_direct_(direct) {}

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
  if (!block_) block_.reset(static_cast<char*>(std::aligned_alloc(kAlign, kBlock)));
  if (!block_) {
    Fail("no memory for the trace file's buffer", ENOMEM);
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
      } else if (want_direct_ && !InMemoryFileSystem(fd)) {
        const long page = ::sysconf(_SC_PAGESIZE);
        unit_ = std::max<size_t>(kAlign, page > 0 ? static_cast<size_t>(page) : kAlign);
        positional_ = direct_ = unit_ <= kMaxUnit && SetFdDirect(true);
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

bool DumpSink::Compress(const char* p, size_t n) {
  ZSTD_inBuffer in{p, n, 0};
  while (in.pos < in.size) {
    ZSTD_outBuffer out{zstd_->out.data(), zstd_->out.size(), 0};
    const size_t rc = ZSTD_compressStream(zstd_->stream, &out, &in);
    if (ZSTD_isError(rc)) { Fail(std::string("zstd: ") + ZSTD_getErrorName(rc), 0); broken_ = true; return false; }
    if (out.pos && !WriteRaw(zstd_->out.data(), out.pos)) return false;
  }
  return true;
}

bool DumpSink::SetFdDirect(bool on) {
  if (fd_direct_ == on) return true;
  if (!SetDirectIo(fd_, on)) return false;
  fd_direct_ = on;
  return true;
}

void DumpSink::DirectOff(const char* why) {
  if (direct_ && *direct_stopped_ == '\0') direct_stopped_ = why;
  direct_ = false;
  SetFdDirect(false);  // if fcntl refuses, PWriteAll tries again before a cached write
}

bool DumpSink::PWriteAll(const char* p, size_t n, uint64_t offset, bool direct) {
  direct = direct && direct_;
  if (!SetFdDirect(direct)) {
    if (!direct) { Fail("writing " + path_ + " failed (cannot turn O_DIRECT off)", errno); broken_ = true; return false; }
    DirectOff("fcntl");  // cannot turn it back on: the rest through the cache
    direct = false;
  }
  while (n > 0) {
    const ssize_t w = pwrite_(fd_, p, n, static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EINVAL && direct) {  // the device wants another alignment
      DirectOff("refused");
      direct = false;
      if (fd_direct_) { Fail("writing " + path_ + " failed (cannot turn O_DIRECT off)", EINVAL); broken_ = true; return false; }
      continue;
    }
    if (w <= 0) { Fail("writing " + path_ + " failed", w < 0 ? errno : EIO); broken_ = true; return false; }
    p += w;
    n -= static_cast<size_t>(w);
    offset += static_cast<uint64_t>(w);
    bytes_written_ = std::max(bytes_written_, offset);
  }
  return true;
}

bool DumpSink::EmitUnits(bool tail) {
  const size_t whole = block_len_ & ~(unit_ - 1), rest = block_len_ - whole;
  size_t done = 0;
  if (cached_len_ > 0 && whole > 0) {  // never write a cached page directly: the kernel would flush it
    if (!PWriteAll(block_.get(), unit_, block_offset_, false)) return false;
    done = unit_;
  }
  if (whole > done) {
    const bool direct = direct_;  // only direct writes are timed
    const int64_t t0 = direct ? MonotonicNs() : 0;
    if (!PWriteAll(block_.get() + done, whole - done, block_offset_ + done, direct)) return false;
    if (direct && direct_ && MonotonicNs() - t0 > kSlowDirectWriteNs) {
      // A busy disk: a direct write waits for it while the rings fill; the page cache does not.
      DirectOff("slow_write");
    }
  }
  if (whole > 0) {
    std::memmove(block_.get(), block_.get() + whole, rest);
    block_offset_ += whole;
    block_len_ = rest;
    cached_len_ = 0;
  }
  // The partial unit through the cache, unless it is there already (an idle flush).
  if (tail && rest > cached_len_) {
    if (!PWriteAll(block_.get(), rest, block_offset_, false)) return false;
    cached_len_ = rest;
  }
  return true;
}

bool DumpSink::Spill(bool flush) {
  if (positional_) return EmitUnits(flush);
  const bool ok = zstd_ ? Compress(block_.get(), block_len_) : WriteRaw(block_.get(), block_len_);
  block_len_ = 0;
  return ok;
}

char* DumpSink::Room(size_t n) {
  if (fd_ < 0 || broken_ || n > kMaxRoom) return nullptr;
  if (block_len_ + n > kBlock && !Spill(false)) return nullptr;
  return block_.get() + block_len_;
}

bool DumpSink::Write(std::string_view bytes) {
  if (bytes.empty()) return true;
  if (fd_ < 0 || broken_) { ++write_errors_; return false; }
  while (!bytes.empty()) {
    if (block_len_ == kBlock && !Spill(false)) return false;
    const size_t k = std::min(bytes.size(), kBlock - block_len_);
    std::memcpy(block_.get() + block_len_, bytes.data(), k);
    block_len_ += k;
    bytes.remove_prefix(k);
  }
  return true;
}

void DumpSink::Flush() {
  if (fd_ < 0 || broken_ || !Spill(true) || !zstd_) return;
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
  if (!broken_ && Spill(true) && zstd_) {
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
  block_len_ = 0;  // the parent's text, not this process's to write
}
}  // namespace truffld::inject
