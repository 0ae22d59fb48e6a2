// RawLineParser: one line of a raw dump -> zero or one Event (plus file-level metadata).
//
// Understands the truffld events-v1 records (META, NVTX_*, RUNTIME, DRIVER, KERNEL, MEMCPY,
// MEMSET, SYNC, GRAPH_NODE, CLOCK, STATS) and the paper's NVTX_MARKER dialect (a named marker
// opens range `id`, "name": "null" or null closes it; kernels may carry `duration` and lack
// host ids). Plain records (compact, ASCII, no escapes, integers: what the injector writes) are
// read by a one-pass scanner; any other line by simdjson's DOM parser on a reused padded
// buffer, which reads the same records to the same result. No allocation per line once warm
// except for new strings interned into the file's StringPool.
// Every problem is counted in TraceFile::stats with a "path:line: ..." message and never stops
// the parse: malformed JSON, unknown types, missing required fields, negative durations
// (clamped), invalid UTF-8 (bytes replaced by U+FFFD, record kept).
// Folding (set_fold_push_pop, off by default; ImportRawJsonl turns it on): a dump is about a
// third NVTX_POP records, which only close the push below them. While a thread's push/pop
// records come in time order (the injector writes each thread in order), the parser applies the
// one pairing rule (merge/core/nvtx_pairing.h) as range reconstruction will, and folds each
// pop into its push (EventKind::kNvtxRange, end = the pop's time) instead of storing a 32-byte
// event that the tree builder would drop again. A pop carrying a payload is stored as usual
// (its payload is joined later). A thread whose records step back in time stops folding; if it
// had folded some, fold_conflict() turns true and the file must be read again without folding
// (ImportRawJsonl does), since folds made in file order may differ from those of time order.
// Pure logic: no files, no threads. Thread-safety: one parser per thread / per TraceFile.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "truffld/merge/event.h"
#include "truffld/utf8.h"

namespace truffld::merge {
namespace raw { struct Fields; }

class RawLineParser {
 public:
  // `out` receives events, metadata and counters; `source` names the file in messages.
  RawLineParser(TraceFile* out, std::string source);
  ~RawLineParser();
  RawLineParser(const RawLineParser&) = delete;
  RawLineParser& operator=(const RawLineParser&) = delete;

  // Parses one line (without terminator). Blank lines are ignored.
  void ParseLine(std::string_view line, uint64_t line_no);
  // Parses the last line of a file that ends without a newline (a writer killed mid-record).
  // It is one problem, counted once as truncated_last_line with its file:line: its record is
  // kept when it still reads as one, and dropped (not also counted as malformed) when not.
  void ParseCutLine(std::string_view line, uint64_t line_no);

  // After the last line: what only the whole file tells. A DEVICE_WINDOW end whose window id
  // never started anywhere in the file is reported (bad_field, file:line) and dropped.
  void Finish();

  // false: every line through the simdjson DOM reader (the default is the plain-record scanner
  // with the DOM reader behind it, or the DOM reader alone when TRUFFLD_RAW_READER=simdjson;
  // importers/raw/raw_record_reader.h). Tests compare both.
  void set_fast_path(bool on);

  // Fold NVTX_POP records into their push while each thread stays in time order (above).
  // Set before the first line.
  void set_fold_push_pop(bool on) { fold_ = on; }
  // True when a folding thread stepped back in time after folding: the TraceFile is not
  // equivalent to an unfolded read and must be discarded.
  bool fold_conflict() const { return fold_conflict_; }

  // Number of problems reported so far (any kind); lets --strict stop at the first.
  uint64_t problems() const { return problems_; }
  // "path:line: message" of the first problem, empty when none.
  const std::string& first_problem() const { return first_problem_; }

 private:
  struct Impl;
  class EventBuilder;
  void ReportProblem(uint64_t line_no, Problem kind, std::string message);
  void ReadMeta(const raw::Fields& f, uint64_t line_no);
  void Store(Event& e, EventExtra& x, bool extra, std::string_view domain, int64_t pid, int64_t tid, uint64_t line_no);
  bool Fold(Event& e, StrId payload);
  std::unique_ptr<Impl> impl_;
  TraceFile* out_;
  std::string source_;
  uint64_t problems_ = 0;
  bool fold_ = false;
  bool fold_conflict_ = false;
  bool cut_line_ = false;     // ParseCutLine is parsing
  std::string cut_error_;     // why the cut line is no record (empty: it is one)
  std::string first_problem_;
};

// The shared repair (truffld/utf8.h): each byte that starts no valid sequence becomes U+FFFD.
using truffld::RepairUtf8;

}  // namespace truffld::merge
