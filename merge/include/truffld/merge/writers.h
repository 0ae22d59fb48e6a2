// Output writers of truffld-merge: trees.jsonl, trace.json (Chrome trace / Perfetto) and
// summary.json, plus the short human summary printed on stdout.
//
// Each writer takes a finished MergeResult and a JsonOut (file- or memory-backed), so the
// formats are unit-tested without touching the filesystem. Formats: schemas/trees.schema.json,
// schemas/summary.schema.json, and merge/README.md for trace.json's track layout.
// All times written are ns on the merged axis (trace.json: microseconds with 3 decimals, as the
// Chrome trace format requires).
// Thread-safety: read-only on the MergeResult; one JsonOut per call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "truffld/merge/import.h"
#include "truffld/merge/json_out.h"
#include "truffld/merge/pipeline.h"

namespace truffld::merge {

// How trees.jsonl spells the per-request trees of one (rank, step, view).
enum class TreeLayout : uint8_t {
  kPerRequest,  // one line per (rank, step, request, view)
  kGrouped,     // one line per group of requests that see the identical tree ("request_group")
};
const char* TreeLayoutName(TreeLayout l) noexcept;  // "per-request" / "grouped"

// Trees in MergeResult::trees order, requests in each tree's request order. Returns the number
// of lines written. Both layouts describe the same per-request trees: expanding each grouped
// line's request_group gives the per-request lines exactly.
uint64_t WriteTreesJsonl(const MergeResult& result, JsonOut* out,
                         TreeLayout layout = TreeLayout::kPerRequest);

struct TraceStats {
  uint64_t slices = 0;
  uint64_t flows = 0;
  uint64_t moved_to_overflow_track = 0;  // slices that partially overlapped another on its track
  TimeNs time_origin_ns = 0;  // merged-axis ns that "ts" 0 stands for (otherData.time_origin_ns)
};
// Chrome trace JSON: a process per rank, host threads and GPU streams as tracks, flow arrows
// from launch calls to the device work they caused. "ts" is in microseconds since
// TraceStats::time_origin_ns, so that viewers, which read it as a double, keep nanoseconds.
// Single-threaded; reads `result` only.
TraceStats WriteChromeTrace(const MergeResult& result, JsonOut* out);

// The time origin of a trace whose earliest slice starts at `earliest` (ns): the whole second at
// or before it (floor, also for negative times; `earliest` itself when that second does not fit
// in int64). Pure function.
TimeNs TraceTimeOrigin(TimeNs earliest);

// What the command line did, for summary.json.
struct RunInfo {
  std::vector<std::string> inputs;
  std::vector<std::pair<std::string, std::string>> failed_inputs;  // path, reason
  std::vector<SkippedInput> skipped_inputs;  // not traces, truffld outputs, repeated inputs
  std::string version = "0.1.0";  // the command line sets truffld::VersionString()
  double wall_seconds = 0;
  uint64_t trees_written = 0;         // trees.jsonl lines (grouped: fewer than total.trees)
  TreeLayout tree_layout = TreeLayout::kGrouped;
  TraceStats trace;
  bool trace_written = false;
};
void WriteSummaryJson(const MergeResult& result, const RunInfo& run, JsonOut* out);

// A few lines for people: events, steps, trees, what could not be attributed and why.
std::string FormatTextSummary(const MergeResult& result, const RunInfo& run);

}  // namespace truffld::merge
