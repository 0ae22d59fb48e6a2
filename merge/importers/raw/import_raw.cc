// The raw importer's file loop: lines from a LineReader through a RawLineParser into a
// TraceFile, the reader's warnings counted once each, and the second read without folding
// when a thread came out of time order.
#include <algorithm>
#include <filesystem>

#include "truffld/line_reader.h"
#include "truffld/merge/import.h"
#include "truffld/merge/raw_parser.h"

namespace truffld::merge {
namespace {

// Sizes the tables from the file size so the event vector never doubles (a doubling briefly
// holds old and new copies). Unused capacity is never touched: it costs address space only.
// Compressed input: ~8x.
void Reserve(const ByteSource& src, TraceFile* file) {
  const uint64_t size = src.size_hint();
  if (size == 0) return;
  const size_t cap = static_cast<size_t>(std::min<uint64_t>(size / 64 + 16, uint64_t{1} << 31));
  file->events.reserve(cap);
  file->lines.reserve(cap);
  file->extras.reserve(cap / 2);  // kernels (grid, block) and copies have extras
}

// What the reader met besides lines: each counted once, its message printed with file:line once.
// The truncated last line was reported by the parser (ParseCutLine); its warning is not repeated,
// nor is a compressed stream's "ends early" (line 0), which is the same cut: one cut line at the
// end of a .gz/.zst dump is one malformed line.
void ReportReadProblems(const LineReader& r, TraceFile* file) {
  const std::string& path = file->meta.path;
  for (const LineWarning& w : r.warnings()) {
    if (r.truncated_last_line() && (w.line == r.line_number() || w.line == 0)) continue;
    file->stats.Report(path + ":" + std::to_string(w.line), Problem::kReadWarning, w.text);
  }
  if (r.long_lines_skipped()) file->stats.Add(Problem::kLongLinesSkipped, r.long_lines_skipped());
  if (!r.status().ok())
    file->stats.Report(r.Where(), Problem::kReadError, r.status().message() + " (data before it kept)");
  if (r.line_number() == 0) file->stats.Report(path + ":0", Problem::kEmptyFile, "file holds no records");
  else if (!file->meta.has_meta && file->meta.format != "truffld-marker")
    file->stats.Report(path + ":1", Problem::kMissingMeta,
                       "no META record: rank unknown, clock taken as realtime, no clock alignment");
}

// One read of a raw dump; `fold`: RawLineParser::set_fold_push_pop. Sets *conflict (and returns
// a TraceFile to be discarded) when folding met a thread out of time order.
Result<TraceFile> ReadRawJsonl(std::unique_ptr<ByteSource> src, const ImportOptions& options, bool fold, bool* conflict) {
  TraceFile file;
  file.meta.path = src->path();
  Reserve(*src, &file);
  std::unique_ptr<LineReader> reader = LineReader::Open(std::move(src), LineReader::Options{});
  LineReader& r = *reader;
  RawLineParser parser(&file, file.meta.path);
  parser.set_fold_push_pop(fold);
  std::string_view line;
  while (r.Next(&line)) {
    const uint64_t no = static_cast<uint64_t>(r.line_number());
    if (r.truncated_last_line()) parser.ParseCutLine(line, no);
    else parser.ParseLine(line, no);
    if (options.strict && parser.problems()) return ParseError(parser.first_problem());
    if (parser.fold_conflict()) {
      *conflict = true;
      return file;
    }
  }
  parser.Finish();
  if (options.strict && parser.problems()) return ParseError(parser.first_problem());
  ReportReadProblems(r, &file);
  if (file.meta.format.empty()) file.meta.format = "truffld";
  if (file.meta.process_id == kNone) {
    for (const Event& e : file.events)
      if (file.ProcessOf(e) != kNone) { file.meta.process_id = file.ProcessOf(e); break; }
  }
  if (options.strict && (!r.status().ok() || !file.stats.issues.empty()))
    return ParseError(file.stats.issues.empty() ? r.status().ToString()
                                                : file.stats.issues[0].where + ": " + file.stats.issues[0].message);
  file.SortThreads();
  return file;
}

}  // namespace

Result<TraceFile> ImportRawJsonl(std::unique_ptr<ByteSource> src, const ImportOptions& options) {
  bool conflict = false;
  // Folding may need a second read: only a regular file can be read twice (not "-", a pipe or
  // a FIFO, which are read once, from the source already open).
  const std::string path = src->path();
  const bool fold = options.fold_push_pop && src->rereadable();
  Result<TraceFile> first = ReadRawJsonl(std::move(src), options, fold, &conflict);
  if (!conflict) return first;
  // A thread stepped back in time after pops had been folded (RawLineParser): read again
  // without folding, which is what the folded read stands for whenever it succeeds.
  auto again = OpenByteSource(path);
  if (!again.ok()) return again.status();
  Result<TraceFile> plain = ReadRawJsonl(std::move(*again), options, false, &conflict);
  if (plain.ok() && conflict) plain->stats.Add(Problem::kFoldRetried);
  return plain;
}

Result<TraceFile> ImportRawJsonl(const std::string& path, const ImportOptions& options) {
  auto src = OpenByteSource(path);
  if (!src.ok()) return src.status();
  return ImportRawJsonl(std::move(*src), options);
}

}  // namespace truffld::merge
