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
  if (IsCompact(head, b_len)) return TryPushCompact(head.kind, head.tid, head.t0, a, a_len, rv);
  const size_t need = RingUnitsFor(false, a_len + b_len);
  uint64_t h;
  PushResult result;
  if (!Claim(need, rv, &h, &result)) return kPushFull;
  const size_t at = static_cast<size_t>(h) * kUnitBytes;
  CopyIn(at, &head, kFullHeaderBytes);
  if (a_len) CopyIn(at + kFullHeaderBytes, a, a_len);
  if (b_len) CopyIn(at + kFullHeaderBytes + a_len, b, b_len);
  Publish(h, need, rv);
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
