// RingRegistry: see ring_registry.h.
#include "ring_registry.h"

#include <new>

namespace truffld::inject {

namespace {
// Ring sizes as RecordRing rounds them, so that the budget counts what is allocated.
size_t RingSlots(size_t n) {
  size_t p = 64;
  while (p < n) p <<= 1;
  return p;
}
}  // namespace

RingRegistry::RingRegistry(size_t large_slots, size_t small_slots, uint64_t budget_bytes,
                           size_t hot_slots)
    : large_slots_(RingSlots(large_slots)),
      small_slots_(RingSlots(small_slots < large_slots ? small_slots : large_slots)),
      hot_slots_(hot_slots),
      budget_bytes_(budget_bytes),
      mu_(std::make_unique<std::mutex>()) {}

RingRegistry::~RingRegistry() {
  const size_t n = count_.load();
  for (size_t i = 0; i < n; ++i) delete rings_[i].load();
}

RecordRing* RingRegistry::Acquire() {
  std::lock_guard<std::mutex> lock(*mu_);
  const size_t n = count_.load(std::memory_order_relaxed);
  for (size_t i = 0; i < n; ++i) {
    RecordRing* r = rings_[i].load(std::memory_order_relaxed);
    if (r->orphaned.load(std::memory_order_acquire) && r->empty()) {
      r->ForgetReservations();
      r->orphaned.store(false, std::memory_order_release);
      return r;
    }
  }
  if (n >= kMaxRings) return nullptr;
  const uint64_t used = bytes_.load(std::memory_order_relaxed);
  const uint64_t large = uint64_t{large_slots_} * kSlotBytes, small = uint64_t{small_slots_} * kSlotBytes;
  // Large rings while they hold at most half of the budget (and always for the first thread
  // when the budget allows it at all), small ones from what is left.
  size_t slots = 0;
  if (used + large <= budget_bytes_ && (large_bytes_ + large <= budget_bytes_ / 2 || n == 0)) slots = large_slots_;
  else if (used + small <= budget_bytes_) slots = small_slots_;
  if (!slots) return nullptr;
  RecordRing* r = new (std::nothrow) RecordRing(slots, hot_slots_);
  if (!r) return nullptr;
  if (!r->ok()) { delete r; return nullptr; }
  if (slots == large_slots_) large_bytes_ += large;
  bytes_.store(used + uint64_t{r->capacity_slots()} * kSlotBytes, std::memory_order_release);
  rings_[n].store(r, std::memory_order_release);
  count_.store(n + 1, std::memory_order_release);
  return r;
}

void RingRegistry::Release(RecordRing* ring) {
  if (ring) ring->orphaned.store(true, std::memory_order_release);
}

void RingRegistry::ResetForChild() {
  // The mutex was taken by the forking thread (LockForFork) and released again in the child.
  ForEach([](RecordRing& r) { r.ResetForChild(); });
  for (auto& d : no_ring_dropped_) d.store(0, std::memory_order_relaxed);
}

}  // namespace truffld::inject
