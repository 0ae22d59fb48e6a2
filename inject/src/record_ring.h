// RecordRing: a single-producer / single-consumer byte ring of event records.
//
// Each application thread owns one ring (the producer); the tracer's writer thread is the only
// consumer. This is the hot path of the injector, modelled on Tracy's per-thread queues: a push
// is a bounds check, a few memcpys and one release store, with no lock and no allocation. A full
// ring never blocks or grows: the event is dropped and counted per kind, and the counts reach the
// STATS record.
//
// Layout: the ring is counted in 16-byte units; a record takes whole units and may wrap around
// the ring's end. A record is a header followed by its copied bytes (name, then payload):
//  * compact (16-byte header: kind, name length, thread id, timestamp): a plain NVTX push, pop
//    or mark (default domain, no attributes, no payload, copied name): a pop is one unit, a push
//    named "aten::mm, op_id = 42" three, instead of the 96-byte Record header;
//  * full (the 96-byte Record): every other record.
// The consumer hands both out as a Record header with its bytes.
//
// Balanced drops: a record that opens an NVTX push range may reserve room for its pop (a full
// bare record, kCloseUnits), so that the pop always finds room once the push was written: opens
// see the ring as full while the reserved room is needed. (Start/end ranges may end on another
// thread; they are covered by EndQueue instead.)
//
// Memory: the units live in an anonymous mapping of `slots` * kSlotBytes bytes; only the first
// `hot_slots` * kSlotBytes are touched up front. When the producer is past them and finds the
// ring empty, it "rewinds" both positions to the first unit of the next lap, so a quiet thread
// keeps using the hot bytes and a thread's resident ring memory follows its bursts, not the
// ring's size.
// Thread-safety: TryPush/TryPushCompact/CountDrop from the owning thread only; Drain from one
// consumer thread; dropped()/empty() from any thread. ResetForChild only in a fork child before
// any other thread exists; ForgetReservations only while no thread owns the ring.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
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

// Ring geometry (see the layout above).
inline constexpr size_t kUnitBytes = 16;
// How far ahead the producer (for writing) and the drain (for reading once) prefetch the ring:
// a ring far larger than the L2 is cold where it is written and again where it is drained, and
// these distances, a few hundred ns of work ahead, hide most of those misses (BENCHMARKS.md,
// the NVTX pair's cost). Only a hint: any distance is correct.
inline constexpr size_t kDrainPrefetchBytes = 2048;
inline constexpr size_t kPushPrefetchBytes = 1024;
inline constexpr size_t kFullHeaderBytes = sizeof(Record);  // 96
inline constexpr size_t kCompactHeaderBytes = 16;
inline constexpr size_t kUnitsPerSlot = kSlotBytes / kUnitBytes;
// Room a pop's reservation holds: a full record without bytes.
inline constexpr uint64_t kCloseUnits = kFullHeaderBytes / kUnitBytes;
static_assert(kFullHeaderBytes % kUnitBytes == 0 && kSlotBytes % kUnitBytes == 0);

// Units a record takes: `compact` (RecordRing::IsCompact) or full, with `data_len` bytes.
constexpr size_t RingUnitsFor(bool compact, size_t data_len) noexcept {
  return ((compact ? kCompactHeaderBytes : kFullHeaderBytes) + data_len + kUnitBytes - 1) / kUnitBytes;
}

class RecordRing {
 public:
  // The ring holds `slots` * kSlotBytes bytes; `slots` is rounded up to a power of two (minimum
  // 64); `hot_slots` * kSlotBytes (rounded the same way, at most the ring) are touched at once.
  // Check ok() after construction (mmap may fail).
  explicit RecordRing(size_t slots, size_t hot_slots = ~size_t{0});
  ~RecordRing();
  RecordRing(const RecordRing&) = delete;
  RecordRing& operator=(const RecordRing&) = delete;
  bool ok() const noexcept { return bytes_ != nullptr; }

  // Producer: appends `head` followed by `a_len` bytes of `a` and `b_len` bytes of `b` (name
  // then payload; head.name_len + head.payload_len must equal a_len + b_len). Returns kPushFull
  // when there is no room (the caller then calls CountDrop). Never blocks, never allocates.
  // Returns kPushOkWake at most once per drain when the ring passes 1/kWakeFraction full, so
  // the producer can wake the consumer early.
  PushResult TryPush(const Record& head, const char* a, size_t a_len, const char* b = nullptr,
                     size_t b_len = 0, Reserve rv = Reserve::kNone) noexcept;

  // The same for a compact record (a plain NVTX push, pop or mark: kind, thread, time and name),
  // without a Record: the injector's fast path for nvtxRangePushA and nvtxRangePop.
  PushResult TryPushCompact(RecordKind kind, uint32_t tid, int64_t t0, const char* a, size_t a_len,
                            Reserve rv) noexcept;

