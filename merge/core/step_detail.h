// After tree building: what a file's steps lack that the merge cannot restore, counted so that
// summary.json says so instead of the trees silently holding less.
//
//   - step_names_cut: a step whose name holds its request list only in part (Rules::
//     RequestsCut): the injector cut the name at its limit, so the trees name only the requests
//     read. Implicit steps have no name and are never counted.
//   - injector_names_truncated: the names the injector itself reports having cut
//     (STATS.names_truncated), whatever range they belonged to.
//   - device detail: in a file whose device activity was sampled (FileMeta::device_sampled),
//     only steps wholly inside a device window had their kernels, copies and memsets recorded.
//     Every other step of such a file is marked (StepRoot::device_detail = false) and counted
//     (steps_without_device_detail): its trees lack device work by design, which is no anomaly.
//     Windows are the DEVICE_WINDOW edges paired by window id, in any order, mapped onto the
//     merged axis with the file's clock map; a window whose end edge is missing lasts to the end
//     of the trace, one whose start edge is missing (dropped) from its beginning. A file with
//     window edges counts as sampled unless its META.config says "all". Files that were not
//     sampled are left as they are.
//
// Pure functions over one file's data. Thread-safety: one call per file; calls for different
// files may run concurrently.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "core/build_trees.h"

namespace truffld::merge {

// The count `key` (names_truncated, api_unpaired) of an injector's STATS record
// (FileMeta::stats_json, verbatim); 0 when the record is absent, not JSON, or holds no
// non-negative integer count there.
uint64_t InjectorCount(std::string_view stats_json, const char* key);

// A sampled file's device windows as [start, end] on the merged axis (ns), sorted by start;
// start = INT64_MIN for a window without its start edge, end = INT64_MAX for one without its
// end edge. max_end[i]: the furthest end among spans[0..i]. Empty for a file without edges.
struct DeviceWindows {
  std::vector<std::pair<TimeNs, TimeNs>> spans;
  std::vector<TimeNs> max_end;
};
DeviceWindows DeviceWindowsOf(const FileMeta& meta, const ClockMap& clock);
// Whether [start, end] (merged axis) lies wholly inside one of `windows`: O(log windows).
bool InsideAWindow(const DeviceWindows& windows, TimeNs start, TimeNs end);

// Counts `trees`' named steps whose request list `rules` cannot read whole, the names the
// injector cut and the API calls it left out unpaired (step_names_cut, injector_names_truncated,
// injector_api_unpaired), and, in a sampled file, marks the
// steps outside every device window (StepRoot::device_detail, steps_without_device_detail).
// `clock`: the file's map onto the merged axis (the one its nodes were built with).
void CountStepDetail(const TraceFile& file, const ClockMap& clock, const Rules& rules, FileTrees* trees,
                     MergeCounters* c);

}  // namespace truffld::merge
