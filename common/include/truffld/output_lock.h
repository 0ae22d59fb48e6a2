// OutputLock: one writer per output directory.
//
// Two runs writing the same -o directory at once would each rename their complete files into
// place, and the directory could end up holding trees.jsonl from one run and trace.json and
// summary.json from the other, with both exiting 0. A run therefore holds an exclusive flock(2)
// on OUTDIR/.truffld.lock from before it writes until it exits. The lock file is opened with
// O_NOFOLLOW (a planted symlink is refused, never followed) and holds the holder's tool name
// and process id, so a refused run can say who holds it. The lock is released when the object
// is destroyed or the process exits (even killed); the file itself is left in place (removing
// it would let a third run lock a fresh file while the second still holds the old one).
// Thread-safety: one instance per process and directory; not shared between threads.
#pragma once

#include <string>

#include "truffld/status.h"

namespace truffld {

class OutputLock {
 public:
  // The lock file's name inside the output directory.
  static constexpr const char* kFileName = ".truffld.lock";

  // Locks `dir` (which must exist) for `tool`. wait=false: when another process holds it,
  // fails at once with kUnavailable naming the lock file and the holder ("truffld-merge, pid
  // 1234"); wait=true blocks until it is free. IoError when the file cannot be opened (a
  // symlink in its place, no permission).
  static Result<OutputLock> Acquire(const std::string& dir, const std::string& tool, bool wait);

  OutputLock(OutputLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  OutputLock& operator=(OutputLock&& other) noexcept;
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
  ~OutputLock();

 private:
  explicit OutputLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace truffld