  // Whether TryPush stores `head` (with `b_len` payload bytes) as a compact record: a plain NVTX
  // push, pop or mark whose other header fields are zero.
  static bool IsCompact(const Record& head, size_t b_len) noexcept {
    return (head.kind == RecordKind::kNvtxPush || head.kind == RecordKind::kNvtxPop ||
            head.kind == RecordKind::kNvtxMark) && !head.domain && !head.flags && !head.name_ref &&
           head.payload_kind == PayloadKind::kNone && !head.id && !head.t1 && !b_len;
  }

  // Producer: counts one event of `kind` lost because the ring was full.
  void CountDrop(RecordKind kind) noexcept { Bump(dropped_[static_cast<int>(kind)]); }
  // Producer: counts one range (push/pop or start/end pair) dropped whole.
  void CountRangeDrop(bool start_end) noexcept { Bump(ranges_dropped_[start_end ? 1 : 0]); }
  // Producer: counts a close whose open was written but which found no room (only possible
  // outside the reservations' guarantee, see tracer.h).
  void CountUnbalanced() noexcept { Bump(unbalanced_); }

  // Consumer: calls fn(Record& header, std::string_view data) for every record published so
  // far, in push order, then frees their units; fn may rewrite the header's t0 and t1 (nothing
  // else). `scratch` is reused to join bytes that wrap around the ring's end. Returns the number
  // of records handed to fn.
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
  // Size in kSlotBytes slots (what the constructor was given, rounded) and in units.
  size_t capacity_slots() const noexcept { return (mask_ + 1) / kUnitsPerSlot; }
  size_t capacity_units() const noexcept { return mask_ + 1; }
  // Open pushes holding a reservation (kCloseUnits each).
  uint32_t reserved_pops() const noexcept { return reserved_; }

  // Set by the registry when the owning thread exits; an orphaned, empty ring may be reused.
  std::atomic<bool> orphaned{false};

  // The ring changes hands (its thread exited): the old thread's pops will never come.
  void ForgetReservations() noexcept { reserved_ = 0; }
  // Fork child: forget the parent's unwritten records (the parent writes them) and its counts.
  void ResetForChild() noexcept;

 private:
  // The 16 bytes before a compact record's name. tag = kCompactTag | kind (a full record starts
  // with its kind, below kCompactTag).
  struct CompactHeader {
    uint8_t tag;
    uint8_t pad;
    uint16_t name_len;
    uint32_t tid;
    int64_t t0;
  };
  static_assert(sizeof(CompactHeader) == kCompactHeaderBytes);
  static constexpr uint8_t kCompactTag = 0x80;

  bool Claim(size_t need, Reserve rv, uint64_t* head, PushResult* result) noexcept;
  void Publish(uint64_t h, size_t need, Reserve rv) noexcept;

