// Merge(): imported TraceFiles in, per-request call-chain trees and a summary out.
//
// The algorithm runs as passes over plain data (merge/core, one header each, rules in
// merge/README.md): per file, range reconstruction, classification, nesting, API attribution,
// the correlation index, device linking, CUDA-graph capture owners and tree building
// (core/file_trees.h runs them); then the files' trees are concatenated, steps numbered per
// rank and the summary filled. Each (step, view) tree is stored once; per-request trees are
// views (a node belongs to request q unless it, or an ancestor, names a request subset without
// q). Input events are never changed: nodes carry their own merged-axis times.
// Memory: nodes are small index records; names, device fields etc. are read through the owning
// file's Event and StringPool (accessors below), so trees do not copy input strings.
// Thread-safety: Merge is reentrant; a MergeResult is read-only after Merge returns.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "truffld/merge/classify.h"
#include "truffld/merge/end_state.h"
#include "truffld/merge/event.h"
#include "truffld/status.h"
#include "truffld/verdict.h"  // View, ViewName: the two views of a step, shared with diagnose

namespace truffld::merge {

struct MergeOptions {
  Rules rules = Rules::Defaults();  // classifier + request regex (Rules::SetRequestRegex)
  bool strict = false;              // any counted problem in the merge itself becomes an error
  int threads = 2;                  // files are built in parallel, one per thread
  bool implicit_steps = true;       // a file (process) with no step range gets one spanning it
  // --step-window K:N (a time window of a long run, for sharding): keep each rank's steps
  // K*N .. K*N+N-1 (rank-local step index, time order) and step K*N-1 before them (one step of
  // overlap: the first kept step's gap to its predecessor stays known). Step indices stay those
  // of the whole dumps. window_steps 0: every step.
  uint32_t window_index = 0, window_steps = 0;
};

// Whether step `index` (rank-local) is in the step window of `o` (see MergeOptions).
inline bool InStepWindow(uint32_t index, const MergeOptions& o) {
  if (o.window_steps == 0) return true;
  const uint64_t first = uint64_t(o.window_index) * o.window_steps;
  return uint64_t(index) + 1 >= first && uint64_t(index) < first + o.window_steps;
}

constexpr uint32_t kNoNode = UINT32_MAX;
constexpr uint32_t kNoEvent = UINT32_MAX;
constexpr uint32_t kAllRequests = UINT32_MAX;  // request-set index meaning "inherit / all"

// One tree node: 40 bytes, about one per input event. Its times are its own (ns, merged axis);
// its name is its source event's, or for an implicit step (no event) the file's
// MergeResult::implicit_step_names entry. The family string lives in the StringPool of
// MergeResult::files[file]; device fields in the source event's extras. The three fields few
// nodes have (a stricter request subset, an anchor, a joined payload) live in side tables,
// flagged here so that the many nodes without them never look.
struct Node {
  TimeNs start = 0;                   // merged axis
  TimeNs end = 0;
  uint32_t event = kNoEvent;          // opening/complete event; kNoEvent for an implicit step
  StrId family = kNoStr;
  uint32_t first_child = kNoNode;     // children are a sibling list, in start order
  uint32_t next_sibling = kNoNode;
  uint32_t file = 0;                  // index into MergeResult::files (Merge fails beyond kMaxFiles)
  Layer layer = Layer::kOther;
  bool has_requests : 1 = false;      // an entry in node_requests
  bool has_anchor : 1 = false;        // an entry in node_anchors
  bool has_payload : 1 = false;       // an entry in node_payloads
  static constexpr size_t kMaxFiles = size_t{1} << 22;
};
static_assert(sizeof(Node) == 40, "Node is sized for the merge's memory budget");

// (node index, value) pairs of a side table, ascending by node.
using NodeSideTable = std::vector<std::pair<uint32_t, uint32_t>>;
// The value stored for node i, or `none`.
uint32_t LookUpSide(const NodeSideTable& t, uint32_t i, uint32_t none);

// One (rank, step, view) tree; written once per request in `requests`.
struct Tree {
  uint32_t root = kNoNode;
  uint32_t file = 0;                  // file holding the step range
  int64_t process_id = kNone;
  std::optional<int64_t> rank;
  uint32_t step_index = 0;            // 0-based ordinal among the rank's steps in time order
  uint32_t requests = 0;              // index into request_sets; {"*"} when the step names none
  View view = View::kVertical;
  bool implicit_step = false;
  // False when the file recorded device activity in sampled windows only and this step is not
  // wholly inside one: the step has no device detail, by design (core/step_detail.h).
  // trees.jsonl writes "device_detail": false then, nothing otherwise.
  bool device_detail = true;
};

// Counters kept per file and in total: one field per row of the stats table
// (TRUFFLD_MERGE_COUNTERS in truffld/merge/stats.h, which gives each its summary.json name,
// severity and description).
using Count = uint64_t;
using KindCounts = FirstSeenCounts<EventKind>;
using ReasonCounts = FirstSeenCounts<Unattributed>;
struct MergeCounters {
#define TRUFFLD_COUNTER_FIELD(name, type, severity, description) type name{};
  TRUFFLD_MERGE_COUNTERS(TRUFFLD_COUNTER_FIELD)
#undef TRUFFLD_COUNTER_FIELD
  void Add(const MergeCounters& o);
};

// The line-level input problems an importer counted (malformed_lines), and its clamped negative
// durations, from its problem table. Pure.
uint64_t MalformedLines(const IngestStats& s);
uint64_t NegativeDurations(const IngestStats& s);

// A file clock -> merged axis map: a constant offset plus a linear drift term (monotonic_raw
// runs at the oscillator's rate, realtime is NTP-disciplined, so their difference drifts by up
// to tens of ppm: 50 ppm is 180 ms over an hour). Monotone for any plausible drift.
// Thread-safety: plain value.
struct ClockMap {
  TimeNs offset = 0;
  double drift = 0;      // dimensionless (ppm * 1e-6)
  TimeNs ref = 0;        // file time at which `offset` holds exactly
  // Wrapping arithmetic: input times are untrusted and may be any int64 (no overflow UB).
  TimeNs Map(TimeNs t) const {
    uint64_t out = static_cast<uint64_t>(t) + static_cast<uint64_t>(offset);
    if (drift != 0) {
      double d = drift * (static_cast<double>(t) - static_cast<double>(ref));
      d = std::fmax(-9.0e18, std::fmin(9.0e18, d));
      out += static_cast<uint64_t>(static_cast<TimeNs>(d));
    }
    return static_cast<TimeNs>(out);
  }
};

// Fits a ClockMap from (realtime_ns, monotonic_ns) pairs: Theil-Sen slope (median of pairwise
// slopes; robust to a few bad pairs) and median intercept. With fewer than 3 pairs spanning at
// least 10 s, or an implausible drift (over 1000 ppm), the drift stays 0 and the offset is the
// median difference. `method` names what was used.
ClockMap FitClockMap(const std::vector<std::pair<TimeNs, TimeNs>>& pairs, std::string* method);

struct FileSummary {
  std::string path, format, host;
  int64_t process_id = kNone;
  std::optional<int64_t> rank;
  std::string clock;                  // the file's own clock name
  // File time t maps to t + clock_offset_ns + clock_drift_ppm * 1e-6 * (t - clock_ref_ns) on the
  // merged axis (see ClockMap).
  TimeNs clock_offset_ns = 0;
  double clock_drift_ppm = 0;
  TimeNs clock_ref_ns = 0;
  std::string clock_offset_method;    // "native_realtime", "clock_sync_median", "clock_sync_linear", "none"
  std::string injector_stats_json;    // STATS record verbatim
  MergeCounters counters;
  std::vector<IngestIssue> issues;    // first messages per kind, with file:line
  FirstSeenCounts<IngestStats::Key> ingest_counts;  // the importer's table
  FileEndState end_state;             // where the process stood when its dump stopped
};

struct RankSummary {
  std::optional<int64_t> rank;
  uint64_t steps = 0, implicit_steps = 0, trees = 0;  // kept (inside --step-window)
  uint64_t steps_in_dumps = 0;                          // every step, the window's or not
};

struct MergeSummary {
  std::string axis_clock;             // clock of the merged axis ("realtime" normally)
  std::vector<FileSummary> files;
  MergeCounters total;
  std::vector<RankSummary> ranks;
};

// Asks the CPU to load the cache line holding *p (a hint: no effect on results). Inline
// assembly on x86-64, because GCC 12 drops __builtin_prefetch whose address it computes from
// loads inside a loop.
inline void PrefetchLine(const void* p) {
#if defined(__x86_64__) && defined(__GNUC__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p);
#endif
}

struct MergeResult {
  std::vector<TraceFile> files;       // inputs, owned (strings and device fields live here)
  std::vector<Node> nodes;
  std::vector<Tree> trees;            // sorted by (rank, step_index, view)
  std::vector<std::vector<std::string>> request_sets;
  MergeSummary summary;

