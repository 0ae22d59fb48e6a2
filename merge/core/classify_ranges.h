// Pass 2, classification: each host range's layer under the rules, and the implicit steps of
// a file that has no step range at all.
//
// Rules (merge/README.md, "Classification" and "Steps"): the first matching rule gives the
// layer (user rules before the built-in ones, RangeClasses caching the answers); a file with no
// step range gets one implicit step per process, spanning that process's host ranges and API
// calls, when MergeOptions::implicit_steps is on.
// Input: the TraceFile, its ranges (pass 1). Output: RangeLayers. The classifier's caches are
// the caller's (tree building asks them for families and request ids later).
// Thread-safety: reentrant; `classes` belongs to one file's build.
#pragma once

#include <cstdint>
#include <vector>

#include "core/host_ranges.h"
#include "core/range_classes.h"

namespace truffld::merge {

// A whole-process step of a file without step ranges: its process and span (file clock).
struct ImplicitStep {
  int64_t process = kNone;
  TimeNs start = 0;
  TimeNs end = 0;
};

struct RangeLayers {
  std::vector<Layer> layer;                   // per range, as the rules give it
  std::vector<RangeClasses::Source> source;   // per range: where RangeClasses keeps its class
  std::vector<ImplicitStep> implicit;         // ascending by process (empty: the file has steps)
};

// The name, NVTX domain and category a range's opening event is classified by.
ClassKey ClassKeyOf(const TraceFile& file, const Event& e);

RangeLayers ClassifyRanges(const TraceFile& file, const std::vector<HostRange>& ranges, RangeClasses* classes,
                           bool implicit_steps);

}  // namespace truffld::merge
