// See page_recycler.h.
#include "truffld/page_recycler.h"

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cstdint>

namespace truffld {

namespace {
constexpr size_t RoundUp(size_t n, size_t unit) { return (n + unit - 1) / unit * unit; }
}  // namespace

bool PageRecycler::Enabled() {
#if defined(__linux__) && defined(MREMAP_FIXED)
  return true;
#else
  return false;
#endif
}

namespace {
#if defined(__linux__) && defined(MREMAP_FIXED)
void* SystemMove(void* old_address, size_t old_size, size_t new_size, int flags, void* new_address) {
  return mremap(old_address, old_size, new_size, flags, new_address);
}
#else
void* SystemMove(void*, size_t, size_t, int, void*) { return reinterpret_cast<void*>(-1); }
#endif
}  // namespace

PageRecycler::PageRecycler(bool huge_pages, size_t max_cached_bytes, MoveFn move)
    : huge_(huge_pages), max_cached_bytes_(max_cached_bytes), move_(move ? move : SystemMove) {}

PageRecycler::~PageRecycler() {
  // Live blocks stay mapped: their owners may still use them (a static recycler outlives main).
  Trim();
}

#if defined(__linux__) && defined(MREMAP_FIXED)

// A 2 MiB-aligned range of len bytes (a multiple of kUnit), untouched: pages come as used.
char* PageRecycler::Reserve(size_t len) {
  const size_t over = len + kUnit;
  void* m = mmap(nullptr, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  char* raw = static_cast<char*>(m);
  char* p = reinterpret_cast<char*>(RoundUp(reinterpret_cast<uintptr_t>(raw), kUnit));
  if (p > raw) munmap(raw, size_t(p - raw));                 // the unaligned head
  if (char* end = p + len; end < raw + over) munmap(end, size_t(raw + over - end));  // and tail
  if (huge_) madvise(p, len, MADV_HUGEPAGE);  // advice only: ignored where THP is off
  return p;
}

void* PageRecycler::AllocateLocked(size_t len) {
  if (n_live_ == kMaxLive) return nullptr;
  // The smallest cached span that is large enough: split, no system call.
  size_t best = n_cached_;
  for (size_t i = 0; i < n_cached_; ++i)
    if (cached_[i].len >= len && (best == n_cached_ || cached_[i].len < cached_[best].len)) best = i;
  char* p = nullptr;
  if (best != n_cached_) {
    Span& s = cached_[best];
    p = s.p;
    s.p += len;
    s.len -= len;
    if (s.len == 0) cached_[best] = cached_[--n_cached_];
    stats_.recycled_bytes += len;
    stats_.cached_bytes -= len;
  } else {
    // None is: a new range, its front made of cached spans moved in (largest first), the rest
    // fresh. One unit a call: a span may be several mappings (a block built like this one, then
    // freed), and a move may not cross one (before Linux 6.17 that fails, after unmapping the
    // destination); every mapping boundary falls on a unit boundary.
    p = Reserve(len);
    if (!p) return nullptr;
    std::sort(cached_, cached_ + n_cached_, [](const Span& a, const Span& b) { return a.len > b.len; });
    size_t at = 0;
    size_t kept = 0;
    bool failed = false;
    for (size_t i = 0; i < n_cached_; ++i) {
      Span s = cached_[i];
      while (!failed && s.len && at < len) {
        if (move_(s.p, kUnit, kUnit, MREMAP_MAYMOVE | MREMAP_FIXED, p + at) == MAP_FAILED) {
          failed = true;  // that unit's state is unknown: dropped from the cache (not unmapped)
          stats_.cached_bytes -= kUnit;
        } else {
          at += kUnit;
          stats_.recycled_bytes += kUnit;
          stats_.cached_bytes -= kUnit;
        }
        s.p += kUnit;
        s.len -= kUnit;
      }
      if (s.len) cached_[kept++] = s;  // what was not needed (or not tried)
    }
    n_cached_ = kept;
    if (failed && !RefillLocked(p + at)) {
      // The hole may hold another thread's mapping now: give up the block, never touching it.
      if (at) munmap(p, at);
      if (at + kUnit < len) munmap(p + at + kUnit, len - at - kUnit);
      stats_.recycled_bytes -= at;  // those pages are gone, not handed out
      return nullptr;
    }
    stats_.fresh_bytes += len - at;
  }
  live_[n_live_++] = {p, len};
  ++stats_.blocks;
  stats_.live_bytes += len;
  return p;
}

// After a failed move into [hole, hole + kUnit) of a reservation: true when that unit is mapped
// and ours again (it was unmapped and is free: mapped anew; or the move left it as it was,
// which MAP_FIXED_NOREPLACE cannot tell from someone else's mapping: false then).
bool PageRecycler::RefillLocked(char* hole) {
#ifdef MAP_FIXED_NOREPLACE
  void* r = mmap(hole, kUnit, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
  if (r == hole) {
    if (huge_) madvise(hole, kUnit, MADV_HUGEPAGE);
    return true;
  }
  if (r != MAP_FAILED) munmap(r, kUnit);  // a kernel that took the flag as a hint
#else
  (void)hole;
#endif
  return false;
}

void* PageRecycler::Allocate(size_t bytes) {
  if (bytes < kMinBlock || bytes > SIZE_MAX - 2 * kUnit) return nullptr;
  const size_t len = RoundUp(bytes, kUnit);
  std::lock_guard<std::mutex> lock(mu_);
  return AllocateLocked(len);
}

void PageRecycler::CacheLocked(Span s) {
  // Beyond the cap, pages go back to the system: memory no later block wants would otherwise
  // sit in the cache at the merge's peak.
  const size_t room = stats_.cached_bytes >= max_cached_bytes_ ? 0 : size_t(max_cached_bytes_ - stats_.cached_bytes) / kUnit * kUnit;
  if (s.len > room) {
    munmap(s.p + room, s.len - room);
    s.len = room;
    if (s.len == 0) return;
  }
  if (n_cached_ == kMaxCached) {  // full: drop the smallest (it or one already held)
    size_t small = 0;
    for (size_t i = 1; i < n_cached_; ++i)
      if (cached_[i].len < cached_[small].len) small = i;
    if (cached_[small].len >= s.len) {
      munmap(s.p, s.len);
      return;
    }
    munmap(cached_[small].p, cached_[small].len);
    stats_.cached_bytes -= cached_[small].len;
    cached_[small] = cached_[--n_cached_];
  }
  cached_[n_cached_++] = s;
  stats_.cached_bytes += s.len;
}

// Caches the units of s that hold pages and unmaps the rest: blocks are often reserved larger
// than they are filled, and an untouched unit handed on would be faulted in fresh anyway, while
// a touched one stayed behind in the cache.
void PageRecycler::KeepResidentLocked(Span s) {
  unsigned char vec[kUnit / 4096 * 8];  // residency of 8 units' pages a call (pages >= 4 KiB)
  static const size_t page = size_t(sysconf(_SC_PAGESIZE));
  if (page < 4096 || page > kUnit || kUnit % page != 0) {  // no such system known: keep it all
    CacheLocked(s);
    return;
  }
  size_t run = 0;  // resident units collected before `at`
  for (size_t at = 0; at < s.len;) {
    const size_t chunk = std::min(s.len - at, 8 * kUnit);
    bool ok = mincore(s.p + at, chunk, vec) == 0;
    for (size_t u = 0; u < chunk / kUnit; ++u, at += kUnit) {
      bool resident = !ok;  // unknown: keep
      for (size_t k = 0; ok && k < kUnit / page && !resident; ++k) resident = vec[u * (kUnit / page) + k] & 1;
      if (resident) { ++run; continue; }
      if (run) CacheLocked({s.p + at - run * kUnit, run * kUnit});
      run = 0;
      munmap(s.p + at, kUnit);
    }
  }
  if (run) CacheLocked({s.p + s.len - run * kUnit, run * kUnit});
}

bool PageRecycler::Free(void* p) {
  if (!p || reinterpret_cast<uintptr_t>(p) % kUnit != 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  const size_t i = FindLive(p);
  if (i == kMaxLive) return false;
  const Span s = live_[i];
  live_[i] = live_[--n_live_];
  stats_.live_bytes -= s.len;
  KeepResidentLocked(s);
  return true;
}

void PageRecycler::Trim() {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < n_cached_; ++i) munmap(cached_[i].p, cached_[i].len);
  n_cached_ = 0;
  stats_.cached_bytes = 0;
}

#else  // no mremap: nothing is ever handed out

char* PageRecycler::Reserve(size_t) { return nullptr; }
void* PageRecycler::AllocateLocked(size_t) { return nullptr; }
bool PageRecycler::RefillLocked(char*) { return false; }
void* PageRecycler::Allocate(size_t) { return nullptr; }
void PageRecycler::CacheLocked(Span) {}
void PageRecycler::KeepResidentLocked(Span) {}
bool PageRecycler::Free(void*) { return false; }
void PageRecycler::Trim() {}

#endif

size_t PageRecycler::FindLive(const void* p) const {
  for (size_t i = 0; i < n_live_; ++i)
    if (live_[i].p == p) return i;
  return kMaxLive;
}

bool PageRecycler::Owns(const void* p) const {
  std::lock_guard<std::mutex> lock(mu_);
  return FindLive(p) != kMaxLive;
}

PageRecycler::Stats PageRecycler::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace truffld
