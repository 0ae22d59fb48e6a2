// The merge stage's in-memory event model: one plain record per input event.
//
// Every importer (truffld raw JSONL, the paper's NVTX_MARKER dialect, Kineto Chrome traces,
// Nsight Systems SQLite) turns its input into a TraceFile: the file's identity (FileMeta), its
// interned strings, and a vector of Event. Everything downstream (sorting, range reconstruction,
// correlation, tree building, output) reads only this model, never an input format.
// Times are int64 ns on the file's own clock (FileMeta::clock); cross-file alignment happens
// later by adding the per-file offset. Events are fixed-size (no owning pointers) so a
// 10 M-event merge stays within the memory budget.
// Thread-safety: plain data; a TraceFile is built by one thread and then read-only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "truffld/merge/index_table.h"
#include "truffld/merge/stats.h"
#include "truffld/merge/string_pool.h"
#include "truffld/time.h"
#include "truffld/wire.h"

namespace truffld::merge {

enum class EventKind : uint8_t {
  kNvtxPush,   // opens a push/pop range on (process, thread)
  kNvtxPop,    // closes the innermost open push range on (process, thread)
  kNvtxStart,  // opens start/end range `range_id` (may close on another thread)
  kNvtxEnd,    // closes start/end range `range_id`
  kNvtxMark,   // instant
  kRange,      // a complete host range with start and end already known (Kineto 'X', nsys NVTX)
  kRuntime,    // CUDA runtime API call [start, end] with correlation_id
  kDriver,     // CUDA driver API call [start, end] with correlation_id
  kKernel,     // device activity [gpu start, gpu end]
  kMemcpy,
  kMemset,
  kSync,       // synchronisation activity [start, end]
  kGraphNode,  // CUDA graph node created/cloned by API call `correlation_id` at `start`
  // A push/pop range whose NVTX_POP the raw importer folded into the NVTX_PUSH while reading
  // (RawLineParser::set_fold_push_pop): `end` is the pop's time. Range reconstruction treats it
  // as the push and its matched pop; it is counted as one NVTX_PUSH and one NVTX_POP read.
  kNvtxRange,
};
const char* EventKindName(EventKind k) noexcept;  // contract spelling: "NVTX_PUSH", "KERNEL", ...
inline bool IsDeviceKind(EventKind k) {
  return k == EventKind::kKernel || k == EventKind::kMemcpy || k == EventKind::kMemset;
}
inline bool IsApiKind(EventKind k) { return k == EventKind::kRuntime || k == EventKind::kDriver; }

constexpr int64_t kNone = -1;  // "absent" for optional integer fields

// Hash of an (int64, int64) key such as (process, thread) or (pid, tid): unsigned arithmetic,
// since ids come from untrusted input and may be any int64 (no overflow UB).
struct Int64PairHash {
  size_t operator()(const std::pair<int64_t, int64_t>& p) const noexcept {
    const uint64_t a = static_cast<uint64_t>(p.first), b = static_cast<uint64_t>(p.second);
    return std::hash<uint64_t>()(a * 1000003u ^ b);
  }
};

constexpr uint32_t kNoExtra = UINT32_MAX;

// A host thread as the input names it. Device activity has thread_id kNone (and the process
// whose API call launched it, when known).
struct HostThread {
  int64_t process_id = kNone;
  int64_t thread_id = kNone;
  auto operator<=>(const HostThread&) const = default;
};

// The distinct (process, thread) pairs of one file, so that an Event holds a 4-byte index instead
// of two 8-byte ids. Index 0 is (kNone, kNone). After Sort() (importers call it last) index
// order is (process, thread) order, so code that groups or orders events by thread compares
// indices. Thread-safety: not thread-safe; one per TraceFile, filled by the importer's thread.
class ThreadTable {
 public:
  // `capacity`: the most pairs the table holds, (kNone, kNone) included; Event::kMaxThreads
  // unless a test wants to reach it.
  explicit ThreadTable(uint32_t capacity = kDefaultCapacity) : list_{HostThread{}}, capacity_(capacity) {}
  static constexpr uint32_t kDefaultCapacity = uint32_t{1} << 24;  // = Event::kMaxThreads
  // The index of (process_id, thread_id), appended if new (the table is then unsorted).
  // Records of one thread come in runs, and a thread's API calls interleave with the device
  // activity they launch (thread_id kNone): the last two answers are checked before the table.
  // A pair beyond the capacity gets index 0 and is counted (overflowed()): the importer then
  // fails the file, whose events no longer tell those threads apart.
  uint32_t Index(int64_t process_id, int64_t thread_id) {
    const HostThread t{process_id, thread_id};
    if (list_[last_] == t) return last_;
    std::swap(last_, before_last_);
    if (list_[last_] == t) return last_;
    return last_ = Lookup(t);
  }
  const HostThread& operator[](uint32_t i) const { return list_[i]; }
  size_t size() const { return list_.size(); }
  uint64_t overflowed() const { return overflowed_; }  // lookups of pairs beyond the capacity
  uint32_t capacity() const { return capacity_; }
  bool sorted() const { return sorted_; }
  // Renumbers the table into (process, thread) order. Returns the map old index -> new index
  // (empty when nothing moved); the caller applies it to its events.
  std::vector<uint32_t> Sort();

