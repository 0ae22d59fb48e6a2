// AtomicFile: how the command-line tools create their output files.
//
// Why: an output directory may already hold a file (or a symlink planted by someone else) under
// the name a tool writes; opening that name for writing would follow the link and overwrite its
// target, and a run that dies half-way would leave a truncated file under the final name. So an
// output is written to a fresh temporary name in the same directory, created with
// O_CREAT|O_EXCL|O_NOFOLLOW (never an existing file, never through a link) and mode 0640, and
// renamed over the final name only when it is complete: a reader sees the old file or the new
// one, never part of one, and a planted link is replaced, not followed.
//
// Usage: Create(final_path), write through fd() (or hand the descriptor to a writer with
// ReleaseFd), then Commit(). An AtomicFile destroyed without Commit removes its temporary file.
// Tools that write several outputs create them all and commit them together at the end, so a
// failed run leaves the previous run's set of outputs as it was.
// Thread-safety: one object per thread; distinct objects are independent.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "truffld/status.h"

namespace truffld {

class AtomicFile {
 public:
  // Creates a temporary file ".<name>.tmp-<pid>-<n>" beside `final_path`. kIoError naming the
  // directory when it cannot be created there (missing directory, no permission, full disk).
  static Result<AtomicFile> Create(const std::string& final_path);

  AtomicFile(AtomicFile&& other) noexcept;
  AtomicFile& operator=(AtomicFile&& other) noexcept;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();  // not committed: closes and unlinks the temporary file

  const std::string& path() const noexcept { return final_path_; }
  const std::string& temp_path() const noexcept { return temp_path_; }
  // The open descriptor (O_WRONLY), or -1 after ReleaseFd/Close.
  int fd() const noexcept { return fd_; }
  // A path naming the open file itself ("/proc/self/fd/N" on Linux), for writers that only take
  // a path: opening it reaches this file even if its name was replaced meanwhile. Falls back to
  // temp_path() where /proc is absent.
  std::string fd_path() const;
  // Hands the descriptor to a writer that closes it itself (stdio's fdopen, DirectWriter). The
  // temporary file stays owned: it is still renamed by Commit or removed by the destructor.
  int ReleaseFd() noexcept;

  // Writes all of `bytes` (retrying short writes and EINTR); kIoError names the final path.
  Status Write(std::string_view bytes);
  // Closes the descriptor if still held, checking for delayed write errors.
  Status Close();
  // Close() if needed, then renames the temporary file over the final name.
  Status Commit();

 private:
  AtomicFile(std::string final_path, std::string temp_path, int fd);
  void Discard() noexcept;
  std::string final_path_, temp_path_;
  int fd_ = -1;
  bool committed_ = true;  // nothing to clean up (moved-from)
};

// Writes `bytes` to `final_path` through an AtomicFile and commits it.
Status WriteFileAtomically(const std::string& final_path, std::string_view bytes);

// Removes an earlier run's output that this run does not write (trace.json after
// --no-trace-json): a regular file or a symlink (the link itself, never its target) is
// unlinked; nothing there is fine. Sets *removed when something was removed. kIoError for a
// directory or anything else under that name, or when unlinking fails.
Status RemoveStaleOutput(const std::string& path, bool* removed = nullptr);

// The outputs of one run, committed together: each is written complete under a temporary name
// (AtomicFile); Commit renames them all into place, then removes the earlier run's outputs this
// run does not write. Destroyed without Commit, it removes its temporary files and leaves the
// earlier outputs as they were. Paths are full paths (outputs may live in different folders).
class OutputSet {
 public:
  // Writes `bytes` as `path`.
  Status Add(const std::string& path, std::string_view bytes);
  // For a writer that only takes a path: calls `write` with a path naming the temporary file
  // (AtomicFile::fd_path) and keeps the file when it returns Ok. A `path` that is a character
  // device or a FIFO (a user's --export-features /dev/stdout) has nothing to replace: `write`
  // gets `path` itself, at once.
  Status AddWith(const std::string& path, const std::function<Status(const std::string&)>& write);
  // `path` is not an output of this run: a stale copy is removed at Commit (RemoveStaleOutput).
  void RemoveAtCommit(const std::string& path) { stale_.push_back(path); }
  Status Commit();

 private:
  std::vector<AtomicFile> files_;
  std::vector<std::string> stale_;
};

}  // namespace truffld