  static void Bump(std::atomic<uint64_t>& c) noexcept {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  uint64_t MaybeRewind(uint64_t h) noexcept;
  // Byte copies at ring byte offset `at` (any value: taken modulo the ring), wrapping at its end.
  void CopyIn(size_t at, const void* src, size_t n) noexcept {
    at &= byte_mask_;
    const size_t first = n < byte_mask_ + 1 - at ? n : byte_mask_ + 1 - at;
    std::memcpy(bytes_ + at, src, first);
    if (first < n) std::memcpy(bytes_, static_cast<const char*>(src) + first, n - first);
  }
  void CopyOut(size_t at, void* dst, size_t n) const noexcept {
    at &= byte_mask_;
    const size_t first = n < byte_mask_ + 1 - at ? n : byte_mask_ + 1 - at;
    std::memcpy(dst, bytes_ + at, first);
    if (first < n) std::memcpy(static_cast<char*>(dst) + first, bytes_, n - first);
  }
  // `n` bytes at ring byte offset `at`: in place, or joined in `scratch` when they wrap.
  std::string_view BytesAt(size_t at, size_t n, std::string& scratch) const {
    at &= byte_mask_;
    if (at + n <= byte_mask_ + 1) return {bytes_ + at, n};
    scratch.resize(n);
    CopyOut(at, scratch.data(), n);
    return scratch;
  }

  char* bytes_ = nullptr;
  size_t mask_;       // units - 1
  size_t byte_mask_;  // bytes - 1
  size_t hot_units_;
  size_t map_bytes_ = 0;
  alignas(64) std::atomic<uint64_t> head_{0};  // next unit the producer writes
  uint64_t cached_tail_ = 0;                    // producer's last view of tail_
  uint64_t woke_at_tail_ = ~uint64_t{0};        // tail_ when the producer last asked for a drain
  uint64_t next_rewind_check_ = ~uint64_t{0};   // producer: position of the next rewind check
  uint32_t reserved_ = 0;                       // producer: open pushes holding a reservation
  alignas(64) std::atomic<uint64_t> tail_{0};  // next unit the consumer reads
  std::atomic<uint64_t> dropped_[kNumRecordKinds] = {};
  std::atomic<uint64_t> ranges_dropped_[2] = {};
  std::atomic<uint64_t> unbalanced_{0};
  std::atomic<uint64_t> rewinds_{0};
};

// Room for `need` units past the reservations `rv` leaves: the head to write at, and whether
// to wake the consumer; false when the ring is full.
inline bool RecordRing::Claim(size_t need, Reserve rv, uint64_t* head, PushResult* result) noexcept {
  uint64_t h = head_.load(std::memory_order_relaxed);
  if (h >= next_rewind_check_) h = MaybeRewind(h);
  const uint64_t cap = mask_ + 1;
  // Units that must stay free once this record is in: the reservations of open pushes, one
  // more for a push, one fewer for the pop of a reserved push.
  uint64_t keep = reserved_;
  if (rv == Reserve::kOpen) ++keep;
  else if (rv == Reserve::kClose && keep) --keep;
  keep *= kCloseUnits;
  *result = kPushOk;
  if (h + need + keep - cached_tail_ > cap / kWakeFraction) {
    cached_tail_ = tail_.load(std::memory_order_acquire);
    if (h + need + keep - cached_tail_ > cap) return false;
    if (h + need - cached_tail_ > cap / kWakeFraction && woke_at_tail_ != cached_tail_) {
      woke_at_tail_ = cached_tail_;
      *result = kPushOkWake;
    }
  }
  *head = h;
  return true;
}

// Makes the record at [h, h + need) visible to the consumer and books its reservation.
inline void RecordRing::Publish(uint64_t h, size_t need, Reserve rv) noexcept {
  if (rv == Reserve::kOpen) ++reserved_;
  else if (rv == Reserve::kClose && reserved_) --reserved_;
  head_.store(h + need, std::memory_order_release);
}

inline PushResult RecordRing::TryPushCompact(RecordKind kind, uint32_t tid, int64_t t0, const char* a,
                                             size_t a_len, Reserve rv) noexcept {
  const size_t need = RingUnitsFor(true, a_len);
  uint64_t h;
  PushResult result;
  if (!Claim(need, rv, &h, &result)) return kPushFull;
  const size_t at = static_cast<size_t>(h) * kUnitBytes;
  __builtin_prefetch(bytes_ + ((at + kPushPrefetchBytes) & byte_mask_), 1, 3);
  const CompactHeader ch{static_cast<uint8_t>(kCompactTag | static_cast<uint8_t>(kind)), 0,
                         static_cast<uint16_t>(a_len), tid, t0};
  std::memcpy(bytes_ + (at & byte_mask_), &ch, sizeof ch);  // a unit: never wraps
  if (a_len) CopyIn(at + kCompactHeaderBytes, a, a_len);
  Publish(h, need, rv);
  return result;
}

template <class Fn>
size_t RecordRing::Drain(Fn&& fn, std::string& scratch) {
  // Head first: once the head shows records written after a rewind, the tail shows the rewind.
  const uint64_t head = head_.load(std::memory_order_acquire);
  const uint64_t start = tail_.load(std::memory_order_acquire);
  uint64_t tail = start;
  size_t n = 0;
  Record compact;  // the header handed out for compact records: zero but for five fields
  std::memset(static_cast<void*>(&compact), 0, sizeof compact);
  Record full;
  while (tail < head) {
    const size_t at = static_cast<size_t>(tail) * kUnitBytes;
    __builtin_prefetch(bytes_ + ((at + kDrainPrefetchBytes) & byte_mask_), 0, 0);
    Record* rec;
    size_t header_bytes, len;
    if (static_cast<uint8_t>(bytes_[at & byte_mask_]) & kCompactTag) {
      CompactHeader ch;  // a unit: never wraps
      std::memcpy(&ch, bytes_ + (at & byte_mask_), sizeof ch);
      compact.kind = static_cast<RecordKind>(ch.tag & ~kCompactTag);
      compact.tid = ch.tid;
      compact.t0 = ch.t0;
      compact.t1 = 0;
      compact.name_len = ch.name_len;
      rec = &compact;
      header_bytes = kCompactHeaderBytes;
      len = ch.name_len;
    } else {
      CopyOut(at, &full, kFullHeaderBytes);
      rec = &full;
      header_bytes = kFullHeaderBytes;
      len = full.data_len();
    }
    const uint64_t units = (header_bytes + len + kUnitBytes - 1) / kUnitBytes;
    if (units > head - tail) break;  // cannot happen with a well-behaved producer
    fn(*rec, BytesAt(at + header_bytes, len, scratch));
    tail += units;
    ++n;
  }
  // Only a position this drain advanced is stored, never over a rewind (see MaybeRewind).
  if (tail != start) tail_.store(tail, std::memory_order_release);
  return n;
}

}  // namespace truffld::inject
