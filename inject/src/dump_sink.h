// DumpSink: the one file a traced process writes, plain or zstd-compressed.
//
// Thin adapter over the filesystem. The file is created with O_CREAT|O_EXCL|O_NOFOLLOW (never
// following a planted symlink, never clobbering an existing dump) and the configured mode, and
// only inside the configured directory (the directory itself is created, mode 0750, when its
// parent exists). Every failure is counted in write_errors() and reported once through `log`;
// after an error the sink keeps counting (and dropping) instead of retrying forever, so the
// application never stalls on a full disk. With zstd, each Flush() ends a zstd block so that a
// killed process leaves a decodable prefix.
//
// Plain dumps are written with direct I/O (O_DIRECT) where the file system accepts it and
// `direct` is set (TRUFFLD_DIRECT_IO, on by default). Through the page cache the kernel
// allocates, zeroes and fills a cache page for every 4 KiB of text in the traced process's own
// time (an NVTX push+pop pair cost 159 ns that way against 121 direct, on ext4), and the dump
// evicts what the node keeps in its cache (model weights). Every mode collects text in one
// 4 KiB-aligned 1 MiB block, which the writer formats plain NVTX lines straight into
// (Room/Advance); direct writes take its whole units (4 KiB, or the memory page if larger).
// Flush() still leaves every byte in the file, so a killed process loses nothing flushed: the
// last partial unit is written through the page cache, and the next write of that unit goes
// through the cache again (a direct write never covers a cached page, which the kernel would
// first write back and drop); a flush with nothing new writes nothing. The page cache
// is used instead on tmpfs (where direct writes cost more), where O_DIRECT is refused at open,
// and for the rest of the file after a direct write is refused with EINVAL (an alignment the
// device does not accept) or takes longer than kSlowDirectWriteNs (a disk busy with other
// writers: a direct write waits for the device while the rings fill, the cache does not);
// direct_io() says which is in use.
// Thread-safety: used only by the writer thread (and by a fork child before it starts its own).
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "config.h"

namespace truffld::inject {

class DumpSink {
 public:
  using Log = std::function<void(const std::string&)>;
  // `direct`: try direct I/O for a plain (uncompressed) dump.
  DumpSink(std::string dir, Compression c, unsigned mode, Log log, bool direct = true);
  ~DumpSink();
  DumpSink(const DumpSink&) = delete;
  DumpSink& operator=(const DumpSink&) = delete;

  // Creates the file. `name_for_attempt(k)` gives the file name to try on attempt k (k > 0 after
  // a name collision). Returns false (after logging once) when no file could be created.
  bool Open(const std::function<std::string(int)>& name_for_attempt);

  // Appends bytes. Returns false when the bytes were lost (counted in write_errors()).
  bool Write(std::string_view bytes);
  // Room for up to n (<= kMaxRoom) bytes of text at the end of the block, for the caller to
  // format into and then Advance() over: no copy. Null when the dump is not writable (the
  // caller then loses the record through Write, which counts it).
  char* Room(size_t n);
  void Advance(size_t n) { block_len_ += n; }
  // Writes what the block holds (and ends a zstd block): afterwards every byte given so far is
  // in the file.
  void Flush();
  // Ends the zstd frame and closes the file.
  void Close();
  // Fork child: the descriptor is shared with the parent's writer; close it without writing.
  void AbandonInChild();

  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  uint64_t write_errors() const { return write_errors_; }
  uint64_t bytes_written() const { return bytes_written_; }
  // Whether the dump is being written with direct I/O now.
  bool direct_io() const { return direct_; }

