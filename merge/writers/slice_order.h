// Slice order for trace.json: a track's slices by start, the longer first, then node index,
// visited without copying them (see ForEachInSliceOrder). Used by write_trace.cc only.
// Units: ns on the merged axis. Thread-safety: none (plain functions over a const MergeResult).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "truffld/merge/writers.h"

namespace truffld::merge {

inline constexpr size_t kAhead = 16;  // nodes to load ahead (see MergeResult::PrefetchEvent)

// A slice's times (ns, merged axis), read from its node's event.
struct SliceTimes {
  TimeNs start, end;
};

// Reads slices' times from their nodes, which lie scattered: each walk over a run of slices
// loads ahead (the node of slice k + kAhead).
class SliceReader {
 public:
  SliceReader(const MergeResult& r, const uint32_t* slices) : r_(r), s_(slices) {}
  SliceTimes At(size_t k, size_t end) const {
    if (k + kAhead < end) PrefetchLine(&r_.nodes[s_[k + kAhead]]);
    const Node& n = r_.nodes[s_[k]];
    return {n.start, n.end};
  }
  // Slice order: start, the longer first, node.
  bool Less(const SliceTimes& x, size_t a, const SliceTimes& y, size_t b) const {
    if (x.start != y.start) return x.start < y.start;
    return x.end != y.end ? x.end > y.end : s_[a] < s_[b];
  }

 private:
  const MergeResult& r_;
  const uint32_t* s_;
};

// Calls f(node, start, end) for a track's slices in slice order. They come as a few sorted runs
// (a host thread's ranges, then its API calls): one walk finds the runs, a second merges them
// as they are visited, each run's head times kept at hand, so no copy of the times or of the
// reordered slices is made (16 bytes a slice of the largest track was the peak of trace.json
// writing). Many runs (no common input makes them): times and a sorted list of positions.
template <class F>
void ForEachInSliceOrder(const MergeResult& r, const uint32_t* slices, size_t n, F&& f) {
  const SliceReader rd(r, slices);
  if (n == 0) return;
  std::vector<size_t> bounds{0};
  SliceTimes prev = rd.At(0, n);
  for (size_t k = 1; k < n; ++k) {
    const SliceTimes cur = rd.At(k, n);
    if (rd.Less(cur, k, prev, k - 1)) bounds.push_back(k);
    prev = cur;
    if (bounds.size() > 64) {
      std::vector<SliceTimes> times(n);
      for (size_t i = 0; i < n; ++i) times[i] = rd.At(i, n);
      std::vector<uint32_t> order(n);
      for (size_t i = 0; i < n; ++i) order[i] = uint32_t(i);
      std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return rd.Less(times[a], a, times[b], b); });
      for (uint32_t p : order) f(slices[p], times[p].start, times[p].end);
      return;
    }
  }
  bounds.push_back(n);
  struct Run { size_t at, end; SliceTimes head; };
  std::vector<Run> runs;
  for (size_t q = 0; q + 1 < bounds.size(); ++q) runs.push_back({bounds[q], bounds[q + 1], rd.At(bounds[q], bounds[q + 1])});
  for (;;) {
    Run* best = nullptr;  // the run whose head comes first
    for (Run& run : runs)
      if (run.at != run.end && (!best || rd.Less(run.head, run.at, best->head, best->at))) best = &run;
    if (!best) return;
    f(slices[best->at], best->head.start, best->head.end);
    if (++best->at != best->end) best->head = rd.At(best->at, best->end);
  }
}

}  // namespace truffld::merge
