// OutputLock: see truffld/output_lock.h.
#include "truffld/output_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace truffld {
namespace {

// The holder's line ("truffld-merge pid 1234"), or "" when it cannot be read.
std::string Holder(int fd) {
  char buf[256];
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  std::string s(buf, size_t(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s;
}

}  // namespace

Result<OutputLock> OutputLock::Acquire(const std::string& dir, const std::string& tool, bool wait) {
  const std::string path = dir + "/" + kFileName;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0640);
  if (fd < 0) {
    const int err = errno;
    return IoError(path + ": cannot open the output lock: " +
                   (err == ELOOP ? std::string("it is a symbolic link (refused)") : std::strerror(err)));
  }
  OutputLock lock(fd);
  int rc;
  while ((rc = ::flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB))) != 0 && errno == EINTR) {}
  if (rc != 0) {
    const int err = errno;
    if (err != EWOULDBLOCK) return IoError(path + ": cannot lock: " + std::strerror(err));
    const std::string who = Holder(fd);
    return Unavailable(dir + " is being written by another run (" + (who.empty() ? "holder unknown" : who) +
                       ", holding " + path + "); wait for it to finish, or pass --wait-lock to wait");
  }
  const std::string me = tool + ", pid " + std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) != ssize_t(me.size()))
    return IoError(path + ": cannot write the output lock: " + std::strerror(errno));
  return lock;
}

OutputLock& OutputLock::operator=(OutputLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

OutputLock::~OutputLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace truffld
