// FileTreeBuilder (private to truffld_merge): one file's events -> tree nodes and step roots.
//
// Classifies the file's host ranges, nests them per (process, thread), picks step roots (or one
// implicit step per process when the file has none), attaches API calls to their innermost
// range and device activity to its launching API call, and emits Node records whose indices
// are local to this file (Merge() concatenates and shifts them). Counters go to a
// MergeCounters; messages with file:line to the file's IngestStats.
// The builder changes the file's events in place (see Event): closing events are dropped once
// the ranges are built, times are mapped onto the merged axis and a range's opening event gets
// the range's end; it also interns family strings and may add implicit-step thread entries.
// Thread-safety: one builder per file; builders for different files may run concurrently
// (each owns its outputs and its TraceFile).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "truffld/merge/pipeline.h"

namespace truffld::merge {

// A step found in one file; node indices are local to the builder's node vector.
struct StepRoot {
  uint32_t vertical = kNoNode;
  uint32_t horizontal = kNoNode;
  TimeNs start = 0;  // merged axis
  int64_t process_id = kNone;
  std::vector<std::string> requests;
  bool implicit = false;
  uint64_t line = 0;
};

struct FileTrees {
  std::vector<Node> nodes;
  std::vector<ImplicitSpan> implicit;  // event-less nodes' times and names, by local node index
  std::vector<StepRoot> steps;
  // Request subsets named below steps, local; `requests` indexes this until Merge remaps.
  std::vector<std::vector<std::string>> request_sets;
  NodeSideTable requests, anchors;  // as MergeResult::node_requests and node_anchors, local
  MergeCounters counters;
};

// Builds the trees of `file` (index `file_index` in the merge). `clock` maps every file time
// onto the merged axis.
FileTrees BuildFileTrees(uint32_t file_index, TraceFile& file, const ClockMap& clock,
                         const MergeOptions& options);

}  // namespace truffld::merge