 private:
  uint32_t Lookup(const HostThread& t);
  std::vector<HostThread> list_;
  IndexTable index_;  // into list_
  uint32_t last_ = 0, before_last_ = 0;  // the last two answers of Index
  uint32_t capacity_;
  uint64_t overflowed_ = 0;
  bool sorted_ = true;
};

// One input record, 32 bytes: the fields most records have. Fields only some records have
// (NVTX domains and payloads, bytes and copy kind of copies and memsets, error return codes,
// kernel geometry, stream and device, CUPTI callback ids, Kineto categories, CUDA-graph ids,
// NVTX start/end ids) live in TraceFile::extras, reached through TraceFile::Extra; equal
// records are shared (a dump has a handful of domains), so at millions of events per file this
// takes the events from 152 bytes each to 32, and as many fewer fresh pages for the merge to
// touch. The correlation id is kept in 32 bits (TraceFile::Correlation: CUPTI's are unsigned
// 32-bit counters; others go to a side table) and the source line beside the events
// (TraceFile::lines), not in them. The thread index and the kind share one word: a file holds at most kMaxThreads
// distinct (process, thread) pairs (ThreadTable; importing fails beyond).
// Times are ns on the file's clock as imported. Merge() then changes TraceFile::events in
// place: closing events (NVTX_POP, NVTX_END) are removed once the ranges are built (the others
// keep their order), times are mapped onto the merged axis, and the end of an event that opens
// a range (push, start) becomes the range's end; tree nodes read their times there (Node).
struct Event {
  static constexpr uint32_t kMaxThreads = uint32_t{1} << 24;  // thread indices per file
  TimeNs start = 0;  // unified time tau: NVTX timestamp, API start, device gpu_start
  TimeNs end = 0;    // equal to start for instants (push, pop, mark, graph node), the pop's time for a
                     // folded kNvtxRange; Merge changes it (above)
  uint32_t thread : 24 = 0;       // index into TraceFile::threads (TraceFile::SetThread)
  EventKind kind : 8 = EventKind::kNvtxMark;
  StrId name = kNoStr;            // range/API/kernel name
  uint32_t extra = kNoExtra;      // index into TraceFile::extras, or kNoExtra
  // The correlation id (API calls, device activity, graph nodes), encoded: read and set it
  // through TraceFile::Correlation / SetCorrelation. Ids in [0, 2^31) are stored as they are,
  // kNoCorrelation stands for kNone, and any other id is kWideCorrelation | its index in
  // TraceFile::wide_correlations.
  uint32_t correlation = kNoCorrelation;
  static constexpr uint32_t kNoCorrelation = UINT32_MAX;
  static constexpr uint32_t kWideCorrelation = uint32_t{1} << 31;
};
static_assert(sizeof(Event) == 32, "Event is sized for the merge's memory budget");
static_assert(ThreadTable::kDefaultCapacity == Event::kMaxThreads, "every thread index fits Event::thread");

// The rarer fields of an Event (see Event::extra).
struct EventExtra {
  int64_t range_id = kNone;       // NVTX start/end id (or the NVTX_MARKER id)
  int64_t graph_id = kNone;
  int64_t graph_node_id = kNone;
  int64_t original_graph_node_id = kNone;  // GRAPH_NODE clones
  int64_t bytes = kNone;          // memcpy/memset (device and API)
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  StrId copy_kind = kNoStr;       // "HtoD", ...
  StrId payload = kNoStr;         // decoded NVTX payload, as compact JSON object text
  int32_t return_code = 0;        // API calls; 0 (success) when absent
  int32_t stream = -1;            // device activity, and API calls that name one
  int32_t cbid = -1;              // API calls: CUPTI callback id
  StrId category = kNoStr;        // Kineto 'cat' or NVTX category, as text (classification)
  StrId domain = kNoStr;          // NVTX domain
  int16_t device = -1;            // set through SetDevice (clamped to int16)
  int16_t spare = 0;              // always 0: the record has no padding (below)
  // Device ordinal: negative -> -1 (absent); beyond int16 (no real GPU index) -> INT16_MAX.
  void SetDevice(int64_t d) { device = d < 0 ? int16_t(-1) : d > INT16_MAX ? int16_t(INT16_MAX) : int16_t(d); }
  // True when every field holds its default: such an event needs no entry in TraceFile::extras.
  bool IsDefault() const {
    return range_id == kNone && graph_id == kNone && graph_node_id == kNone &&
           original_graph_node_id == kNone && bytes == kNone && !grid[0] && !grid[1] && !grid[2] &&
           !block[0] && !block[1] && !block[2] && copy_kind == kNoStr && payload == kNoStr &&
           return_code == 0 && stream == -1 && cbid == -1 && category == kNoStr && domain == kNoStr &&
           device == -1;
  }
  // Field by field, stopping at the first difference: cheaper than comparing all 96 bytes.
  bool operator==(const EventExtra&) const = default;
};
// No padding bytes: HashExtra reads the record as twelve words.
static_assert(sizeof(EventExtra) == 96 && std::has_unique_object_representations_v<EventExtra>,
              "EventExtra must stay free of padding: HashExtra reads its bytes");
inline constexpr EventExtra kDefaultExtra{};

// Line numbers are kept in 32 bits; a larger one (a dump of over 4 billion lines) saturates.
inline uint32_t LineNumber(uint64_t line) {
  return line > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(line);
}

// What the importer learned about the file as a whole.
struct FileMeta {
  std::string path;
  std::string format;               // "truffld", "truffld-marker", "kineto", "nsys"
  std::string host;
  int64_t process_id = kNone;       // META process (Kineto/nsys: the main one seen)
  std::optional<int64_t> rank;
  std::optional<int64_t> local_rank;
  std::optional<int64_t> world_size;
  ClockId clock = ClockId::kRealtime;
  bool has_meta = false;
  // Clock pairs (realtime_ns, monotonic_ns) from META.clock_sync and CLOCK records.
  std::vector<std::pair<TimeNs, TimeNs>> clock_sync;
  std::string stats_json;           // the injector's STATS record, verbatim (empty if none)
  // A raw dump's identity (DumpIdentity of its first 64 KiB: META line and content hash; empty
  // when it starts with no META), so that a stream ("-", a pipe), which cannot be probed before
  // it is read, is still found to repeat another input (DropRepeatedDumps).
  std::string identity;
  // Sampled device activity (the injector's TRUFFLD_DEVICE_WINDOWS other than "all"): when
  // device_sampled, kernels, copies and memsets were recorded only between DEVICE_WINDOW edges,
  // given as (window id, timestamp on the file's clock, which edge) in file order ("off": no
  // window at all).
  bool device_sampled = false;
  bool device_all = false;  // the config said "all" outright (window records are then strays)
  enum class WindowEdge : uint8_t { kUnknown, kStart, kEnd };
  struct DeviceWindowEdge {
    int64_t id = 0;
    TimeNs at = 0;
    WindowEdge edge = WindowEdge::kUnknown;
  };
  std::vector<DeviceWindowEdge> device_window_edges;
};

// One reported problem: where, what (its row of the stats table, truffld/merge/stats.h), and a
// message. Counted always; the message kept for the first few of its kind.
struct IngestIssue {
  std::string where;    // "file:line"
  Problem kind = Problem::kMalformedJson;
  std::string message;  // without the location
};

// Per-file importer counters (summary.json "ingest"): problems, and for the profiler formats
// the records kept per event kind, each listed in the order first met.
struct IngestStats {
  // A problem, or kKeptBase + an EventKind (records of that kind kept).
  struct Key {
    uint16_t id = 0;
    bool operator==(const Key&) const = default;
  };
  static constexpr uint16_t kKeptBase = 256;
  static Key Of(Problem p) { return {uint16_t(p)}; }
  static Key Of(EventKind k) { return {uint16_t(kKeptBase + uint16_t(k))}; }
  static const char* Name(Key k) noexcept;  // the summary.json key

