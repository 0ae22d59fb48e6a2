// WriteBehind implementation (see write_behind.h). Linux system calls only; elsewhere inactive.
#include "truffld/merge/write_behind.h"

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#if defined(__linux__)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace truffld::merge {

#if defined(__linux__)
namespace {
int SystemSyncFileRange(int fd, int64_t offset, int64_t bytes, unsigned flags) {
  return sync_file_range(fd, off_t(offset), off_t(bytes), flags);
}
}  // namespace
#endif

WriteBehind::WriteBehind(std::FILE* f, std::string name, uint64_t window, SyncFileRange sync)
    : f_(f), name_(std::move(name)), window_(window == 0 ? kDefaultWindow : window), sync_(sync) {
#if defined(__linux__)
  if (!sync_) sync_ = SystemSyncFileRange;
  if (!f_) return;
  fd_ = fileno(f_);
  struct stat st;
  if (fd_ < 0 || fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) return;
  if (std::fflush(f_) != 0) return;
  const off_t pos = lseek(fd_, 0, SEEK_CUR);
  if (pos < 0) return;
  base_ = written_ = started_ = dropped_ = static_cast<uint64_t>(pos);
  active_ = true;
#endif
}

Status WriteBehind::Wrote(uint64_t bytes) {
  if (!active_) return Status::Ok();
  written_ += bytes;
  if (written_ - started_ < window_) return Status::Ok();
  return Advance();
}

Status WriteBehind::Advance() {
#if defined(__linux__)
  // The stream's own buffer must reach the descriptor before its range is written back.
  if (std::fflush(f_) != 0) return IoError(name_ + ": write failed: " + std::strerror(errno));
  auto give_up = [&](int err) -> Status {
    // A disk error is the caller's business; anything else means "not supported here".
    if (err == EIO || err == ENOSPC || err == EDQUOT)
      return IoError(name_ + ": writing back to disk failed: " + std::strerror(err));
    active_ = false;
    return Status::Ok();
  };
  if (sync_(fd_, int64_t(started_), int64_t(written_ - started_), SYNC_FILE_RANGE_WRITE) != 0)
    return give_up(errno);
  if (started_ > dropped_) {
    const int64_t off = int64_t(dropped_), len = int64_t(started_ - dropped_);
    if (sync_(fd_, off, len, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) != 0)
      return give_up(errno);
    // Clean pages of a file no one maps: dropped. Failure only leaves them cached.
    (void)posix_fadvise(fd_, off_t(off), off_t(len), POSIX_FADV_DONTNEED);
    dropped_ = started_;
  }
  started_ = written_;
#endif
  return Status::Ok();
}

}  // namespace truffld::merge
