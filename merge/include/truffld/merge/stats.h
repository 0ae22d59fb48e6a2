// The merge's one stats table: every counter it reports, declared once with its name (as it
// appears in summary.json), severity and description.
//
// Two tables, as X-macros so that each use is generated from the same rows:
//   TRUFFLD_MERGE_COUNTERS: the per-file and total "counters" object of summary.json, in
//     output order. Generated into MergeCounters' fields, MergeCounters::Add, the summary
//     writer, --strict (kProblem rows) and the schema check (stats_table_test checks
//     schemas/summary.schema.json's $defs.counters against these rows, descriptions included).
//   TRUFFLD_INGEST_PROBLEMS: the importers' problem table (summary.json "ingest", and the kind
//     of each message in "issues"), keyed by the Problem enum. Rows counted as malformed lines
//     or negative durations feed those counters.
// Unattributed device work is counted per Unattributed reason (core/device_links.h).
// Thread-safety: constants and pure functions.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace truffld::merge {

enum class Severity : uint8_t {
  kInfo,     // what was read and built
  kNotice,   // normal, but worth knowing (adoptions, nested calls, warm-up work)
  kProblem,  // something in the input could not be used as it stands: --strict fails on it
};
const char* SeverityName(Severity s) noexcept;  // "info", "notice", "problem"

// X(name, type, severity, description). Type Count is an integer; `events_read` (KindCounts) and
// `unattributed_reasons` (ReasonCounts) are objects: counts per event kind, per reason.
#define TRUFFLD_MERGE_COUNTERS(X)                                                                         \
  X(events_read, KindCounts, kInfo, "Events per kind (NVTX_PUSH, RUNTIME, KERNEL, ...).")                             \
  X(malformed_lines, Count, kProblem,                                                                            \
    "Input records that could not be read (bad JSON, unknown type, missing or mistyped field, invalid "   \
    "UTF-8 repaired, truncated last line).")                                                              \
  X(unmatched_pops, Count, kProblem, "Range ends (NVTX_POP, NVTX_END) with no open range; ignored.")             \
  X(unclosed_ranges, Count, kProblem, "Ranges never closed; closed at the file's last timestamp.")               \
  X(zero_length_ranges, Count, kInfo, "Ranges that end when they start (kept).")                                 \
  X(negative_durations, Count, kProblem, "Records ending before they start; clamped to zero length.")            \
  X(duplicate_correlations, Count, kProblem,                                                                     \
    "API calls sharing a correlation id without one running inside the other.")                           \
  X(nested_api_calls, Count, kNotice,                                                                            \
    "Driver calls made inside a runtime call with that call's correlation id (normal with CUPTI); device " \
    "work binds to the outer call.")                                                                      \
  X(kernels_read, Count, kInfo, "Kernel records read.")                                                          \
  X(memcpys_read, Count, kInfo, "Memory copy records read.")                                                     \
  X(memsets_read, Count, kInfo, "Memset records read.")                                                          \
  X(device_ops_read, Count, kInfo, "Kernels, copies and memsets read.")                                          \
  X(device_ops_linked_unique, Count, kInfo, "Device ops placed in a tree (each counted once).")                  \
  X(device_ops_unattributed, Count, kNotice, "Device ops in no tree; the sum of unattributed_reasons.")           \
  X(kernels_linked_unique, Count, kInfo, "Kernels placed in a tree (each counted once).")                        \
  X(kernels_unattributed, Count, kNotice, "Kernels in no tree.")                                                 \
  X(unattributed_reasons, ReasonCounts, kNotice,                                                                        \
    "no_launch_api: no API call in the file has its correlation id; launch_outside_step: its launch lies " \
    "in no step; starts_before_launch: it starts before every matching call.")                            \
  X(api_calls_outside_step, Count, kNotice, "API calls in no step (their device work is unattributed too).")    \
  X(adopted_ranges, Count, kNotice, "Ranges on another thread of a step's process, inside the step, attached to it.") \
  X(adopted_api_calls, Count, kNotice, "API calls on another thread of a step's process, inside the step, attached to it.") \
  X(graph_ops_attributed, Count, kInfo,                                                                          \
    "CUDA-graph device ops whose capturing operator was found through GRAPH_NODE records (trees.jsonl: "  \
    "captured_in).")                                                                                      \
  X(capture_ranges_outside_steps, Count, kNotice,                                                                \
    "Host ranges that captured CUDA-graph nodes outside every step (engines capture during warm-up); "    \
    "they get a node outside all trees so captured_in can name them.")                                    \
  X(injector_dropped, Count, kNotice, "Records the injector reported dropped (STATS).")                          \
  X(injector_names_truncated, Count, kNotice,                                                            \
    "Names the injector cut at its name limit (STATS.names_truncated): request ids beyond the cut of such " \
    "a step name are lost.")                                                                              \
  X(injector_api_unpaired, Count, kNotice,                                                               \
    "CUDA API calls the injector left out because it saw only one of their two callbacks "              \
    "(STATS.api_unpaired): it started during the call, or the per-operator calls' callbacks switched "   \
    "at a device-window edge while another thread was inside one.")                                     \
  X(step_names_cut, Count, kNotice,                                                                      \
    "Steps whose name holds their request list only in part (a request_ids: list no ']' closes, or a name " \
    "cut after it; with a user request regex, a name longer than the 4 KiB it reads): their trees name "   \
    "only the requests read.")                                                                            \
  X(steps_without_device_detail, Count, kInfo,                                                           \
    "Steps outside their process's sampled device windows (trees marked device_detail: false): no device " \
    "activity was recorded for them, by design.")                                                        \
  X(steps, Count, kInfo, "Step trees' roots: steps found (implicit ones included).")                             \
  X(implicit_steps, Count, kInfo, "Whole-process steps made for files without step ranges.")                     \
  X(repeated_call_steps, Count, kInfo,                                                                   \
    "Steps made from a repeated top-level call (a module forward or user annotation) in processes "     \
    "without step ranges; each is named by its range.")                                                 \
  X(ranges_outside_steps, Count, kInfo,                                                                  \
    "Host ranges in no step (before the first step, between steps, after the last): in no tree.")      \
  X(trees, Count, kInfo, "Trees written: steps x requests x 2 views.")