  FirstSeenCounts<Key> counts;
  std::vector<IngestIssue> issues;  // the first kMaxIssuesKept of each kind
  static constexpr size_t kMaxIssuesKept = 20;
  void Add(Problem p, uint64_t n = 1) { counts.Add(Of(p), n); }
  void AddKept(EventKind k, uint64_t n) { counts.Add(Of(k), n); }
  uint64_t Get(Problem p) const { return counts.Get(Of(p)); }
  uint64_t Kept(EventKind k) const { return counts.Get(Of(k)); }
  // Counts `kind` once and keeps the message if fewer than kMaxIssuesKept of it are kept.
  void Report(std::string where, Problem kind, std::string message);
};

// Shares equal EventExtra records among events: a dump repeats the same few kernel geometries
// and copy sizes millions of times, and one 80-byte record per kernel was the second largest
// array of an import (after the events). An IndexTable into the extras, dropped (Release) once
// the import is done.
// Thread-safety: not thread-safe; one per TraceFile, used by the importer's thread.
class ExtraInterner {
 public:
  // The index in *extras of a record equal to x, appended if there is none.
  uint32_t Intern(const EventExtra& x, std::vector<EventExtra>* extras);
  // Frees the table; records in `extras` so far are no longer shared with later ones.
  void Release(const std::vector<EventExtra>& extras) {
    index_.Reset(static_cast<uint32_t>(extras.size()));
    std::fill(std::begin(recent_), std::end(recent_), kNoExtra);
  }

