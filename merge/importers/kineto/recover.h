// Private to the Kineto importer: reading a document simdjson refused, one traceEvents element
// at a time (see recover.cc).
// Thread-safety: pure function over the caller's buffer.
#pragma once

#include <string>

#include <simdjson.h>

#include "truffld/merge/event.h"
#include "truffld/merge/import.h"
#include "truffld/status.h"

namespace truffld::merge::kineto {

// Imports the events of `buf` (the whole document) element by element: each element simdjson
// can read is imported, each damaged one (invalid JSON, bad UTF-8, a ',' too many, cut short) is
// reported under kineto.malformed_json with its byte offset and skipped, and reading goes on
// at the next element (element_scan.h). The members around traceEvents are read from the
// document without the array's elements. `original` is returned when no event can be kept
// (no traceEvents array found, nothing readable in it).
Result<TraceFile> ImportRecovering(simdjson::padded_string_view buf, const std::string& name,
                                   const ImportOptions& options, Status original);

}  // namespace truffld::merge::kineto
