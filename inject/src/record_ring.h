// RecordRing: a single-producer / single-consumer ring of 128-byte Record slots.
//
// Each application thread owns one ring (the producer); the tracer's writer thread is the only
// consumer. This is the hot path of the injector, modelled on Tracy's per-thread queues: a push
// is a bounds check, a few memcpys and one release store, with no lock and no allocation. A full
// ring never blocks or grows: the event is dropped and counted per kind, and the counts reach the
// STATS record. Records longer than one slot (long names, NVTX payloads) spill their bytes into
// the following slots, which the consumer reassembles.
// Thread-safety: TryPush/CountDrop from the owning thread only; Drain from one consumer thread;
// dropped()/empty() from any thread (relaxed snapshots). ResetForChild only in a fork child
// before any other thread exists.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "record.h"

namespace truffld::inject {

// Result of a push: 0 (false) when the ring was full.
enum PushResult : int {
  kPushFull = 0,
  kPushOk = 1,
  kPushOkWake = 2,  // pushed, and the ring is over half full: the consumer should drain soon
};

class RecordRing {
 public:
  // `slots` is rounded up to a power of two (minimum 64).
  explicit RecordRing(size_t slots);
  RecordRing(const RecordRing&) = delete;
  RecordRing& operator=(const RecordRing&) = delete;

  // Producer: appends `head` followed by `data_len` bytes of copied data (name then payload;
  // head.name_len + head.payload_len must equal data_len). Returns false when there is no room;
  // the caller then calls CountDrop. Never blocks, never allocates. Returns kPushOkWake at most
  // once per drain when the ring passes half full, so the producer can wake the consumer early.
  PushResult TryPush(const Record& head, const char* data, size_t data_len) noexcept;

  // Producer: counts one event of `kind` lost because the ring was full.
  void CountDrop(RecordKind kind) noexcept {
    auto& d = dropped_[static_cast<int>(kind)];
    d.store(d.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // Consumer: calls fn(const Record&, std::string_view data) for every record published so far,
  // in push order, then frees their slots. `scratch` is reused to reassemble spilled bytes.
  // Returns the number of records handed to fn.
  template <class Fn>
  size_t Drain(Fn&& fn, std::string& scratch);

  uint64_t dropped(RecordKind kind) const noexcept {
    return dropped_[static_cast<int>(kind)].load(std::memory_order_relaxed);
  }
  bool empty() const noexcept {
    return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_acquire);
  }
  size_t capacity_slots() const noexcept { return mask_ + 1; }

  // Set by the registry when the owning thread exits; an orphaned, empty ring may be reused.
  std::atomic<bool> orphaned{false};

  // Fork child: forget the parent's unwritten records (the parent writes them) and its counts.
  void ResetForChild() noexcept;

 private:
  std::unique_ptr<Record[]> slots_;
  size_t mask_;
  alignas(64) std::atomic<uint64_t> head_{0};  // next slot the producer writes
  uint64_t cached_tail_ = 0;                    // producer's last view of tail_
  uint64_t woke_at_tail_ = ~uint64_t{0};        // tail_ when the producer last asked for a drain
  alignas(64) std::atomic<uint64_t> tail_{0};  // next slot the consumer reads
  std::atomic<uint64_t> dropped_[kNumRecordKinds] = {};
};

template <class Fn>
size_t RecordRing::Drain(Fn&& fn, std::string& scratch) {
  uint64_t tail = tail_.load(std::memory_order_relaxed);
  const uint64_t head = head_.load(std::memory_order_acquire);
  size_t n = 0;
  while (tail < head) {
    const Record& rec = slots_[tail & mask_];
    const size_t len = rec.data_len();
    const size_t slots = SlotsFor(len);
    if (slots > head - tail) break;  // cannot happen with a well-behaved producer
    std::string_view data;
    if (len <= kInlineBytes) {
      data = std::string_view(rec.inline_bytes, len);
    } else {
      scratch.assign(rec.inline_bytes, kInlineBytes);
      size_t left = len - kInlineBytes;
      for (size_t i = 1; i < slots; ++i) {
        const char* p = reinterpret_cast<const char*>(&slots_[(tail + i) & mask_]);
        const size_t take = left < kSlotBytes ? left : kSlotBytes;
        scratch.append(p, take);
        left -= take;
      }
      data = scratch;
    }
    fn(rec, data);
    tail += slots;
    ++n;
  }
  tail_.store(tail, std::memory_order_release);
  return n;
}

}  // namespace truffld::inject