  // Direct writes cover whole units of the memory page size (at least kAlign, the O_DIRECT
  // alignment, and at most kMaxUnit: a larger page keeps the page cache), so that a direct write
  // never shares a page with the unit written through the cache.
  static constexpr size_t kAlign = 4096;
  static constexpr size_t kMaxUnit = 64 << 10;
  static constexpr size_t kBlock = 1 << 20;    // the aligned block text collects in
  static constexpr size_t kMaxRoom = kBlock - kMaxUnit;
  // A direct write slower than this (1 MiB at under 50 MB/s: a disk busy with other writers;
  // or the writer thread preempted meanwhile) turns direct I/O off for the rest of the file, so
  // the writer never waits on the disk again.
  static constexpr int64_t kSlowDirectWriteNs = 20000000;
  // Direct writes that were that slow (0 or 1: the first turns direct I/O off).
  uint64_t slow_direct_writes() const { return std::strcmp(direct_stopped_, "slow_write") == 0; }
  // How the dump's bytes reach the file now: "direct", "page_cache" or "zstd" (compressed,
  // through the page cache). STATS.dump_io.
  const char* io_mode() const { return zstd_ ? "zstd" : direct_ ? "direct" : "page_cache"; }
  // Why direct I/O stopped before the end of the file: "" while it is on or when it never was,
  // "slow_write" (a direct write took over kSlowDirectWriteNs), "refused" (a direct write failed
  // with EINVAL: the device wants another alignment) or "fcntl" (O_DIRECT could not be set
  // again). STATS.direct_io_stopped.
  const char* direct_stopped() const { return direct_stopped_; }
  // Whether the descriptor has O_DIRECT set now: set or cleared before each write as the write
  // needs (a flush leaves it clear), and clear for good once direct_io() is false.
  bool fd_direct() const { return fd_direct_; }

  // The positional write system call (pwrite); tests pass one that fails.
  using PWrite = ssize_t (*)(int fd, const void* buf, size_t n, off_t offset);
  void set_pwrite(PWrite f) { pwrite_ = f; }

 private:
  // Hands the block's text to the file: all of it, or with direct I/O the whole units (and,
  // with `flush`, the partial unit after them through the page cache).
  bool Spill(bool flush);
  bool WriteRaw(const char* p, size_t n);
  bool Compress(const char* p, size_t n);
  // Direct I/O: writes the block's whole units (the first one through the page cache when part
  // of it was written so before) and, with `tail`, the partial unit after them through the page
  // cache unless it is there already; keeps that partial unit at the block's start.
  bool EmitUnits(bool tail);
  // pwrite of [p, p + n) at `offset`, direct when `direct` and direct I/O is on, else through
  // the page cache (O_DIRECT set or cleared on the descriptor first). A direct write refused
  // with EINVAL turns direct I/O off for good and is retried through the cache.
  bool PWriteAll(const char* p, size_t n, uint64_t offset, bool direct);
  // Sets or clears O_DIRECT on the descriptor; false (flag unchanged) when fcntl refuses.
  bool SetFdDirect(bool on);
  void DirectOff(const char* why);  // direct I/O off for the rest of the file (direct_stopped())
  void Fail(const std::string& what, int err);

  std::string dir_;
  Compression compression_;
  unsigned mode_;
  Log log_;
  int fd_ = -1;
  std::string path_;
  bool broken_ = false;      // a write failed; stop writing, keep counting
  bool warned_ = false;
  uint64_t write_errors_ = 0;
  uint64_t bytes_written_ = 0;
  bool want_direct_ = true;
  bool positional_ = false;      // opened for direct I/O: block_ sits at block_offset_
  bool direct_ = false;          // ... and direct I/O is still on
  bool fd_direct_ = false;       // the descriptor's O_DIRECT flag
  const char* direct_stopped_ = "";
  size_t unit_ = kAlign;         // whole units of direct writes: the page size
  size_t cached_len_ = 0;        // bytes of block_'s first unit written through the cache
  struct FreeBlock {
    void operator()(char* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<char, FreeBlock> block_;  // kBlock bytes aligned to kAlign (aligned_alloc)
  size_t block_len_ = 0;         // bytes of text in block_
  uint64_t block_offset_ = 0;    // file offset of block_[0] (a multiple of kAlign)
  PWrite pwrite_ = ::pwrite;
  struct Zstd;
  std::unique_ptr<Zstd> zstd_;
};

}  // namespace truffld::inject
