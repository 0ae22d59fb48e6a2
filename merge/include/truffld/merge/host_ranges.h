// Host range reconstruction: NVTX push/pop, start/end and complete-range events -> intervals.
//
// Rules (documented in merge/README.md, each case counted rather than dropped):
//   - host events are ordered per (process, thread) by time; equal times keep file order;
//   - NVTX_POP closes the innermost open push on its (process, thread); a pop with nothing
//     open is an unmatched pop (counted, reported with file:line, ignored);
//   - NVTX_START/NVTX_END pair by (process, range id) and may cross threads; the range belongs
//     to the starting thread; an END with no open START is an unmatched pop;
//   - a push or start never closed is an unclosed range: it is closed at the last timestamp of
//     its file (so its work still appears in a tree) and counted;
//   - zero-length ranges are kept and counted;
//   - a closing event may carry a payload (NCCL closes ncclCommInitRank & co. with
//     nvtxRangePopPayload): JoinClosingPayloads adds its fields to the range's payload.
// Pure logic over a TraceFile. Times are ns on the file's own clock.
// Thread-safety: reentrant; reads the TraceFile only (plus its IngestStats for messages).
#pragma once

#include <cstdint>
#include <vector>

#include "truffld/merge/event.h"

namespace truffld::merge {

struct HostRange {
  TimeNs start = 0;
  TimeNs end = 0;
  uint32_t thread = 0; // index into TraceFile::threads (the opening event's)
  uint32_t event = 0;  // index of the opening (or complete) event in TraceFile::events
  // 24 bytes a range: the closing event, needed only when it carries a payload, is named in a
  // RangeClose instead.
};
static_assert(sizeof(HostRange) == 24, "HostRange is sized for the merge's memory budget");

// A range closed by an event that carries a payload (NVTX_POP or NVTX_END with one): the
// opening and closing events' indices in TraceFile::events, for JoinClosingPayloads. `range`
// is the range's index in BuildHostRanges' result.
struct RangeClose {
  uint32_t range = 0;
  uint32_t open_event = 0;
  uint32_t close_event = 0;
};

struct RangeCounters {
  uint64_t unmatched_pops = 0;
  uint64_t unclosed_ranges = 0;
  uint64_t zero_length_ranges = 0;
  uint64_t duplicate_range_ids = 0;  // a START reusing an id that is still open
};

// Rebuilds every host range of `file`, in no particular order. Problems are counted in
// `counters` and reported (with file:line) into `issues`. When `payload_closes` is given, it
// receives the ranges whose closing event carries a payload, in range order (a handful: most
// closing events carry nothing).
std::vector<HostRange> BuildHostRanges(const TraceFile& file, RangeCounters* counters,
                                       IngestStats* issues, std::vector<RangeClose>* payload_closes = nullptr);

// Sorts `order` (event indices in increasing file order) by (Event::thread, start), ties in
// file order: (process, thread, start) order once TraceFile::SortThreads has run. Linear time
// when each thread's events are already in time order in the file (as every importer writes
// them): a stable counting sort on the thread index, then only the threads out of order are
// comparison-sorted. Thread-safety: pure function.
void OrderByThreadThenTime(const std::vector<Event>& ev, std::vector<uint32_t>* order);

// For each range closed with a payload (BuildHostRanges' payload_closes), makes the opening
// event's payload the union of both JSON objects (the opening event's value wins a key present
// in both; a payload that is not a JSON object is kept as "close_payload"). Returns how many
// ranges changed.
uint64_t JoinClosingPayloads(const std::vector<RangeClose>& closes, TraceFile* file);

}  // namespace truffld::merge
