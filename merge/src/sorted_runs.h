// SortRuns: sorting for vectors that are usually a few sorted blocks appended one after
// another.
//
// The merge builds many of its vectors that way: a host thread's trace.json track holds its
// ranges (in start order) followed by its API calls (in start order); a file's host ranges are
// its complete ranges, then its push/pop ranges, then its start/end ranges. A comparison sort
// over millions of such elements costs n log n; merging r sorted runs costs n log r, and an
// already sorted vector one pass. Falls back to std::sort when the runs are many.
// `less` must be a strict total order (ties broken by an index): the result is then exactly
// std::sort's. Thread-safety: none needed (operates on the caller's vectors).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace truffld::merge {

// Sorts *v by `less`. `scratch` is reused between calls (grown to v's size when runs must be
// merged), so sorting many vectors in turn touches that memory once.
template <class T, class Less>
void SortRuns(std::vector<T>* v, Less less, std::vector<T>* scratch, size_t max_runs = 64) {
  const size_t n = v->size();
  std::vector<size_t> bounds{0};
  for (size_t i = 1; i < n; ++i) {
    if (!less((*v)[i], (*v)[i - 1])) continue;
    bounds.push_back(i);
    if (bounds.size() > max_runs) {
      std::sort(v->begin(), v->end(), less);
      return;
    }
  }
  if (bounds.size() == 1) return;
  bounds.push_back(n);
  if (scratch->size() < n) scratch->resize(n);
  T* src = v->data();
  T* dst = scratch->data();
  // Bottom-up: merge runs pairwise until one is left, ping-ponging between v and scratch.
  while (bounds.size() > 2) {
    std::vector<size_t> next{0};
    for (size_t k = 0; k + 1 < bounds.size(); k += 2) {
      const size_t a = bounds[k], m = bounds[k + 1];
      const size_t e = k + 2 < bounds.size() ? bounds[k + 2] : m;
      if (e == m) std::copy(src + a, src + m, dst + a);  // odd run out: carried over
      else std::merge(src + a, src + m, src + m, src + e, dst + a, less);
      next.push_back(e);
    }
    std::swap(src, dst);
    bounds.swap(next);
  }
  if (src != v->data()) std::copy(src, src + n, v->data());
}

}  // namespace truffld::merge
