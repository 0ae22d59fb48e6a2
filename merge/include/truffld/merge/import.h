// Input sniffing and dispatch: one entry point that turns any supported input file into a
// TraceFile (the merge stage's event model, see event.h).
//
// ImportFile looks at the content, never the file name: SQLite's 16-byte magic goes to the
// Nsight Systems importer, a JSON document whose top level is an object with "traceEvents" goes
// to the Kineto importer, anything else is read as the line-oriented raw dialects (truffld
// events-v1 records and the paper's NVTX_MARKER form). Compressed inputs (.gz/.zst) are detected
// by their magic bytes too.
// Problems inside a file are counted in TraceFile::stats (with file:line messages) and the rest
// is imported; only an unreadable/unrecognisable file, or any problem when `strict`, is an error.
// Times stay on the file's own clock (ns); alignment happens in Merge().
// Thread-safety: every function here is reentrant; different files may be imported on
// different threads at once.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "truffld/byte_source.h"
#include "truffld/merge/event.h"
#include "truffld/status.h"

namespace truffld::merge {

struct ImportOptions {
  bool strict = false;  // the first counted input problem becomes the returned error
  // Raw dumps: fold each NVTX_POP into its push while reading (RawLineParser::set_fold_push_pop;
  // the result merges identically, with a third fewer events held). Regular files only (a
  // thread out of time order makes the importer read the file again). Off: tests comparing both.
  bool fold_push_pop = true;
  // Kineto: keep each event's args object for trace.json (TraceFile::args). Off when no
  // trace.json is written: nothing else shows them, and compacting, checking and storing every
  // args object costs import time and memory.
  bool keep_args = true;
  // Kineto: parse traceEvents in batches of about this many bytes, with one small parser index
  // reused for all, instead of indexing the whole document at once (4 bytes per JSON token,
  // about 40 MB for a 53 MB trace, whose page faults cost more than the rest of the import's
  // memory); a regular file is read through a window of four batches. 0, a document no longer
  // than this, or --strict: the whole document at once. Both give the same TraceFile (a
  // document the batches cannot cut is read whole); tests set small values to cut hand-written
  // documents into many batches. 256 KiB to 2 MiB cost the same time on a 53 MB trace; 512 KiB
  // had the lowest peak memory (BENCHMARKS.md).
  size_t kineto_batch_bytes = size_t{512} << 10;
};

enum class InputFormat { kRawJsonl, kKineto, kNsys };
const char* InputFormatName(InputFormat f) noexcept;  // "truffld", "kineto", "nsys"

// Decides the format from the first bytes of the (decompressed) content.
Result<InputFormat> SniffFormat(const std::string& path);
// Same decision from a content prefix already in memory (pure; used by tests).
InputFormat SniffFormatFromPrefix(std::string_view prefix);

// A file naming more (process, thread) pairs than its ThreadTable holds (Event::kMaxThreads)
// cannot be merged: the pairs past the limit share one index, so their ranges would nest
// across threads. ImportFile returns this error for such a file. Pure.
Status ThreadCapacityStatus(const TraceFile& f);

// "" when at least one of `files` holds an event; else why there is nothing to merge, naming
// each file (the first four) with its format and first reported problem, e.g. "no events in
// a.json (kineto; a.json:3 (byte 70): ...)". Pure.
std::string NoEventsReason(const std::vector<TraceFile>& files);

// Imports one file of any supported format.
Result<TraceFile> ImportFile(const std::string& path, const ImportOptions& options);

// Imports a raw JSONL file (truffld events-v1 and/or NVTX_MARKER records), by path or from a
// source already open (and possibly peeked at).
Result<TraceFile> ImportRawJsonl(const std::string& path, const ImportOptions& options);
Result<TraceFile> ImportRawJsonl(std::unique_ptr<ByteSource> src, const ImportOptions& options);

// Why ExpandInputs left a file out (summary.json: skipped_inputs[].kind).
enum class SkipKind {
  kNotTrace,       // found in a directory, content is not a trace (ledger.jsonl, labels.jsonl)
  kTruffldOutput,  // an output of truffld itself (trees.jsonl, trace.json, summary.json, ...)
  kDuplicate,      // the same file, or the same dump (identical META and start), as an earlier input
  kNotRegular,     // found in a directory with a trace-like name, but a FIFO, socket or device
};
// "not_a_trace", "truffld_output", "duplicate", "not_a_regular_file"
const char* SkipKindName(SkipKind k) noexcept;

struct SkippedInput {
  std::string path;
  std::string reason;  // one line naming what it is (and for a duplicate, which input it repeats)
  SkipKind kind = SkipKind::kNotTrace;
};

// A raw dump's identity from its first (up to) 64 KiB, decompressed: its first line when that is
// a META record, then the prefix's size and hash; "" without a META first line. *meta: that
// line. Two inputs with one identity are the same dump. Pure.
std::string DumpIdentity(std::string_view prefix, std::string* meta);

// Drops the inputs whose dump repeats an earlier input's (same FileMeta::identity) from `paths`
// and `imported` (index-aligned, as ImportAll returns them) and lists each in *skipped as a
// duplicate naming the input kept. ExpandInputs finds repeated files before they are read; this
// finds a dump given on standard input or through a pipe that repeats a file (or another
// stream). Pure.
void DropRepeatedDumps(std::vector<std::string>* paths, std::vector<Result<TraceFile>>* imported,
                       std::vector<SkippedInput>* skipped);

// Names the truffld output a content prefix starts with ("trees.jsonl (truffld.trees/1)"), or ""
// for anything else. Outputs are recognised by their marker near the start: the "schema" of
// trees.jsonl, summary.json and diagnosis.jsonl, the "generator" of trace.json. Pure.
std::string TruffldOutputKind(std::string_view prefix);

// Expands directories (recursively, sorted by name) into the trace files they hold: names
// *.jsonl, *.json, *.gz, *.zst, *.sqlite, *.sqlite3, *.db whose content looks like a trace (a
// raw dump's first record has a "type"; Chrome/Kineto JSON has traceEvents; nsys is SQLite).
// Other such files in a directory (truffld-synth's ledger.jsonl and labels.jsonl, configs) go to
// `skipped` with the reason, so the caller can say so. Wherever they come from (directory or
// named), truffld's own outputs (an earlier merge's trace.json would import as a Kineto trace)
// and repeated inputs (the same file twice, or the same dump twice: x.jsonl beside x.jsonl.gz,
// recognised by an identical META record - host, process, rank, clock sync - and identical first
// 64 KiB of content) are skipped too; the first occurrence is kept.
// Other paths given explicitly (files, missing paths) are kept as given, so that importing them
// reports any problem. Fails only when a directory cannot be listed.
Result<std::vector<std::string>> ExpandInputs(const std::vector<std::string>& inputs,
                                              std::vector<SkippedInput>* skipped = nullptr);

// Imports every path on up to `threads` threads (one file per thread); results in input order.
// A failed file is a non-ok entry: the caller decides whether to skip it or stop.
std::vector<Result<TraceFile>> ImportAll(const std::vector<std::string>& paths, const ImportOptions& options,
                                         int threads);

}  // namespace truffld::merge
