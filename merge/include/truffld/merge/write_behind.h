// WriteBehind: writes a large output file back to disk as it is produced and drops the written
// part from the page cache, so a multi-GB merge output neither fills memory with cached pages
// nor evicts what the host keeps cached (on an inference node: model weights).
//
// Why: truffld-merge writes about 300 bytes of output per input event (3 GB for a 10 M-event
// dump). Through the page cache every one of those bytes lands in a freshly allocated page;
// on a virtual machine whose host backs guest memory lazily, that first touch was measured at
// 3.3-4.5 s of kernel time for the 10 M dump, more than the whole merge's user time. Recycling a
// bounded set of pages instead brought it to about 0.9 s, and the wall time from 6.6-7.7 s to
// 4.35 s. The same technique bounds dirty memory in databases (RocksDB's bytes_per_sync,
// PostgreSQL's backend_flush_after).
//
// How: the file is cut into windows of `window` bytes. When a window is complete, its writeback
// is started (sync_file_range WRITE, which returns at once); the window before it is then waited
// for (it has had a whole window's worth of writing time to reach the disk) and dropped
// (posix_fadvise DONTNEED). At most about two windows are cached at any time. The last partial
// windows stay cached and are written back by the kernel as usual. A later reader reads the
// file from disk (1.7 GB in 0.58 s on this project's VM).
//
// Only regular files on Linux take part; for anything else (a pipe, /dev/null, another OS, a
// file system that refuses sync_file_range) WriteBehind does nothing: it is a memory hint.
// A disk error reported by the wait (EIO, ENOSPC) is returned, since the kernel would otherwise
// report it to nobody. Units: bytes, offsets from the position the file had when constructed.
// Thread-safety: one WriteBehind per file, used by the thread that writes the file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "truffld/status.h"

namespace truffld::merge {

class WriteBehind {
 public:
  static constexpr uint64_t kDefaultWindow = uint64_t{32} << 20;  // 32 MiB

  // The system call that starts and waits for writeback (Linux's sync_file_range); tests pass
  // one that fails, to reach the error paths.
  using SyncFileRange = int (*)(int fd, int64_t offset, int64_t bytes, unsigned flags);

  // `f` is the stream the caller writes; its descriptor is flushed and hinted, never closed.
  // `name` names the file in errors. `sync` null: the system's.
  WriteBehind(std::FILE* f, std::string name, uint64_t window = kDefaultWindow,
              SyncFileRange sync = nullptr);

  // Call after `bytes` more bytes were handed to the stream (fwrite returned). May flush the
  // stream, start writeback and wait for an earlier window. Returns IoError on a disk error.
  Status Wrote(uint64_t bytes);

  bool active() const { return active_; }  // false: a no-op (see above)
  // Bytes written through this WriteBehind and dropped from the cache so far, and the file
  // offset they end at (the file's bytes before the WriteBehind was made are never touched).
  uint64_t dropped_bytes() const { return dropped_ - base_; }
  uint64_t dropped_until() const { return dropped_; }

 private:
  Status Advance();

  [[maybe_unused]] std::FILE* f_;  // unused where the platform has no write-behind
  std::string name_;
  uint64_t window_;
  [[maybe_unused]] SyncFileRange sync_;
  [[maybe_unused]] int fd_ = -1;
  bool active_ = false;
  uint64_t base_ = 0;     // file offset when constructed
  uint64_t written_ = 0;  // offset just past the bytes handed to the stream
  uint64_t started_ = 0;  // writeback requested up to here
  uint64_t dropped_ = 0;  // written back and dropped up to here
};

}  // namespace truffld::merge
