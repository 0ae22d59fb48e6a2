// RecordRing: see record_ring.h.
#include "record_ring.h"

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

static size_t RoundUpPow2(size_t n) {
  size_t p = 64;
  while (p < n) p <<= 1;
  return p;
}

RecordRing::RecordRing(size_t slots)
    : slots_(new Record[RoundUpPow2(slots)]), mask_(RoundUpPow2(slots) - 1) {
  // Touch every page now so the first pushes do not page-fault (warm-up).
  std::memset(static_cast<void*>(slots_.get()), 0, (mask_ + 1) * sizeof(Record));
}

PushResult RecordRing::TryPush(const Record& head, const char* data, size_t data_len) noexcept {
  const size_t need = SlotsFor(data_len);
  const uint64_t h = head_.load(std::memory_order_relaxed);
  const uint64_t cap = mask_ + 1;
  PushResult result = kPushOk;
  if (h + need - cached_tail_ > cap / 2) {
    cached_tail_ = tail_.load(std::memory_order_acquire);
    if (h + need - cached_tail_ > cap) return kPushFull;
    if (h + need - cached_tail_ > cap / 2 && woke_at_tail_ != cached_tail_) {
      woke_at_tail_ = cached_tail_;
      result = kPushOkWake;
    }
  }
  Record& slot = slots_[h & mask_];
  std::memcpy(static_cast<void*>(&slot), &head, offsetof(Record, inline_bytes));
  const size_t first = data_len < kInlineBytes ? data_len : kInlineBytes;
  if (first) std::memcpy(slot.inline_bytes, data, first);
  size_t done = first;
  for (size_t i = 1; i < need; ++i) {
    char* p = reinterpret_cast<char*>(&slots_[(h + i) & mask_]);
    const size_t take = (data_len - done) < kSlotBytes ? (data_len - done) : kSlotBytes;
    std::memcpy(p, data + done, take);
    done += take;
  }
  head_.store(h + need, std::memory_order_release);
  return result;
}

void RecordRing::ResetForChild() noexcept {
  const uint64_t h = head_.load(std::memory_order_relaxed);
  tail_.store(h, std::memory_order_relaxed);
  cached_tail_ = h;
  woke_at_tail_ = ~uint64_t{0};
  for (auto& d : dropped_) d.store(0, std::memory_order_relaxed);
}

}  // namespace truffld::inject
