// Pass 3, nesting: the forest of each (process, thread)'s ranges, step membership, and the
// adoption of other threads' ranges into the steps that contain them.
//
// Rules (merge/README.md, "Nesting"): r1 is inside r2 when r2.start <= r1.start and r1.end <=
// r2.end on the same (process, thread); a stack scan over the ranges in nesting order (thread,
// start, the longer first, event) gives each range its innermost enclosing range. A step range
// inside another step becomes `other`. A range in no step whose process has an implicit step
// joins it; otherwise a range wholly inside a step of its process on another thread is adopted
// by that step (the latest-starting one; adopted_ranges).
// Range indices: the RangeSet's ranges [0, real_ranges), then the implicit steps (RangeLayers::
// implicit, in order). Input: the TraceFile (threads), ranges (pass 1), layers (pass 2).
// Output: Nesting. Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <vector>

#include "core/classify_ranges.h"
#include "core/host_ranges.h"

namespace truffld::merge {

constexpr uint32_t kNoRange = UINT32_MAX;

// A step range's process and span, ordered by (process, start, end, range).
struct StepSpan {
  int64_t process = kNone;
  TimeNs start = 0, end = 0;
  uint32_t range = kNoRange;
  bool operator<(const StepSpan& o) const;
};

struct Nesting {
  uint32_t real_ranges = 0;       // ranges from pass 1; indices from here on are implicit steps
  std::vector<uint32_t> order;    // the real ranges in nesting order
  std::vector<uint32_t> parent;   // per range: the enclosing range (or its step), kNoRange: a root
  std::vector<uint32_t> step;     // per range: its step range, kNoRange: in no step
  std::vector<Layer> layer;       // per range: the final layer (implicit steps: kStep)
  std::vector<StepSpan> steps;    // every step, implicit ones included, sorted
  uint64_t adopted_ranges = 0;
  bool IsImplicit(uint32_t r) const { return r >= real_ranges; }
};

Nesting NestRanges(const TraceFile& file, const std::vector<HostRange>& ranges, const RangeLayers& layers);

// The latest-starting step of `process` in `steps` (sorted) containing [s, e], or kNoRange.
// Steps of one process seldom overlap: the 16 latest-starting candidates are tried.
uint32_t StepContaining(const std::vector<StepSpan>& steps, int64_t process, TimeNs s, TimeNs e);

// Nesting order of two ranges: thread index (= (process, thread) order), start, the longer
// first, opening event.
inline bool NestingLess(const HostRange& x, const HostRange& y) {
  if (x.thread != y.thread) return x.thread < y.thread;
  if (x.start != y.start) return x.start < y.start;
  if (x.end != y.end) return x.end > y.end;
  return x.event < y.event;
}

}  // namespace truffld::merge