// What an ingest problem adds to besides its own count.
enum class CountsAs : uint8_t { kNothing, kMalformedLine, kNegativeDuration };

// X(id, key, severity, counts_as, description): every key of summary.json's "ingest" table but
// the per-kind record counts (EventKindName), in no particular order (the table lists keys in the
// order first met).
#define TRUFFLD_INGEST_PROBLEMS(X)                                                                     \
  X(kMalformedJson, "malformed_json", kProblem, kMalformedLine, "A line that is not one JSON object.") \
  X(kInvalidUtf8, "invalid_utf8", kProblem, kMalformedLine,                                           \
    "A line holding invalid UTF-8 (bad bytes read as U+FFFD, the record kept).")                      \
  X(kUnknownType, "unknown_type", kProblem, kMalformedLine, "A record of an unknown type (skipped).")   \
  X(kMissingField, "missing_field", kProblem, kMalformedLine, "A record without a field its type needs.") \
  X(kBadField, "bad_field", kProblem, kMalformedLine, "A field of the wrong type or value.")           \
  X(kNegativeDuration, "negative_duration", kProblem, kNegativeDuration,                              \
    "A record ending before it starts (clamped to zero length).")                                     \
  X(kBadClockSync, "bad_clock_sync", kNotice, kNothing, "META/CLOCK clock_sync that is not {realtime_ns, monotonic_ns}.") \
  X(kDuplicateMeta, "duplicate_meta", kNotice, kNothing, "A second META record (ignored).")            \
  X(kUnknownSchema, "unknown_schema", kNotice, kNothing, "META names another schema (read as truffld.events/1).") \
  X(kReadWarning, "read_warning", kProblem, kMalformedLine, "A compressed stream cut short.")          \
  X(kTruncatedLastLine, "truncated_last_line", kProblem, kMalformedLine,                              \
    "The last line has no newline (a writer killed mid-record).")                                     \
  X(kLongLinesSkipped, "long_lines_skipped", kProblem, kMalformedLine, "Lines over the length limit (skipped).") \
  X(kReadError, "read_error", kProblem, kNothing, "The file could not be read to its end (data before kept).") \
  X(kEmptyFile, "empty_file", kNotice, kNothing, "A file holding no records.")                          \
  X(kMissingMeta, "missing_meta", kNotice, kNothing, "A raw dump without META (rank unknown, clock taken as realtime).") \
  X(kFoldRetried, "fold_retried", kInfo, kNothing,                                                    \
    "A raw dump read a second time without folding pops (a thread's records were out of time order).") \
  X(kInjectorDropped, "injector_dropped", kNotice, kNothing, "Records the injector reported dropped (STATS).") \
  X(kCorrelationIdsDropped, "correlation_ids_dropped", kProblem, kNothing,                            \
    "Correlation ids past 2^31 - 1 distinct wide ids in one file (kept without one).")                \
  X(kUnmatchedPop, "unmatched_pop", kProblem, kNothing, "A range end with no open range.")            \
  X(kUnclosedRange, "unclosed_range", kProblem, kNothing, "A range never closed.")                     \
  X(kDuplicateRangeId, "duplicate_range_id", kProblem, kNothing, "NVTX_START reusing an open id.")    \
  X(kDuplicateCorrelation, "duplicate_correlation", kProblem, kNothing, "API calls sharing a correlation id.") \
  X(kDeviceNoLaunchApi, "device_no_launch_api", kProblem, kNothing, "Device work no API call launched.") \
  X(kDeviceStartsBeforeLaunch, "device_starts_before_launch", kProblem, kNothing,                     \
    "Device work starting before every call with its correlation id.")                                \
  X(kKinetoNotAnObject, "kineto.not_an_object", kProblem, kMalformedLine, "A traceEvents element that is not an object.") \
  X(kKinetoBadField, "kineto.bad_field", kProblem, kMalformedLine, "An essential field of the wrong JSON type.") \
  X(kKinetoMissingField, "kineto.missing_field", kProblem, kMalformedLine, "An event without a field it needs.") \
  X(kKinetoBadNumber, "kineto.bad_number", kProblem, kMalformedLine, "ts/dur that do not convert to int64 ns.") \
  X(kKinetoNegativeDuration, "kineto.negative_duration", kProblem, kNegativeDuration, "dur < 0.")      \
  X(kKinetoMissingCorrelation, "kineto.missing_correlation", kProblem, kMalformedLine,                \
    "An API or device event without args.correlation (kept, cannot be linked).")                      \
  X(kKinetoIgnoredField, "kineto.ignored_field", kNotice, kNothing, "An optional arg of the wrong type (ignored).") \
  X(kKinetoTruncated, "kineto.truncated", kProblem, kMalformedLine, "A document cut short (complete events kept).") \
  X(kKinetoMalformedJson, "kineto.malformed_json", kProblem, kMalformedLine, "Invalid JSON in the document.") \
  X(kKinetoTrailingBytes, "kineto.trailing_bytes", kNotice, kNothing, "Bytes after the JSON document (ignored).") \
  X(kKinetoTraceEvents, "kineto.trace_events", kInfo, kNothing, "traceEvents elements read.")          \
  X(kKinetoClampedEnd, "kineto.clamped_end", kInfo, kNothing,                                         \
    "Ranges ending at most 1 us after their parent (whole-microsecond times), ended with it.")        \
  X(kKinetoSkippedMetadata, "kineto.skipped.metadata", kInfo, kNothing, "Metadata events (ph M).")     \
  X(kKinetoSkippedFlowAc2g, "kineto.skipped.flow.ac2g", kInfo, kNothing, "Flow events, cat ac2g.")    \
  X(kKinetoSkippedFlowAsync, "kineto.skipped.flow.async_cpu_to_gpu", kInfo, kNothing, "Flow events, cat async_cpu_to_gpu.") \
  X(kKinetoSkippedFlowFwdbwd, "kineto.skipped.flow.fwdbwd", kInfo, kNothing, "Flow events, cat fwdbwd.") \
  X(kKinetoSkippedFlowOther, "kineto.skipped.flow.other", kInfo, kNothing, "Other flow events.")       \
  X(kKinetoSkippedInstantCpu, "kineto.skipped.instant.cpu_instant_event", kInfo, kNothing, "CPU instant events.") \
  X(kKinetoSkippedInstantOther, "kineto.skipped.instant.other", kInfo, kNothing, "Other instant events.") \
  X(kKinetoSkippedCounter, "kineto.skipped.counter", kInfo, kNothing, "Counter events (ph C).")        \
  X(kKinetoSkippedTrace, "kineto.skipped.complete.Trace", kInfo, kNothing, "Complete events, cat Trace.") \
  X(kKinetoSkippedOverhead, "kineto.skipped.complete.overhead", kInfo, kNothing, "Complete events, cat overhead.") \
  X(kKinetoSkippedComplete, "kineto.skipped.complete.other", kInfo, kNothing, "Complete events of other categories.") \
  X(kKinetoSkippedNoPh, "kineto.skipped.no_ph", kInfo, kNothing, "Events without ph.")                  \
  X(kKinetoSkippedOtherPh, "kineto.skipped.other_ph", kInfo, kNothing, "Events of other phases.")      \
  X(kNsysMissingField, "nsys.missing_field", kProblem, kMalformedLine, "A row without a column it needs (skipped).") \
  X(kNsysNegativeDuration, "nsys.negative_duration", kProblem, kNegativeDuration, "end < start (skipped).") \
  X(kNsysBadTime, "nsys.bad_time", kProblem, kMalformedLine, "Session start + event time overflows int64 ns.") \
  X(kNsysRelativeTimes, "nsys.relative_times", kNotice, kNothing, "No session start: times stay relative.") \
  X(kNsysSkippedNestedApiAlias, "nsys.skipped.nested_api_alias", kInfo, kNothing,                      \
    "Driver rows repeating a runtime call's correlation id inside it.")                                \
  X(kNsysSkippedNvtxCategory, "nsys.skipped.nvtx.category", kInfo, kNothing, "NVTX category names.")  \
  X(kNsysSkippedNvtxDomainCreate, "nsys.skipped.nvtx.domain_create", kInfo, kNothing, "NVTX domain creations.") \
  X(kNsysSkippedNvtxDomainDestroy, "nsys.skipped.nvtx.domain_destroy", kInfo, kNothing, "NVTX domain destructions.") \
  X(kNsysSkippedNvtxThreadName, "nsys.skipped.nvtx.thread_name", kInfo, kNothing, "NVTX thread names.") \
  X(kNsysSkippedNvtxOther, "nsys.skipped.nvtx.other", kInfo, kNothing, "Other NVTX rows.")