  std::vector<StrId> implicit_step_names;  // per file: the name of its implicit steps (kNoStr: none)
  // Request subsets named below steps (index into request_sets: the node and its subtree belong
  // to those requests only), anchors (comm nodes: the enclosing vertical range; CUDA-graph
  // device nodes: the range open when the node was captured) and payloads joined from a
  // range's closing event (core/host_ranges.h). Flagged in the Node.
  NodeSideTable node_requests, node_anchors, node_payloads;

  const Node& node(uint32_t i) const { return nodes[i]; }
  // Name and times (ns, merged axis) of a node. Thread-safe for concurrent readers.
  TimeNs Start(const Node& n) const { return n.start; }
  TimeNs End(const Node& n) const { return n.end; }
  StrId NameId(const Node& n) const {
    if (n.event != kNoEvent) return files[n.file].events[n.event].name;
    return n.file < implicit_step_names.size() ? implicit_step_names[n.file] : kNoStr;
  }
  std::string_view Name(const Node& n) const { return files[n.file].strings.Get(NameId(n)); }
  std::string_view Family(const Node& n) const { return files[n.file].strings.Get(n.family); }
  // The node's request set (kAllRequests: its parent's), anchor (kNoNode: none) and payload
  // (its event's, unless a closing payload was joined in); `n` must be an element of `nodes`.
  // Constant time for the nodes without one (a flag), a binary search for the others.
  uint32_t Requests(const Node& n) const {
    return n.has_requests ? LookUpSide(node_requests, uint32_t(&n - nodes.data()), kAllRequests) : kAllRequests;
  }
  uint32_t Anchor(const Node& n) const {
    return n.has_anchor ? LookUpSide(node_anchors, uint32_t(&n - nodes.data()), kNoNode) : kNoNode;
  }
  StrId Payload(const Node& n) const;
  // The node's source event, or nullptr for an implicit step.
  const Event* EventOf(const Node& n) const {
    return n.event == kNoEvent ? nullptr : &files[n.file].events[n.event];
  }
  // Hints the cache to load node i's event (no effect for i out of range or without one).
  // Writers walk nodes in tree order while events lie in file order: each event read is a
  // likely cache miss, so they prefetch the event of the node a few steps ahead.
  void PrefetchEvent(uint32_t i) const {
    if (i >= nodes.size()) return;
    const Node& n = nodes[i];
    if (n.event == kNoEvent) return;
    const Event* e = files[n.file].events.data() + n.event;
    PrefetchLine(e);  // an Event spans two cache lines at most
    PrefetchLine(reinterpret_cast<const char*>(e) + sizeof(Event) - 1);
  }
  // Host thread of a range or API node (its event's); kNone for implicit steps and device or
  // sync nodes.
  int64_t ThreadOf(const Node& n) const {
    if (n.event == kNoEvent || IsDeviceLayer(n.layer) || n.layer == Layer::kSync) return kNone;
    return files[n.file].ThreadIdOf(files[n.file].events[n.event]);
  }
  std::string_view Str(uint32_t file, StrId id) const { return files[file].strings.Get(id); }
  // Calls f(child_index) for each child of node i in order.
  template <typename F>
  void ForEachChild(uint32_t i, F&& f) const {
    for (uint32_t c = nodes[i].first_child; c != kNoNode; c = nodes[c].next_sibling) f(c);
  }
  // Whether node i belongs to request q given the inherited request set (set index).
  bool InRequestSet(uint32_t set, std::string_view q) const;
};

// Merges imported files. Fails only on an internal error, or (strict) on a counted problem.
Result<MergeResult> Merge(std::vector<TraceFile> files, const MergeOptions& options);


}  // namespace truffld::merge
