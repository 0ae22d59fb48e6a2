// Private to the Kineto importer: what both ways of reading a document share (the whole
// document at once in import_kineto.cc; traceEvents in batches in import_batched.cc): the
// top-level fields besides traceEvents, and the steps that end every import.
// Thread-safety: pure functions over the caller's data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "importers/kineto/doc_feed.h"
#include "importers/kineto/event_walk.h"
#include "truffld/merge/event.h"
#include "truffld/merge/import.h"
#include "truffld/status.h"

namespace truffld::merge::kineto {

// Offset of the '[' that opens the first "traceEvents": [ in the text, npos if none. Whether
// it is the top-level member is for the caller to check.
size_t FindEventsArray(std::string_view text);

// The JSON Array Format of the Chrome trace spec (the whole document is `[ {event}, ... ]`):
// offset of the document's first byte, a '[' after optional whitespace; npos otherwise.
size_t ArrayFormOpen(std::string_view text);

// A UTF-8 byte-order mark at text[0, 3) becomes three spaces (JSON whitespace), so that the
// offsets in messages stay those of the file.
void BlankByteOrderMark(char* text, size_t size);

// An empty TraceFile for a Kineto document called `name`.
TraceFile NewKinetoFile(const std::string& name);

// One top-level member other than traceEvents: distributedInfo's rank and world_size into
// `meta` (fields of other types ignored), baseTimeNanoseconds into *base_ns; the rest is ignored. False when baseTimeNanoseconds is not
// an integer (*base_ns is then empty).
bool ReadTopMember(std::string_view key, simdjson::ondemand::value v, FileMeta* meta,
                   std::optional<int64_t>* base_ns);

// The end of every import, once traceEvents has been walked: clamps the ends that whole-
// microsecond rounding put just past their parent's (rounding.h), adds `base_ns` to every time,
// gives device events their host process, sorts the thread table, fills the counters and, with
// options.strict, turns the first problem into the error.
Result<TraceFile> FinishImport(TraceFile tf, const Walk& w, std::optional<int64_t> base_ns,
                               const std::string& name, const ImportOptions& options);

// Reads traceEvents a batch at a time (event_batches.h) from `feed`: the whole document, or a
// window on a source (doc_feed.h) whose bytes it changes while it runs and restores before it
// returns. nullopt when the document needs the whole-document reader: a problem outside
// traceEvents, malformed JSON anywhere, a read error, or a cut the batches could not make;
// the caller then reads it whole, which reports whatever it finds, so both ways give the same
// result. A fed window has moved past the document's start by then.
std::optional<Result<TraceFile>> ImportInBatches(DocFeed* feed, const std::string& name,
                                                 const ImportOptions& options);

}  // namespace truffld::merge::kineto
