// ReleasePages: hands memory a container no longer uses back to the operating system, in place.
//
// The merge shrinks its largest vector (the events) in place once the closing events are no
// longer needed; std::vector::shrink_to_fit would copy the rest into fresh memory, touching as
// many new pages as it frees. Instead the whole pages past the new end are released: the
// mapping stays, the contents read as zeros if touched again, and the memory is free for the
// allocations that follow (which on a VM that hands freed memory back to its host also avoids
// first touches of fresh pages). Only pages entirely inside [begin, end) are released.
// Linux only (madvise MADV_DONTNEED); elsewhere, and on failure, nothing happens: it is a
// memory hint, never a correctness matter. Thread-safety: the caller owns [begin, end).
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace truffld::merge {

inline void ReleasePages(const void* begin, const void* end) noexcept {
#if defined(__linux__)
  const long ps = sysconf(_SC_PAGESIZE);
  if (ps <= 0) return;
  const uintptr_t page = static_cast<uintptr_t>(ps);
  const uintptr_t b = (reinterpret_cast<uintptr_t>(begin) + page - 1) & ~(page - 1);
  const uintptr_t e = reinterpret_cast<uintptr_t>(end) & ~(page - 1);
  if (e > b) (void)madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED);
#else
  (void)begin;
  (void)end;
#endif
}

}  // namespace truffld::merge
