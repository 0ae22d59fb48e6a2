// Nsight Systems importer: `nsys export --type sqlite` databases -> TraceFile.
//
// Reads CUPTI_ACTIVITY_KIND_RUNTIME (kRuntime), _KERNEL (kKernel), _MEMCPY (kMemcpy), _MEMSET
// (kMemset), NVTX_EVENTS (push/pop and start/end ranges -> kRange, marks -> kNvtxMark), with
// names from StringIds. Times are nsys session-relative ns; TARGET_INFO_SESSION_START_TIME (when
// present) is added so times are UTC epoch ns (FileMeta::clock = kRealtime). Missing optional
// tables are fine. A database holding several processes yields ONE TraceFile whose events carry
// their own process ids (globalTid >> 24 & 0xFFFFFF) and thread ids (globalTid & 0xFFFFFF);
// FileMeta::process_id is the process with the most runtime calls.
// Supported formats and the full mapping: merge/IMPORTERS.md.
// Thread-safety: reentrant; each call opens its own read-only SQLite connection.
#pragma once

#include <string>

#include "truffld/merge/event.h"
#include "truffld/merge/import.h"
#include "truffld/status.h"

namespace truffld::merge {

// Errors: kNotFound (no such file), kParseError (not an SQLite database or no CUPTI/NVTX table at
// all). With options.strict, any counted problem is an error.
Result<TraceFile> ImportNsys(const std::string& path, const ImportOptions& options);

}  // namespace truffld::merge
