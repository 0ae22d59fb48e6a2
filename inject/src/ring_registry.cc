// RingRegistry: see ring_registry.h.
#include "ring_registry.h"

#include <new>

namespace truffld::inject {

RingRegistry::RingRegistry(size_t slots_per_ring, size_t max_rings)
    : slots_per_ring_(slots_per_ring),
      max_rings_(max_rings < kMaxRings ? (max_rings ? max_rings : 1) : kMaxRings),
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
      r->orphaned.store(false, std::memory_order_release);
      return r;
    }
  }
  if (n >= max_rings_) return nullptr;
  RecordRing* r = new (std::nothrow) RecordRing(slots_per_ring_);
  if (!r) return nullptr;
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
