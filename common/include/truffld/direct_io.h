// The direct I/O (O_DIRECT) flag of an open file, set or cleared with fcntl: one copy for the
// writers that turn it on after opening and off when a device refuses an alignment (the
// merge's DirectWriter, the injector's DumpSink). Header-only, so the injector takes it
// without linking truffld_common. Linux only: elsewhere it fails with ENOTSUP.
// Thread-safety: none needed beyond the descriptor's own (fcntl on one fd).
#pragma once

#include <cerrno>
#if defined(__linux__)
#include <fcntl.h>
#endif

namespace truffld {

// Sets (on) or clears O_DIRECT on `fd`. False, the flag unchanged and errno from fcntl, when it
// could not be changed (EINVAL on setting: the file system does not take direct I/O).
inline bool SetDirectIo(int fd, bool on) noexcept {
#if defined(__linux__) && defined(O_DIRECT)
  const int fl = ::fcntl(fd, F_GETFL);
  return fl >= 0 && ::fcntl(fd, F_SETFL, on ? (fl | O_DIRECT) : (fl & ~O_DIRECT)) == 0;
#else
  (void)fd;
  (void)on;
  errno = ENOTSUP;
  return false;
#endif
}

}  // namespace truffld
