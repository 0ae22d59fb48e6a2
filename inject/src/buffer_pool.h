// ActivityBufferPool: a bounded pool of fixed-size buffers lent to CUPTI for activity records.
//
// CUPTI asks for a buffer whenever it needs room for device activity. The pool allocates at most
// `max_buffers` buffers over the process lifetime and recycles them after the writer thread has
// formatted their contents; when all are in flight, Get() returns nullptr and CUPTI drops the
// records (counted by CUPTI and reported in STATS as cupti_dropped, and here as denied()).
// Thread-safety: Get/Put from any thread (one mutex; called once per multi-MB buffer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <vector>

namespace truffld::inject {

class ActivityBufferPool {
 public:
  ActivityBufferPool(size_t buffer_bytes, size_t max_buffers)
      : buffer_bytes_(buffer_bytes), max_buffers_(max_buffers ? max_buffers : 1) {}
  ~ActivityBufferPool() { for (void* b : all_) std::free(b); }

  // A free buffer of buffer_bytes() bytes (8-byte aligned), or nullptr when the pool is spent.
  uint8_t* Get() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) { uint8_t* b = free_.back(); free_.pop_back(); return b; }
    if (all_.size() >= max_buffers_) { ++denied_; return nullptr; }
    void* b = std::aligned_alloc(64, buffer_bytes_);
    if (!b) { ++denied_; return nullptr; }
    all_.push_back(b);
    return static_cast<uint8_t*>(b);
  }
  void Put(uint8_t* b) {
    if (!b) return;
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(b);
  }
  size_t buffer_bytes() const { return buffer_bytes_; }
  size_t allocated() const { std::lock_guard<std::mutex> lock(mu_); return all_.size(); }
  uint64_t denied() const { std::lock_guard<std::mutex> lock(mu_); return denied_; }
  std::mutex& mutex_for_fork() { return mu_; }

 private:
  size_t buffer_bytes_;
  size_t max_buffers_;
  mutable std::mutex mu_;
  std::vector<void*> all_;
  std::vector<uint8_t*> free_;
  uint64_t denied_ = 0;
};

}  // namespace truffld::inject