 private:
  IndexTable index_;
  // The last four answers, compared before hashing: a thread's API calls and the kernels they
  // launch alternate between records.
  uint32_t recent_[4] = {kNoExtra, kNoExtra, kNoExtra, kNoExtra};
  uint32_t next_recent_ = 0;
};

struct TraceFile {
  FileMeta meta;
  StringPool strings;
  std::vector<Event> events;
  // 1-based source line (or record index) of each event, for messages: beside `events`, not
  // in them, because nothing after tree building reads them (Merge frees them there; LineOf).
  std::vector<uint32_t> lines;
  std::vector<EventExtra> extras;  // rarer fields, indexed by Event::extra; shared by equal events
  // The input's own arguments of each event as compact JSON object text in `strings` (Kineto's
  // "args": input shapes, grid, block, bytes, collective fields), kept for trace.json: beside
  // `events` like `lines` when the importer keeps them, else empty; kNoStr for an event without.
  std::vector<StrId> args;
  // Correlation ids an Event cannot hold in 32 bits (Event::correlation), in order of arrival.
  std::vector<int64_t> wide_correlations;
  IngestStats stats;
  ExtraInterner extra_interner;    // importers' dedup table for `extras`
  ThreadTable threads;             // Event::thread -> (process, thread)
  // NVTX_POP records the raw importer folded into their push (EventKind::kNvtxRange) instead of
  // storing them: until Merge drops the closing events, the records that became events are
  // events.size() + folded_pops.
  uint64_t folded_pops = 0;

