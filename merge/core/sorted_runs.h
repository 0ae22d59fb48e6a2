// SortRuns: sorting for vectors that are usually a few sorted blocks appended one after
// another.
//
// The merge builds many of its vectors that way: a file's host ranges are its complete ranges,
// then its push/pop ranges, then its start/end ranges; a thread's events and the correlation
// index are mostly in order already. (trace.json tracks are merged run by run as they are
// visited, without reordering a copy: write_trace.cc.) A comparison sort
// over millions of such elements costs n log n; merging r sorted runs costs n log r, and an
// already sorted vector one pass. Falls back to std::sort when the runs are many.
// `less` must be a strict total order (ties broken by an index): the result is then exactly
// std::sort's. Thread-safety: none needed (operates on the caller's range).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace truffld::merge {

// Sorts [first, last) by `less`. Runs are merged pairwise in place (std::inplace_merge borrows
// a buffer the size of the shorter run of each pair): a range of two runs, the common case,
// needs extra memory for the shorter one only, not a second copy of the whole range. An
// already sorted range costs one pass of comparisons, as an is_sorted check would.
template <class It, class Less>
void SortRuns(It first, It last, Less less, size_t max_runs = 64) {
  const size_t n = static_cast<size_t>(last - first);
  std::vector<size_t> bounds{0};
  for (size_t i = 1; i < n; ++i) {
    if (!less(first[i], first[i - 1])) continue;
    bounds.push_back(i);
    if (bounds.size() > max_runs) {
      std::sort(first, last, less);
      return;
    }
  }
  bounds.push_back(n);
  auto at = [&](size_t k) { return first + static_cast<std::ptrdiff_t>(bounds[k]); };
  // Bottom-up: merge neighbouring runs until one is left.
  while (bounds.size() > 2) {
    std::vector<size_t> next{0};
    for (size_t k = 0; k + 1 < bounds.size(); k += 2) {
      if (k + 2 < bounds.size()) {
        std::inplace_merge(at(k), at(k + 1), at(k + 2), less);
        next.push_back(bounds[k + 2]);
      } else {
        next.push_back(bounds[k + 1]);  // odd run out: carried over
      }
    }
    bounds.swap(next);
  }
}

template <class T, class Less>
void SortRuns(std::vector<T>* v, Less less, size_t max_runs = 64) {
  SortRuns(v->begin(), v->end(), less, max_runs);
}

}  // namespace truffld::merge
