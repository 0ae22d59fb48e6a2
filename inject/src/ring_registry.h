// RingRegistry: hands each producing thread its RecordRing, within a fixed memory budget.
//
// The first event of a thread takes this slow path (one mutex, one allocation of the ring);
// every later event uses the ring cached in thread-local storage. Rings of threads that exited
// are reused once the writer has drained them, so a process that churns threads stays within
// `max_rings`. When the budget is spent the thread gets no ring and its events are counted as
// dropped here ("no_ring"), never silently lost. The writer thread iterates the rings through
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

  // slots_per_ring: ring size in 128-byte slots; max_rings: memory bound (<= kMaxRings).
  RingRegistry(size_t slots_per_ring, size_t max_rings);
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
  size_t bytes_reserved() const noexcept { return size() * slots_per_ring_ * kSlotBytes; }

  // Fork child (after UnlockForFork): empty every ring and zero the counts.
  void ResetForChild();

  // Used around fork() so that no thread holds the mutex across it.
  void LockForFork() { mu_->lock(); }
  void UnlockForFork() { mu_->unlock(); }

 private:
  size_t slots_per_ring_;
  size_t max_rings_;
  std::unique_ptr<std::mutex> mu_;
  std::atomic<RecordRing*> rings_[kMaxRings] = {};
  std::atomic<size_t> count_{0};
  std::atomic<uint64_t> no_ring_dropped_[kNumRecordKinds] = {};
};

}  // namespace truffld::inject