  int64_t ProcessOf(const Event& e) const { return threads[e.thread].process_id; }
  int64_t ThreadIdOf(const Event& e) const { return threads[e.thread].thread_id; }
  // Sets e's (process, thread); e may still be outside `events`.
  void SetThread(Event& e, int64_t process_id, int64_t thread_id) { e.thread = threads.Index(process_id, thread_id); }
  void SetProcess(Event& e, int64_t process_id) { SetThread(e, process_id, ThreadIdOf(e)); }
  // Puts `threads` in (process, thread) order and renumbers the events to match. Every importer
  // calls it last; cheap when already in order. Returns the map old index -> new index for
  // other holders of thread indices (empty when nothing moved).
  std::vector<uint32_t> SortThreads();

  // Room for n events (and their lines, and args when `with_args`) before they are added: an
  // importer that can estimate the count saves the copies of growth. Reserved pages that are
  // never filled are never touched, so an estimate on the high side costs no memory.
  void ReserveEvents(size_t n, bool with_args) {
    events.reserve(n);
    lines.reserve(n);
    if (with_args) args.reserve(n);
  }
  // Appends e, read from source line (or record index) `line`. Importers add events this way
  // so that `lines` stays beside `events`.
  void AddEvent(const Event& e, uint64_t line) {
    events.push_back(e);
    lines.push_back(LineNumber(line));
  }
  // Removes the events for which keep(i) is false (i: the index before the call), keeping the
  // others' order and, when `lines` and `args` are beside the events, their lines and args.
  // Returns how many remain. Capacity is kept: the caller may hand the freed tails back (ReleasePages).
  template <class Keep>
  size_t KeepEvents(Keep keep) {
    const size_t n = events.size();
    const bool with_lines = lines.size() == n, with_args = args.size() == n;
    size_t out = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!keep(i)) continue;
      if (out != i) {
        events[out] = events[i];
        if (with_lines) lines[out] = lines[i];
        if (with_args) args[out] = args[i];
      }
      ++out;
    }
    events.resize(out);
    if (with_lines) lines.resize(out);
    if (with_args) args.resize(out);
    return out;
  }
  // The source line of events[i]; 0 when unknown (an event added without one, or after Merge).
  uint32_t LineOf(size_t i) const { return i < lines.size() ? lines[i] : 0; }
  uint32_t LineOf(const Event& e) const {
    // std::less: a total order even for pointers into different arrays (e may be a copy).
    const std::less<const Event*> before;
    const Event* begin = events.data();
    return !before(&e, begin) && before(&e, begin + events.size()) ? LineOf(size_t(&e - begin)) : 0;
  }

  // e's correlation id, kNone when it has none.
  int64_t Correlation(const Event& e) const {
    if (e.correlation < Event::kWideCorrelation) return e.correlation;
    if (e.correlation == Event::kNoCorrelation) return kNone;
    return wide_correlations[e.correlation & ~Event::kWideCorrelation];
  }
  // Gives e the correlation id `id` (kNone: none); e may still be outside `events`. Ids beyond
  // 31 bits (and negative ones) take a wide_correlations entry each.
  void SetCorrelation(Event& e, int64_t id) {
    if (id == kNone) e.correlation = Event::kNoCorrelation;
    else if (id >= 0 && id < int64_t{Event::kWideCorrelation}) e.correlation = uint32_t(id);
    else if (wide_correlations.size() < Event::kNoCorrelation - Event::kWideCorrelation) {
      e.correlation = Event::kWideCorrelation | uint32_t(wide_correlations.size());
      wide_correlations.push_back(id);
    } else {
      e.correlation = Event::kNoCorrelation;  // over 2^31 - 1 wide ids in one file: counted
      stats.Add(Problem::kCorrelationIdsDropped);
    }
  }

  // The extra fields of `e` (defaults when it has none).
  const EventExtra& Extra(const Event& e) const {
    return e.extra == kNoExtra ? kDefaultExtra : extras[e.extra];
  }
  // Gives `e` the extra fields `x` (none when all are defaults), shared with every other event
  // whose fields are equal (e may still be outside `events`). Also the way to change an
  // event's fields: the record other events share is never modified.
  void SetExtra(Event& e, const EventExtra& x) {
    e.extra = x.IsDefault() ? kNoExtra : extra_interner.Intern(x, &extras);
  }
};
static_assert(sizeof(Event) <= 96, "Event grew: move rare fields to EventExtra");

}  // namespace truffld::merge
