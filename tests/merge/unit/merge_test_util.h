// Helpers shared by the merge unit tests: build a TraceFile from raw JSONL text in memory.
#pragma once

#include <sstream>
#include <string>

#include "truffld/merge/event.h"
#include "truffld/merge/raw_parser.h"

namespace truffld::merge::testing {

// `fast_path`: false reads every line with the DOM parser (RawLineParser::set_fast_path).
inline TraceFile FileFromLines(const std::string& text, const std::string& name = "mem.jsonl",
                               bool fast_path = true) {
  TraceFile f;
  f.meta.path = name;
  RawLineParser p(&f, name);
  p.set_fast_path(fast_path);
  std::istringstream in(text);
  std::string line;
  uint64_t n = 0;
  while (std::getline(in, line)) p.ParseLine(line, ++n);
  p.Finish();
  if (f.meta.format.empty()) f.meta.format = "truffld";
  f.SortThreads();  // as every importer does last
  return f;
}

}  // namespace truffld::merge::testing
