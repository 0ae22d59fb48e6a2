// A minimal parallel loop for Stage I's independent work items (mixture fits per group).
// Internal header. Thread-safety: `fn` must be safe to call concurrently for distinct indices.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace truffld::diagnose::detail {

// Calls fn(i) for i in [0, n) on up to `threads` threads (the caller's thread included).
template <typename F>
void ParallelFor(size_t n, int threads, F&& fn) {
  std::atomic<size_t> next{0};
  auto worker = [&]() {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  const int nt = std::max(1, std::min<int>(threads, static_cast<int>(n)));
  std::vector<std::thread> pool;
  for (int t = 1; t < nt; ++t) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
}

}  // namespace truffld::diagnose::detail
