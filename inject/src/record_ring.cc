// RecordRing: see record_ring.h.
#include "record_ring.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstring>

namespace truffld::inject {

const char* RecordKindName(RecordKind k) noexcept {
  switch (k) {
    case RecordKind::kNvtxPush: return "NVTX_PUSH";
    case RecordKind::kNvtxPop: return "NVTX_POP";
    case RecordKind::kNvtxStart: return "NVTX_START";
    case RecordKind::kNvtxEnd: return "NVTX_END";
    case RecordKind::kNvtxMark: return "NVTX_MARK";
    case RecordKind::kRuntime: return "RUNTIME";
    case RecordKind::kDriver: return "DRIVER";
    case RecordKind::kGraphNode: return "GRAPH_NODE";
    case RecordKind::kKernel: return "KERNEL";
    case RecordKind::kMemcpy: return "MEMCPY";
    case RecordKind::kMemset: return "MEMSET";
    case RecordKind::kSync: return "SYNC";
    case RecordKind::kCount: break;
  }
  return "UNKNOWN";
}

static size_t RoundUpPow2(size_t n) { return std::max<size_t>(64, std::bit_ceil(n)); }

RecordRing::RecordRing(size_t slots, size_t hot_slots) {
  const size_t cap_slots = RoundUpPow2(slots);
  const size_t hot = hot_slots >= cap_slots ? cap_slots : RoundUpPow2(hot_slots);
  mask_ = cap_slots * kUnitsPerSlot - 1;
  hot_units_ = hot * kUnitsPerSlot;
  map_bytes_ = cap_slots * kSlotBytes;
  byte_mask_ = map_bytes_ - 1;
  void* m = ::mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return;
  bytes_ = static_cast<char*>(m);
  // Touch the hot pages now so that ordinary use never page-faults (warm-up); the rest is
  // touched only by bursts that reach it.
  std::memset(bytes_, 0, hot * kSlotBytes);
  if (hot < cap_slots) next_rewind_check_ = hot_units_;
}

RecordRing::~RecordRing() {
  if (bytes_) ::munmap(bytes_, map_bytes_);
}

uint64_t RecordRing::MaybeRewind(uint64_t h) noexcept {
  const uint64_t pos = h & mask_;
  const uint64_t lap = h - pos;  // index of this lap's first unit
  if (pos < hot_units_) {  // the ring wrapped by itself
    next_rewind_check_ = lap + hot_units_;
    return h;
  }
  // Only an empty ring rewinds: the producer moves the consumer's position along with its own
  // to the next lap's first unit, so the whole ring stays free. The consumer never stores a
  // position it has not advanced (Drain), so the compare-and-swap cannot be undone.
  uint64_t tail = tail_.load(std::memory_order_acquire);
  const uint64_t rewound = lap + mask_ + 1;
  if (tail != h || !tail_.compare_exchange_strong(tail, rewound, std::memory_order_acq_rel)) {
    next_rewind_check_ = h + 1;  // the next push looks again
    return h;
  }
  head_.store(rewound, std::memory_order_release);
  cached_tail_ = rewound;
  next_rewind_check_ = rewound + hot_units_;
  Bump(rewinds_);
  return rewound;
}

PushResult RecordRing::TryPush(const Record& head, const char* a, size_t a_len, const char* b,
                               size_t b_len, Reserve rv) noexcept {
  const bool compact = IsCompact(head, b_len);
  const size_t need = RingUnitsFor(compact, a_len + b_len);
  uint64_t h = head_.load(std::memory_order_relaxed);
  if (h >= next_rewind_check_) h = MaybeRewind(h);
  const uint64_t cap = mask_ + 1;
  // Units that must stay free once this record is in: the reservations of open pushes, one
  // more for a push, one fewer for the pop of a reserved push.
  uint64_t keep = reserved_;
  if (rv == Reserve::kOpen) ++keep;
  else if (rv == Reserve::kClose && keep) --keep;
  keep *= kCloseUnits;
  PushResult result = kPushOk;
  if (h + need + keep - cached_tail_ > cap / kWakeFraction) {
    cached_tail_ = tail_.load(std::memory_order_acquire);
    if (h + need + keep - cached_tail_ > cap) return kPushFull;
    if (h + need - cached_tail_ > cap / kWakeFraction && woke_at_tail_ != cached_tail_) {
      woke_at_tail_ = cached_tail_;
      result = kPushOkWake;
    }
  }
  const size_t at = static_cast<size_t>(h) * kUnitBytes;
  if (compact) {
    const CompactHeader ch{static_cast<uint8_t>(kCompactTag | static_cast<uint8_t>(head.kind)), 0,
                           static_cast<uint16_t>(a_len), head.tid, head.t0};
    std::memcpy(bytes_ + (at & byte_mask_), &ch, sizeof ch);  // a unit: never wraps
    if (a_len) CopyIn(at + kCompactHeaderBytes, a, a_len);
  } else {
    CopyIn(at, &head, kFullHeaderBytes);
    if (a_len) CopyIn(at + kFullHeaderBytes, a, a_len);
    if (b_len) CopyIn(at + kFullHeaderBytes + a_len, b, b_len);
  }
  if (rv == Reserve::kOpen) ++reserved_;
  else if (rv == Reserve::kClose && reserved_) --reserved_;
  head_.store(h + need, std::memory_order_release);
  return result;
}

void RecordRing::ResetForChild() noexcept {
  const uint64_t h = head_.load(std::memory_order_relaxed);
  tail_.store(h, std::memory_order_relaxed);
  cached_tail_ = h;
  woke_at_tail_ = ~uint64_t{0};
  for (auto& d : dropped_) d.store(0, std::memory_order_relaxed);
  for (auto& d : ranges_dropped_) d.store(0, std::memory_order_relaxed);
  unbalanced_.store(0, std::memory_order_relaxed);
}

}  // namespace truffld::inject