enum class Problem : uint8_t {
#define TRUFFLD_PROBLEM_ENUM(id, key, severity, counts_as, description) id,
  TRUFFLD_INGEST_PROBLEMS(TRUFFLD_PROBLEM_ENUM)
#undef TRUFFLD_PROBLEM_ENUM
};

// Why a device op is in no tree: X(id, name, severity).
#define TRUFFLD_UNATTRIBUTED_REASONS(X)          \
  X(kNoLaunchApi, "no_launch_api", kProblem)      \
  X(kStartsBeforeLaunch, "starts_before_launch", kProblem) \
  X(kLaunchOutsideStep, "launch_outside_step", kNotice)

enum class Unattributed : uint8_t {
#define TRUFFLD_REASON_ENUM(id, name, severity) id,
  TRUFFLD_UNATTRIBUTED_REASONS(TRUFFLD_REASON_ENUM)
#undef TRUFFLD_REASON_ENUM
};
const char* UnattributedName(Unattributed u) noexcept;  // "no_launch_api", ...
Severity SeverityOf(Unattributed u) noexcept;

// Counts per key (a small enum) in the order the keys were first met: summary.json lists them
// so. Plain value; not thread-safe.
template <class Key>
struct FirstSeenCounts {
  std::vector<std::pair<Key, uint64_t>> items;
  void Add(Key k, uint64_t n = 1) {
    for (auto& [key, v] : items)
      if (key == k) { v += n; return; }
    items.emplace_back(k, n);
  }
  void Add(const FirstSeenCounts& o) {
    for (const auto& [k, n] : o.items) Add(k, n);
  }
  uint64_t Get(Key k) const {
    for (const auto& [key, v] : items)
      if (key == k) return v;
    return 0;
  }
  bool empty() const { return items.empty(); }
};

struct ProblemInfo {
  const char* key;  // its summary.json name
  Severity severity;
  CountsAs counts_as;
  const char* description;
};
const ProblemInfo& InfoOf(Problem p) noexcept;
inline const char* ProblemKey(Problem p) noexcept { return InfoOf(p).key; }

}  // namespace truffld::merge
