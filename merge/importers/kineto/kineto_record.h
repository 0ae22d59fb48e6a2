// Private to the Kineto importer: one Chrome-trace event as read from JSON, and its mapping.
//
// KinetoRecord holds the fields of one `traceEvents` element exactly as found (views into the
// parsed document, numbers as their raw JSON text), so the mapping to the event model
// (MapKinetoRecord) is pure logic, testable without a JSON parser. ReadKinetoRecord fills a
// record from a simdjson on-demand object in one pass over its fields, in whatever order they
// come. Units: `ts`/`dur` stay as microsecond text until MapKinetoRecord converts them exactly.
// Thread-safety: plain data and pure functions; no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "truffld/merge/event.h"

namespace truffld::merge::kineto {

// Where a field may be absent, `has_*` says whether the document had it.
struct KinetoRecord {
  std::string_view ph, cat, name;
  std::string_view ts_text, dur_text;  // raw JSON number text, microseconds
  bool has_pid = false, has_tid = false;
  bool pid_is_int = false, tid_is_int = false;    // a number, or a string holding an integer
  bool pid_is_name = false, tid_is_name = false;  // another string: pid/tid hold its TrackIdOf
  int64_t pid = 0, tid = 0;
  // args
  std::optional<int64_t> correlation, cbid, device, stream, bytes;
  std::string_view copy_kind;  // args.kind ("DtoD") when present
  std::string_view args_text;  // the args object as found in the document (raw JSON), or ""
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  std::string_view bad_field;       // first essential field of the wrong JSON type ("" if none)
  std::string_view ignored_field;   // first optional arg of the wrong type (event still kept)
};

// Fills `rec` from one event object. Returns a simdjson error only for a malformed document
// (the walk cannot continue); a field of the wrong type is recorded in rec->bad_field instead.
simdjson::error_code ReadKinetoRecord(simdjson::ondemand::object obj, KinetoRecord* rec);

// What to do with a record.
enum class Disposition {
  kEvent,    // `event` is filled and should be kept
  kSkip,     // a kind of record the event model does not need; count under `key`
  kProblem,  // a record we should import but cannot; report under `key` with `message`
};

struct Mapped {
  Disposition what = Disposition::kSkip;
  Event event;             // without its correlation id: the caller stores rec.correlation (TraceFile::SetCorrelation)
  EventExtra extra;        // kernel geometry; the caller stores it (TraceFile::SetExtra)
  HostThread host;         // host events' (pid, tid); the caller stores it (TraceFile::SetThread)
  Problem key = Problem::kKinetoSkippedOtherPh;  // the stats row for kSkip/kProblem
  std::string message;   // for kProblem
};

// The number standing for a pid/tid given as a string that is not an integer ("CPU functions"):
// 2^40 + the low 40 bits of the text's 64-bit FNV-1a hash, so that it stays the same from run
// to run and from file to file, and clear of real process and thread ids.
int64_t TrackIdOf(std::string_view name);

// Maps a record to the event model. Times are ns relative to the file's base (the caller adds
// baseTimeNanoseconds later). Device events keep host = (kNone, kNone); the caller assigns the
// host process afterwards. `pool` interns name and category.
Mapped MapKinetoRecord(const KinetoRecord& rec, StringPool* pool);

// The stats row for a skipped record with this ph/cat, e.g. Problem::kKinetoSkippedFlowAc2g.
Problem SkipKey(std::string_view ph, std::string_view cat);

// Copy kind from args.kind or from a Kineto memcpy name "Memcpy DtoH (Device -> Pinned)";
// "" when neither says.
std::string_view CopyKindOf(std::string_view kind_arg, std::string_view name);

}  // namespace truffld::merge::kineto
