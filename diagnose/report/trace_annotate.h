// diagnosis.trace.json: truffld-merge's trace.json with the diagnosis overlay (trace_overlay.h)
// added, one file that Perfetto (ui.perfetto.dev) and chrome://tracing open as they open the
// merge trace.
//
// Why a copy and not a small companion file: Perfetto places each clockless JSON trace on a
// timeline of its own (opening several needs manual alignment or a manifest, Perfetto v58 and
// later), and flow arrows bind slices of one trace only, so markers could not point at the
// operator slices of another file.
//
// The copy is streamed line by line (the merge writes one event per line): the head gets
// otherData.annotated_by; each step slice whose start and pid match a diagnosed step gets its
// views' verdicts in args (verdict_vertical, verdict_horizontal); each operator slice that a
// marker targets (same start and duration, its family as name, the rank as pid) gets
// `"bind_id":ID,"flow_out":true`, and the marker `"bind_id":ID,"flow_in":true` (flow events
// v2: the arrow runs from the operator to its verdict and is bound to both slices exactly,
// whatever else starts at the same time). The overlay's process, tracks and slices follow the
// merge's events. Slices that match nothing are copied as they are; markers whose operator is
// not found (a trace.json from another merge, a CUDA-graph replay) have no arrow and are
// counted. Times: trace.json's "ts" is microseconds (three decimals) since otherData.
// time_origin_ns; the overlay's ns are converted the same way, so equal times are equal text.
// Thread-safety: reentrant; the file adapter reads and writes the given paths only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "report/trace_overlay.h"
#include "truffld/status.h"

namespace truffld::diagnose {

// The pid of the "truffld diagnosis" process (ranks are below it, rankless merge processes
// from 1000000 up).
constexpr int64_t kDiagnosisPid = 999999;
// Flow ids of the overlay: above the merge's own (its node indices, below 2^32).
constexpr uint64_t kOverlayFlowBase = uint64_t{1} << 40;

// The fields of one slice line of the merge's trace.json that the annotation matches on.
struct SliceLine {
  std::string_view name;  // as written: JSON-escaped, without the quotes
  std::string_view cat;
  int64_t pid = 0, tid = 0;
  int64_t ts_ns = 0, dur_ns = 0;  // "ts" / "dur" in ns
  bool has_args = false;          // an "args" object (it then closes the line: `...}}`)
  bool has_flow = false;          // already carries a bind_id
};
// Reads `line` (one event, without its trailing ',') in the merge writer's layout
// `{"ph":"X","name":N,"cat":C,"pid":P,"tid":T,"ts":TS,"dur":D...}`; nullopt for anything else
// (metadata, another writer's layout). Pure.
std::optional<SliceLine> ParseSliceLine(std::string_view line);
// ParseSliceLine without has_flow (left false), which takes a search through the rest of the
// line; `*rest` gets where the line continues after "dur". Pure.
std::optional<SliceLine> ParseSliceHead(std::string_view line, size_t* rest);
// Whether the line carries a "bind_id" at or after `rest`. Pure.
bool SliceHasFlow(std::string_view line, size_t rest);

// "12.345" (microseconds, at most three decimals, optional '-') -> 12345 ns; nullopt when not
// such a number. Pure.
std::optional<int64_t> MicrosTextToNs(std::string_view text);
// The inverse, with exactly three decimals, as truffld-merge writes "ts" and "dur". Pure.
std::string NsToMicrosText(int64_t ns);

// The time origin (otherData.time_origin_ns) of the merge trace whose first line is `head`;
// an error when `head` is not the head of truffld-merge's trace.json or the trace is already
// annotated. Pure.
Result<int64_t> TraceTimeOrigin(std::string_view head);

struct AnnotateStats {
  int64_t time_origin_ns = 0;
  uint64_t events = 0;            // merge trace lines copied
  uint64_t steps_annotated = 0;   // step slices given verdicts
  uint64_t flows = 0;             // markers linked to their operator slice
  uint64_t markers_unlinked = 0;  // markers whose operator slice was not found
  uint64_t markers_replayed = 0;  // markers of CUDA-graph replays (no operator slice to point at)
  uint64_t markers_outside = 0;   // markers of time no operator covers (outside_time.h)
  bool input_error = false;       // the failure AnnotateTrace returned was reading in_path
};

// Writes `in_path` (truffld-merge's trace.json) with `overlay` added to `out_path`. kParseError
// naming in_path when it is not a complete merge trace (cut short, a line too long to copy);
// kIoError on a read or write failure; stats->input_error says which side failed.
Status AnnotateTrace(const std::string& in_path, const TraceOverlay& overlay, const std::string& out_path,
                     AnnotateStats* stats);

}  // namespace truffld::diagnose
