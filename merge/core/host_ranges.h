// Pass 1, range reconstruction: a file's NVTX push/pop, start/end and complete-range events
// become host ranges (intervals on the file's clock).
//
// Rules (merge/README.md, "Ranges"; each problem counted and reported, never dropped silently):
//   - push/pop: the pairing rule of nvtx_pairing.h per (process, thread); an unmatched pop is
//     counted and ignored; a folded push (EventKind::kNvtxRange, its pop paired while reading)
//     is a range as it stands;
//   - NVTX_START/NVTX_END pair by (process, range id), in time order, and may cross threads (the
//     range belongs to the starting thread); an END with nothing open is an unmatched pop; a
//     START reusing an open id closes the earlier range there (duplicate_range_id);
//   - a push or start never closed ends at the file's last timestamp (unclosed_ranges);
//   - complete ranges (Kineto 'X', nsys NVTX) are taken as they are; zero-length ranges counted;
//   - a closing event may carry a payload (NCCL closes ncclCommInitRank with
//     nvtxRangePopPayload): JoinClosingPayloads gives the range the union of both payloads.
// Input: the TraceFile (read only; times on its own clock). Output: RangeSet.
// Thread-safety: reentrant; different files may be processed concurrently.
#pragma once

#include <cstdint>
#include <vector>

#include "truffld/merge/event.h"

namespace truffld::merge {

struct HostRange {
  TimeNs start = 0;
  TimeNs end = 0;
  uint32_t thread = 0;  // index into TraceFile::threads (the opening event's)
  uint32_t event = 0;   // index of the opening (or complete) event in TraceFile::events
};
static_assert(sizeof(HostRange) == 24, "HostRange is sized for the merge's memory budget");

// A range closed by an event that carries a payload: the opening and closing events' indices.
// `range` is the range's index in RangeSet::ranges.
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
  // Indices (into the returned ranges) of the ranges still open at the file's end (closed
  // there), ascending: what a killed or hung process was inside when its dump stopped.
  std::vector<uint32_t> open_at_end;
};

// Rebuilds every host range of `file`: complete ranges in file order, then push/pop ranges in
// (thread, start) order, outer before inner, then start/end ranges. Problems are counted in
// `counters` and reported (file:line) into `issues`. When `payload_closes` is given it receives
// the ranges whose closing event carries a payload, in range order (a handful).
std::vector<HostRange> BuildHostRanges(const TraceFile& file, RangeCounters* counters,
                                       IngestStats* issues, std::vector<RangeClose>* payload_closes = nullptr);

// Sorts `order` (event indices in increasing file order) by (Event::thread, start), ties in
// file order: (process, thread, start) order once TraceFile::SortThreads has run. Linear when
// each thread's events are in time order in the file (as every importer writes them).
// Thread-safety: pure function.
void OrderByThreadThenTime(const std::vector<Event>& ev, std::vector<uint32_t>* order);

// A range's payload once its closing payload is joined in.
struct JoinedPayload {
  uint32_t event = 0;   // the range's opening event
  StrId payload = kNoStr;
};

// For each range closed with a payload: the union of the opening and closing payloads as one
// JSON object (the opening event's value wins a key present in both; a payload that is not a
// JSON object is kept under "payload" / "close_payload"), interned into `strings` (the file's
// pool). Ascending by event. The events themselves are not changed.
std::vector<JoinedPayload> JoinClosingPayloads(const std::vector<RangeClose>& closes, const TraceFile& file,
                                               StringPool* strings);

}  // namespace truffld::merge
