// RawRecordReader: the raw importer's tokenizer, one line of a dump -> the record's field values
// (raw::Fields), which RawLineParser then turns into an event.
//
// Two readers fill Fields by the same rules (a differential test and the raw-line fuzzer hold
// them to it): the plain-record scanner (FastScan, raw_fields.h), which reads the compact
// ASCII records the injector writes in one pass and hands anything else to the simdjson DOM
// reader; and the DOM reader alone, which reads any JSON and reports what is wrong with a line.
// TRUFFLD_RAW_READER=simdjson in the environment selects the DOM reader for every line (to rule
// the scanner out when chasing a problem; the result is the same, only slower).
// Thread-safety: one reader per parser (per file); readers keep per-file memos.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "importers/raw/raw_fields.h"
#include "truffld/merge/stats.h"

namespace truffld::merge::raw {

class RawRecordReader {
 public:
  // Receives each problem found in a line: its number, the summary key, the message.
  using Report = std::function<void(uint64_t line_no, Problem kind, std::string message)>;
  virtual ~RawRecordReader() = default;
  // Reads a line holding a record (not blank, no leading blanks) into *f (fresh Fields). False
  // when it yields no record: the problem has been reported.
  virtual bool Read(std::string_view line, uint64_t line_no, Fields* f) = 0;
};

enum class RawReaderKind { kFast, kSimdjson };
// kSimdjson when TRUFFLD_RAW_READER is "simdjson", kFast otherwise.
RawReaderKind RawReaderFromEnvironment();

std::unique_ptr<RawRecordReader> MakeRawRecordReader(RawReaderKind kind, RawRecordReader::Report report);

}  // namespace truffld::merge::raw
