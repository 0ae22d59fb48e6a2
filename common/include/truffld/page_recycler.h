// PageRecycler: large blocks whose pages are handed on, not back, when they are freed.
//
// The merge allocates and frees tables of tens to hundreds of MB in phases (ranges, API calls,
// nodes, writers' indexes). Freed with munmap, their pages go back to the kernel, and the next
// table faults in fresh ones. Where a hypervisor backs guest memory lazily and takes freed guest
// pages back (virtio free page reporting, after about 2 s), a fresh page costs ~1.8 ms/MB
// against ~0.07 ms/MB for one the process still holds (measured on the development VM): on a
// 10 M-event merge ~190 MB of tables were faulted in twice.
//
// This keeps freed blocks' pages mapped, in a cache, and builds later blocks from them: a cached
// span at least as large is split; otherwise the cached spans are moved (mremap, no copy, huge
// pages kept: everything is aligned to 2 MiB) to the front of a fresh reservation, whose rest is
// faulted in as it is touched. So the pages a process touches are about its peak of live large
// blocks, whatever the order of sizes.
//
// Blocks are at least kMinBlock bytes, 2 MiB-aligned, a multiple of 2 MiB long, readable and
// writable, and NOT zeroed (contents are whatever was last written there), like operator new's.
// Cached pages (at most max_cached_bytes) stay resident until they are handed on, the process
// ends (a batch tool's lifetime) or Trim() is called.
// Linux only (mremap); elsewhere Enabled() is false and every call fails soft (nullptr).
// Thread-safety: all members may be called from any thread (one mutex; large blocks are rare).
// The class itself never allocates (fixed tables), so it can sit under operator new.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

namespace truffld {

class PageRecycler {
 public:
  static constexpr size_t kUnit = size_t{2} << 20;     // alignment and length granule (one huge page)
  static constexpr size_t kMinBlock = size_t{4} << 20;  // smaller requests belong to malloc
  static constexpr size_t kMaxLive = 4096;              // blocks tracked at once (beyond: Allocate fails)
  static constexpr size_t kMaxCached = 512;             // cached spans (beyond: the smallest are unmapped)

  struct Stats {
    uint64_t blocks = 0;          // blocks handed out
    uint64_t fresh_bytes = 0;     // bytes of new reservations (touched only as used)
    uint64_t recycled_bytes = 0;  // bytes handed out again from freed blocks
    uint64_t cached_bytes = 0;    // freed bytes held now
    uint64_t live_bytes = 0;      // bytes handed out and not yet freed
  };

  static constexpr size_t kDefaultMaxCachedBytes = size_t{64} << 20;

  // `huge_pages`: madvise(MADV_HUGEPAGE) each reservation. `max_cached_bytes`: freed pages kept
  // for later blocks at most (the rest is unmapped): the cache is memory held beyond the live
  // blocks, so it bounds what recycling may add to the peak resident size.
  // mremap's signature; tests pass one that fails to check what a failed move leaves.
  using MoveFn = void* (*)(void* old_address, size_t old_size, size_t new_size, int flags, void* new_address);
  explicit PageRecycler(bool huge_pages = true, size_t max_cached_bytes = kDefaultMaxCachedBytes,
                        MoveFn move = nullptr);
  ~PageRecycler();
  PageRecycler(const PageRecycler&) = delete;
  PageRecycler& operator=(const PageRecycler&) = delete;

  static bool Enabled();

  // A block of at least `bytes` bytes (bytes >= kMinBlock), or nullptr when the system refuses
  // address space or kMaxLive blocks are live.
  void* Allocate(size_t bytes);
  // True when p came from Allocate (and is released now: its pages join the cache); false
  // otherwise, and nothing happens. Size is looked up, not trusted from the caller.
  bool Free(void* p);
  // True when p is a live block of this recycler.
  bool Owns(const void* p) const;
  // Unmaps every cached span (pages back to the system).
  void Trim();
  Stats stats() const;

 private:
  struct Span {
    char* p = nullptr;
    size_t len = 0;
  };
  void* AllocateLocked(size_t len);
  char* Reserve(size_t len);
  void CacheLocked(Span s);
  void KeepResidentLocked(Span s);
  bool RefillLocked(char* hole);
  size_t FindLive(const void* p) const;  // index in live_, or kMaxLive

  const bool huge_;
  const size_t max_cached_bytes_;
  const MoveFn move_;
  mutable std::mutex mu_;
  Span live_[kMaxLive];
  size_t n_live_ = 0;
  Span cached_[kMaxCached];
  size_t n_cached_ = 0;
  Stats stats_;
};

}  // namespace truffld
