// RingRegistry: hands each producing thread its RecordRing, within a fixed memory budget.
//
// The first event of a thread takes this slow path (one mutex, one allocation of the ring);
// every later event uses the ring cached in thread-local storage. Rings of threads that exited
// are reused once the writer has drained them, so a process that churns threads stays within
// the budget. Two sizes: the first threads get large rings (bursts of tens of thousands of
// records) until they hold half of the budget; later threads get small ones from the rest.
// When the budget is spent the thread gets no ring and its events are counted as dropped here
// ("no_ring"), never silently lost. The writer thread iterates the rings through
// ForEach without taking the mutex (published with release/acquire).
// Thread-safety: Acquire/Release from any thread (mutex); ForEach from the consumer thread;
// CountNoRing from any thread (relaxed atomics). ResetForChild in a fork child only.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "record_ring.h"

namespace truffld::inject {

class RingRegistry {
 public:
  static constexpr size_t kMaxRings = 4096;

  // large_slots / small_slots: ring sizes in 128-byte slots (small_slots <= large_slots);
  // budget_bytes: bound on the bytes of all rings together (at most kMaxRings rings);
  // hot_slots: slots of each ring touched at once (see RecordRing).
  RingRegistry(size_t large_slots, size_t small_slots, uint64_t budget_bytes,
               size_t hot_slots = ~size_t{0});
  ~RingRegistry();

  // A ring for the calling thread, or nullptr when the budget is exhausted.
  RecordRing* Acquire();
  // The thread owning `ring` exited: its ring may be reused once drained.
  void Release(RecordRing* ring);

  void CountNoRing(RecordKind k) noexcept {
    no_ring_dropped_[static_cast<int>(k)].fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t no_ring_dropped(RecordKind k) const noexcept {
    return no_ring_dropped_[static_cast<int>(k)].load(std::memory_order_relaxed);
  }

  template <class Fn>
  void ForEach(Fn&& fn) {
    const size_t n = count_.load(std::memory_order_acquire);
    for (size_t i = 0; i < n; ++i) fn(*rings_[i].load(std::memory_order_acquire));
  }
  size_t size() const noexcept { return count_.load(std::memory_order_acquire); }
  // Bytes of all rings (their capacity; resident memory is at most this).
  uint64_t bytes_reserved() const noexcept { return bytes_.load(std::memory_order_acquire); }


  // Fork child (after UnlockForFork): empty every ring and zero the counts.
  void ResetForChild();

  // Used around fork() so that no thread holds the mutex across it.
  void LockForFork() { mu_->lock(); }
  void UnlockForFork() { mu_->unlock(); }

 private:
  size_t large_slots_, small_slots_, hot_slots_;
  uint64_t budget_bytes_;
  uint64_t large_bytes_ = 0;  // under mu_
  std::atomic<uint64_t> bytes_{0};
  std::unique_ptr<std::mutex> mu_;
  std::atomic<RecordRing*> rings_[kMaxRings] = {};
  std::atomic<size_t> count_{0};
  std::atomic<uint64_t> no_ring_dropped_[kNumRecordKinds] = {};
};

}  // namespace truffld::inject
