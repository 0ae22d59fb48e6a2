// ParallelFor: the one parallel loop of the offline tools (merge imports and tree building,
// diagnose's Stage I groups and Stage II model calls).
//
// Runs fn(i) once for every i in [0, n) on at most `threads` threads, the calling thread being
// one of them (threads <= 1, or n <= 1: everything runs on the caller, no thread is started).
// Indices are handed out one at a time in increasing order from a shared counter, so a slow item
// never holds up the others' start and results stored per index come out in index order
// whatever the scheduling. Returns when every call has returned.
// Thread-safety: fn is called concurrently for different indices; it must not throw (truffld
// reports failures as Status values, never exceptions).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace truffld {

template <class Fn>
void ParallelFor(size_t n, int threads, Fn&& fn) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < n;) fn(i);
  };
  const size_t workers = std::min<size_t>(threads < 1 ? 1 : size_t(threads), std::max<size_t>(n, 1));
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  for (size_t t = 1; t < workers; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
}

}  // namespace truffld
