// Kineto importer: PyTorch profiler Chrome-trace JSON (.json / .json.gz) -> TraceFile.
//
// Host ranges (cpu_op, user_annotation, gpu_user_annotation, python_function) become kRange with
// `category` = the Kineto `cat`; cuda_runtime / cuda_driver become kRuntime / kDriver; kernel,
// gpu_memcpy, gpu_memset become kKernel / kMemcpy / kMemset. Times: Kineto `ts`/`dur` are
// microseconds (often fractional); they are converted exactly from their JSON text to int64 ns,
// plus `baseTimeNanoseconds` when the file carries it. Device events get the process id of the
// host process that issued the runtime calls, so (process, correlation) links them. Everything
// else (flows, metadata, counters, instants, unknown categories) is counted in `stats`.
// Supported formats and the full mapping: merge/IMPORTERS.md.
// Thread-safety: reentrant; each call owns its result. Safe to call from several threads.
#pragma once

#include <string>
#include <string_view>

#include "truffld/merge/event.h"
#include "truffld/merge/import.h"
#include "truffld/status.h"

namespace truffld::merge {

// Reads `path` (plain or gzip/zstd-compressed) and imports it. Errors: kNotFound/kIoError for
// unreadable files, kParseError (naming file and byte offset) for a document that is not a JSON
// object with a `traceEvents` array. With options.strict, any counted problem is an error.
Result<TraceFile> ImportKineto(const std::string& path, const ImportOptions& options);
// The same from a source already open (and possibly peeked at).
Result<TraceFile> ImportKineto(std::unique_ptr<ByteSource> src, const ImportOptions& options);

// Same, on an already decompressed in-memory document; `name` is used in messages and
// FileMeta::path. Used by ImportKineto, tests and the fuzzer.
Result<TraceFile> ImportKinetoFromBuffer(std::string_view json, const std::string& name,
                                         const ImportOptions& options);

}  // namespace truffld::merge
