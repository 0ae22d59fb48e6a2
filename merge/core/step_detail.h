// After tree building: what a file's steps lack that the merge cannot restore, counted so that
// summary.json says so instead of the trees silently holding less.
//
//   - step_names_cut: a step whose name holds its request list only in part (Rules::
//     RequestsCut): the injector cut the name at its limit, so the trees name only the requests
//     read. Implicit steps have no name and are never counted.
//   - injector_names_truncated: the names the injector itself reports having cut
//     (STATS.names_truncated), whatever range they belonged to.
//
// Pure functions over one file's data. Thread-safety: one call per file; calls for different
// files may run concurrently.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/build_trees.h"

namespace truffld::merge {

// STATS.names_truncated of an injector's STATS record (FileMeta::stats_json, verbatim); 0 when
// the record is absent, not JSON, or holds no non-negative integer count.
uint64_t InjectorNamesTruncated(std::string_view stats_json);

// Counts `trees`' named steps whose request list `rules` cannot read whole, and the names the
// injector cut, into *c (step_names_cut, injector_names_truncated).
void CountStepDetail(const TraceFile& file, const FileTrees& trees, const Rules& rules, MergeCounters* c);

}  // namespace truffld::merge
