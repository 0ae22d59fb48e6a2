// AtomicFile (see atomic_file.h): exclusive temporary file, rename on commit.
#include "truffld/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace truffld {
namespace {

std::string Errno() { return std::strerror(errno); }

// "dir/name" -> {"dir/", "name"}; "name" -> {"", "name"}.
std::pair<std::string, std::string> SplitPath(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {"", path};
  return {path.substr(0, slash + 1), path.substr(slash + 1)};
}

}  // namespace

AtomicFile::AtomicFile(std::string final_path, std::string temp_path, int fd)
    : final_path_(std::move(final_path)), temp_path_(std::move(temp_path)), fd_(fd), committed_(false) {}

AtomicFile::AtomicFile(AtomicFile&& other) noexcept
    : final_path_(std::move(other.final_path_)), temp_path_(std::move(other.temp_path_)),
      fd_(std::exchange(other.fd_, -1)), committed_(std::exchange(other.committed_, true)) {}

AtomicFile& AtomicFile::operator=(AtomicFile&& other) noexcept {
  if (this != &other) {
    Discard();
    final_path_ = std::move(other.final_path_);
    temp_path_ = std::move(other.temp_path_);
    fd_ = std::exchange(other.fd_, -1);
    committed_ = std::exchange(other.committed_, true);
  }
  return *this;
}

AtomicFile::~AtomicFile() { Discard(); }

void AtomicFile::Discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!committed_) ::unlink(temp_path_.c_str());
  committed_ = true;
}

Result<AtomicFile> AtomicFile::Create(const std::string& final_path) {
  static std::atomic<unsigned> counter{0};
  auto [dir, name] = SplitPath(final_path);
  if (name.empty()) return IoError(final_path + ": not a file name");
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string temp = dir + "." + name + ".tmp-" + std::to_string(::getpid()) + "-" +
                             std::to_string(counter.fetch_add(1));
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
    if (fd >= 0) return AtomicFile(final_path, temp, fd);
    if (errno != EEXIST) {
      return IoError(final_path + ": cannot create a file in " + (dir.empty() ? "." : dir) + ": " + Errno());
    }
  }
  return IoError(final_path + ": cannot create a temporary file beside it (100 names taken)");
}

std::string AtomicFile::fd_path() const {
  if (fd_ < 0) return temp_path_;
  const std::string proc = "/proc/self/fd/" + std::to_string(fd_);
  struct stat via_proc, via_fd;
  if (::stat(proc.c_str(), &via_proc) == 0 && ::fstat(fd_, &via_fd) == 0 &&
      via_proc.st_ino == via_fd.st_ino && via_proc.st_dev == via_fd.st_dev) {
    return proc;
  }
  return temp_path_;
}

int AtomicFile::ReleaseFd() noexcept { return std::exchange(fd_, -1); }

Status AtomicFile::Write(std::string_view bytes) {
  if (fd_ < 0) return IoError(final_path_ + ": write after close");
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return IoError(final_path_ + ": write failed: " + (n < 0 ? Errno() : "no progress"));
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Status AtomicFile::Close() {
  if (fd_ < 0) return Status::Ok();
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) return IoError(final_path_ + ": close failed: " + Errno());
  return Status::Ok();
}

Status AtomicFile::Commit() {
  if (committed_) return Internal(final_path_ + ": AtomicFile committed twice or moved from");
  TRUFFLD_RETURN_IF_ERROR(Close());
  if (::rename(temp_path_.c_str(), final_path_.c_str()) != 0) {
    return IoError(final_path_ + ": cannot rename the finished file into place: " + Errno());
  }
  committed_ = true;
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& final_path, std::string_view bytes) {
  Result<AtomicFile> f = AtomicFile::Create(final_path);
  if (!f.ok()) return f.status();
  TRUFFLD_RETURN_IF_ERROR(f->Write(bytes));
  return f->Commit();
}

Status RemoveStaleOutput(const std::string& path, bool* removed) {
  if (removed) *removed = false;
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return IoError(path + ": cannot inspect: " + Errno());
  }
  if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
    return IoError(path + ": exists and is not a file; remove it or choose another output directory");
  }
  if (::unlink(path.c_str()) != 0) return IoError(path + ": cannot remove the earlier run's file: " + Errno());
  if (removed) *removed = true;
  return Status::Ok();
}

Status OutputSet::Add(const std::string& path, std::string_view bytes) {
  Result<AtomicFile> f = AtomicFile::Create(path);
  if (!f.ok()) return f.status();
  TRUFFLD_RETURN_IF_ERROR(f->Write(bytes));
  TRUFFLD_RETURN_IF_ERROR(f->Close());
  files_.push_back(std::move(f).value());
  return Status::Ok();
}

Status OutputSet::AddWith(const std::string& path, const std::function<Status(const std::string&)>& write) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) return write(path);
  Result<AtomicFile> f = AtomicFile::Create(path);
  if (!f.ok()) return f.status();
  const std::string via = f->fd_path();
  Status written = write(via);
  if (!written.ok()) {
    // The writer saw only "/proc/self/fd/N"; the user needs the file they asked for.
    std::string msg = written.message();
    for (size_t at = msg.find(via); at != std::string::npos; at = msg.find(via, at + path.size()))
      msg.replace(at, via.size(), path);
    return Status(written.code(), std::move(msg));
  }
  TRUFFLD_RETURN_IF_ERROR(f->Close());
  files_.push_back(std::move(f).value());
  return Status::Ok();
}

Status OutputSet::Commit() {
  for (AtomicFile& f : files_) TRUFFLD_RETURN_IF_ERROR(f.Commit());
  for (const std::string& path : stale_) TRUFFLD_RETURN_IF_ERROR(RemoveStaleOutput(path));
  files_.clear();
  stale_.clear();
  return Status::Ok();
}

}  // namespace truffld
