// RecordRing: a single-producer / single-consumer ring of 128-byte Record slots.
//
// Each application thread owns one ring (the producer); the tracer's writer thread is the only
// consumer. This is the hot path of the injector, modelled on Tracy's per-thread queues: a push
// is a bounds check, a few memcpys and one release store, with no lock and no allocation. A full
// ring never blocks or grows: the event is dropped and counted per kind, and the counts reach the
// STATS record. Records longer than one slot (long names, NVTX payloads) spill their bytes into
// the following slots, which the consumer reassembles.
//
// Balanced drops: a record that opens an NVTX push range may reserve one slot for its pop, so
// that the pop always finds room once the push was written: opens see the ring as full while
// the reserved slots are needed. (Start/end ranges may end on another thread; they are covered
// by EndQueue instead.)
//
// Memory: the slots live in an anonymous mapping; only the first `hot_slots` are touched up
// front. When the producer is past them and finds the ring empty, it "rewinds" both positions
// to the first slot of the next lap, so a quiet thread keeps using the hot slots and a thread's
// resident ring memory follows its bursts, not the ring's size.
// Thread-safety: TryPush/CountDrop from the owning thread only; Drain from one consumer thread;
// dropped()/empty() from any thread. ResetForChild only in a fork child before any other thread
// exists; ForgetReservations only while no thread owns the ring.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "record.h"

namespace truffld::inject {

// Result of a push: 0 (false) when the ring was full.
enum PushResult : int {
  kPushFull = 0,
  kPushOk = 1,
  kPushOkWake = 2,  // pushed, and the ring is over 1/kWakeFraction full: drain soon
};
// The producer asks for a drain when its ring is this fraction full, so that the rest is
// headroom for the time the consumer takes to come (scheduling, a slow write).
inline constexpr uint64_t kWakeFraction = 8;

// What a push does to the ring's pop reservations.
enum class Reserve : uint8_t {
  kNone,   // needs room beyond every reservation
  kOpen,   // an NVTX push: also reserves a slot for its pop
  kClose,  // the pop of a reserved push: may use that push's slot
};

class RecordRing {
 public:
  // `slots` is rounded up to a power of two (minimum 64); `hot_slots` (rounded the same way,
  // at most `slots`) are touched at once. Check ok() after construction (mmap may fail).
  explicit RecordRing(size_t slots, size_t hot_slots = ~size_t{0});
  ~RecordRing();
  RecordRing(const RecordRing&) = delete;
  RecordRing& operator=(const RecordRing&) = delete;
  bool ok() const noexcept { return slots_ != nullptr; }

  // Producer: appends `head` followed by `a_len` bytes of `a` and `b_len` bytes of `b` (name
  // then payload; head.name_len + head.payload_len must equal a_len + b_len). Returns kPushFull
  // when there is no room (the caller then calls CountDrop). Never blocks, never allocates.
  // Returns kPushOkWake at most once per drain when the ring passes 1/kWakeFraction full, so
  // the producer can wake the consumer early.
  PushResult TryPush(const Record& head, const char* a, size_t a_len, const char* b = nullptr,
                     size_t b_len = 0, Reserve rv = Reserve::kNone) noexcept;

  // Producer: counts one event of `kind` lost because the ring was full.
  void CountDrop(RecordKind kind) noexcept { Bump(dropped_[static_cast<int>(kind)]); }
  // Producer: counts one range (push/pop or start/end pair) dropped whole.
  void CountRangeDrop(bool start_end) noexcept { Bump(ranges_dropped_[start_end ? 1 : 0]); }
  // Producer: counts a close whose open was written but which found no room (only possible
  // outside the reservations' guarantee, see tracer.h).
  void CountUnbalanced() noexcept { Bump(unbalanced_); }

  // Consumer: calls fn(const Record&, std::string_view data) for every record published so far,
  // in push order, then frees their slots. `scratch` is reused to reassemble spilled bytes.
  // Returns the number of records handed to fn.
  template <class Fn>
  size_t Drain(Fn&& fn, std::string& scratch);

  uint64_t dropped(RecordKind kind) const noexcept {
    return dropped_[static_cast<int>(kind)].load(std::memory_order_relaxed);
  }
  uint64_t ranges_dropped(bool start_end) const noexcept {
    return ranges_dropped_[start_end ? 1 : 0].load(std::memory_order_relaxed);
  }
  uint64_t unbalanced() const noexcept { return unbalanced_.load(std::memory_order_relaxed); }
  uint64_t rewinds() const noexcept { return rewinds_.load(std::memory_order_relaxed); }
  bool empty() const noexcept {
    const uint64_t head = head_.load(std::memory_order_acquire);
    return tail_.load(std::memory_order_acquire) >= head;  // a rewind moves the tail first
  }
  size_t capacity_slots() const noexcept { return mask_ + 1; }
  uint32_t reserved_slots() const noexcept { return reserved_; }

  // Set by the registry when the owning thread exits; an orphaned, empty ring may be reused.
  std::atomic<bool> orphaned{false};

  // The ring changes hands (its thread exited): the old thread's pops will never come.
  void ForgetReservations() noexcept { reserved_ = 0; }
  // Fork child: forget the parent's unwritten records (the parent writes them) and its counts.
  void ResetForChild() noexcept;

 private:
  static void Bump(std::atomic<uint64_t>& c) noexcept {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  uint64_t MaybeRewind(uint64_t h) noexcept;

  Record* slots_ = nullptr;
  size_t mask_;
  size_t hot_slots_;
  size_t map_bytes_ = 0;
  alignas(64) std::atomic<uint64_t> head_{0};  // next slot the producer writes
  uint64_t cached_tail_ = 0;                    // producer's last view of tail_
  uint64_t woke_at_tail_ = ~uint64_t{0};        // tail_ when the producer last asked for a drain
  uint64_t next_rewind_check_ = ~uint64_t{0};   // producer: position of the next rewind check
  uint32_t reserved_ = 0;                       // producer: slots held for pops
  alignas(64) std::atomic<uint64_t> tail_{0};  // next slot the consumer reads
  std::atomic<uint64_t> dropped_[kNumRecordKinds] = {};
  std::atomic<uint64_t> ranges_dropped_[2] = {};
  std::atomic<uint64_t> unbalanced_{0};
  std::atomic<uint64_t> rewinds_{0};
};

template <class Fn>
size_t RecordRing::Drain(Fn&& fn, std::string& scratch) {
  // Head first: once the head shows records written after a rewind, the tail shows the rewind.
  const uint64_t head = head_.load(std::memory_order_acquire);
  const uint64_t start = tail_.load(std::memory_order_acquire);
  uint64_t tail = start;
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
  // Only a position this drain advanced is stored, never over a rewind (see MaybeRewind).
  if (tail != start) tail_.store(tail, std::memory_order_release);
  return n;
}

}  // namespace truffld::inject
