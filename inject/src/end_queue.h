// EndQueue: where an NVTX range end goes when its thread's ring is full.
//
// Start/end ranges may end on any thread, so their ends cannot use a reservation in the
// starting thread's ring (RecordRing is single-producer). Instead every written start may take
// one of a fixed number of process-wide credits (Tracer), and an end that finds its own ring
// full is queued here; with at most `capacity` credits outstanding the queue never overflows,
// so the end of a credited start is never lost. A bounded multi-producer queue after Dmitry
// Vyukov's: a push is one compare-and-swap, no lock, no allocation.
// Units: t0 in producer ticks (tick_clock.h). Thread-safety: Push from any thread; Pop from the
// one consumer (the writer); Reset only in a fork child before other threads exist.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace truffld::inject {

struct QueuedEnd {
  int64_t t0 = 0;                // ticks
  uint64_t id = 0;               // range id as written in the dump
  const void* domain = nullptr;  // interned NVTX domain
  uint32_t tid = 0;
};

class EndQueue {
 public:
  // `capacity` is rounded up to a power of two.
  explicit EndQueue(size_t capacity) {
    size_t n = 1;
    while (n < capacity) n <<= 1;
    mask_ = n - 1;
    cells_ = std::make_unique<Cell[]>(n);
    Reset();
  }

  // Any thread. Returns false when full.
  bool Push(const QueuedEnd& e) noexcept {
    uint64_t pos = enqueue_.load(std::memory_order_relaxed);
    for (;;) {
      Cell& c = cells_[pos & mask_];
      const uint64_t seq = c.seq.load(std::memory_order_acquire);
      const int64_t dif = static_cast<int64_t>(seq - pos);
      if (dif == 0) {
        if (enqueue_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
          c.value = e;
          c.seq.store(pos + 1, std::memory_order_release);
          return true;
        }
      } else if (dif < 0) {
        return false;
      } else {
        pos = enqueue_.load(std::memory_order_relaxed);
      }
    }
  }

  // Consumer. Returns false when nothing is ready.
  bool Pop(QueuedEnd* out) noexcept {
    Cell& c = cells_[dequeue_ & mask_];
    if (c.seq.load(std::memory_order_acquire) != dequeue_ + 1) return false;
    *out = c.value;
    c.seq.store(dequeue_ + mask_ + 1, std::memory_order_release);
    ++dequeue_;
    return true;
  }

  size_t capacity() const noexcept { return mask_ + 1; }

  void Reset() noexcept {
    for (size_t i = 0; i <= mask_; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
    enqueue_.store(0, std::memory_order_relaxed);
    dequeue_ = 0;
  }

 private:
  struct Cell {
    std::atomic<uint64_t> seq{0};
    QueuedEnd value;
  };
  std::unique_ptr<Cell[]> cells_;
  size_t mask_ = 0;
  alignas(64) std::atomic<uint64_t> enqueue_{0};
  alignas(64) uint64_t dequeue_ = 0;
};

}  // namespace truffld::inject
