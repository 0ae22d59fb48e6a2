// DirectWriter: writes one large output file with direct I/O (O_DIRECT) from a small ring of
// aligned buffers, on one background thread, so the text never passes through the page cache.
//
// Why: truffld-merge writes about 300 bytes of output per input event (3 GB for a 10 M-event
// dump). Through the page cache every byte is first copied into a cache page and then written
// back, and a multi-GB output fills the cache (evicting what the host keeps there: on an
// inference node, model weights). With direct I/O the disk reads the buffers the writers
// formatted the text into, and the background thread keeps the disk busy while the writers
// format the next buffer, so the merge does not wait for the disk unless the disk is slower.
// truffld-diagnose writes diagnosis.trace.json, a copy of the merge's trace.json, the same way.
//
// How: the owner fills the current block (Block: `capacity` bytes aligned to kAlign, of which
// the first `size` already hold text) and hands it back with Commit. The whole kAlign units of
// it are queued for the thread; the unaligned tail (< kAlign bytes) is copied to the front of
// the next block, which Commit returns (waiting while every block is still being written).
// Finish writes the last partial unit without O_DIRECT and closes the file.
//
// Where direct I/O is refused, nothing is lost: Open returns null when the file system does not
// accept O_DIRECT (tmpfs before Linux 6.6), so the caller writes the usual way, and a write
// refused with EINVAL later (an alignment the device does not accept) turns O_DIRECT off for the
// rest of the file.
// A disk error (EIO, ENOSPC) stops the writing and is returned by Finish, naming the file.
// Units: bytes. Thread-safety: one owner thread calls Commit/Append/Finish; the background
// thread is internal.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "truffld/status.h"

namespace truffld {

class DirectWriter {
 public:
  static constexpr size_t kAlign = 4096;  // offsets, lengths and buffers of every direct write
  // 1 MiB a block: each write is still large for the disk, and the ring (4 MiB) adds little
  // to the merge's peak memory, which the trace writer reaches while the ring is allocated.
  // Four 8 MiB blocks were 24 MiB more at that peak than four of 2 MiB, and four of 2 MiB 7 MB
  // more than four of 1 MiB (a 53 MB Kineto trace: 45 against 38 MB), each with no measurable
  // change in speed (10 M-event raw dump, 5 interleaved rounds: 2.58 against 2.65 s CPU).
  static constexpr size_t kDefaultBlock = size_t{1} << 20;
  static constexpr int kDefaultBlocks = 4;

  // The write system call (pwrite); tests pass one that fails or checks alignment.
  using PWrite = ssize_t (*)(int fd, const void* buf, size_t n, off_t offset);

  struct Options {
    size_t block = kDefaultBlock;  // bytes per buffer, rounded up to a multiple of kAlign
    int blocks = kDefaultBlocks;   // buffers in the ring (at least 2)
    PWrite pwrite = nullptr;       // null: the system's
    bool o_direct = true;          // false (tests): the same ring, through the page cache
  };

  // A buffer to write text into: [data, data + capacity), the first `size` bytes already text.
  struct Block {
    char* data = nullptr;
    size_t size = 0;
    size_t capacity = 0;
  };

  // Creates (or truncates) `path` and starts the thread. A null result with an Ok status: the
  // platform or the file system refuses direct I/O (the file is not created). An error: the
  // file cannot be created at all (the message names it).
  static Result<std::unique_ptr<DirectWriter>> Open(const std::string& path, Options opt);
  static Result<std::unique_ptr<DirectWriter>> Open(const std::string& path) { return Open(path, Options()); }
  // The same over a file the caller created (truffld/atomic_file.h: O_EXCL, mode 0640), open
  // for writing and empty; `name` is used in messages. Turns O_DIRECT on with fcntl. A null
  // result: direct I/O refused, `fd` untouched and still the caller's. Otherwise the writer owns
  // `fd` and closes it (Finish or destructor).
  static Result<std::unique_ptr<DirectWriter>> Adopt(int fd, const std::string& name, Options opt);
  static Result<std::unique_ptr<DirectWriter>> Adopt(int fd, const std::string& name) {
    return Adopt(fd, name, Options());
  }
  ~DirectWriter();  // without Finish: stops the thread and closes the file, written or not
  DirectWriter(const DirectWriter&) = delete;
  DirectWriter& operator=(const DirectWriter&) = delete;

  Block current() const { return cur_; }
  // The current block now holds `size` bytes of text (cur.size <= size <= cur.capacity): its
  // whole kAlign units go to the disk; returns the next block, holding the rest.
  Block Commit(size_t size);
  // Copies n bytes in after the current block's text (committing blocks as they fill).
  Block Append(const char* p, size_t n);
  // `size`: bytes of text in the current block. Writes everything, waits for the disk, closes
  // the file. Returns the first error (IoError naming the file). Call once; nothing after.
  Status Finish(size_t size);

  // Statistics, for tests and reports (read after Finish).
  uint64_t direct_bytes() const { return direct_bytes_; }  // written with O_DIRECT
  uint64_t bytes() const { return offset_; }               // the file's length
  bool fell_back() const { return fell_back_; }            // O_DIRECT turned off on the way

 private:
  DirectWriter(int fd, std::string name, Options opt);
  char* BlockData(int i);
  int TakeFreeBlock();  // waits for one; owner thread
  void Enqueue(size_t bytes);  // the current block's first `bytes`, at offset_, to the thread
  Status DirectOff();   // clears O_DIRECT on the file (the rest goes through the page cache)
  void Run();           // the background thread
  // Writes n bytes at offset, retrying interrupted and short writes; turns O_DIRECT off when
  // a write is refused for its alignment.
  Status WriteAll(const char* p, size_t n, uint64_t offset);
  void Stop();

  int fd_;
  std::string name_;
  Options opt_;
  std::vector<std::unique_ptr<char, void (*)(void*)>> mem_;  // blocks, allocated on first use
  Block cur_;
  int cur_index_ = 0;
  uint64_t offset_ = 0;  // file offset of the current block's first byte

  struct Job {
    const char* data;
    size_t bytes;
    uint64_t offset;
    int block;
  };
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;  // guarded by mu_
  std::vector<int> free_;  // guarded by mu_
  int busy_ = 0;           // jobs taken by the thread and not done; guarded by mu_
  bool stop_ = false;      // guarded by mu_
  Status error_;           // first error; guarded by mu_
  bool failed_ = false;    // owner's copy of "error_ is set" (stops further queuing)
  bool direct_;            // O_DIRECT still on; the thread's until Finish joins it
  bool fell_back_ = false;
  uint64_t direct_bytes_ = 0;  // the thread's until Finish joins it
  bool finished_ = false;
  std::thread thread_;
};

}  // namespace truffld
