// Helpers shared by the merge unit tests: build a TraceFile from raw JSONL text in memory.
#pragma once

#include <sstream>
#include <string>

#include "truffld/merge/event.h"
#include "truffld/merge/raw_parser.h"

namespace truffld::merge::testing {

inline TraceFile FileFromLines(const std::string& text, const std::string& name = "mem.jsonl") {
  TraceFile f;
  f.meta.path = name;
  RawLineParser p(&f, name);
  std::istringstream in(text);
  std::string line;
  uint64_t n = 0;
  while (std::getline(in, line)) p.ParseLine(line, ++n);
  if (f.meta.format.empty()) f.meta.format = "truffld";
  return f;
}

}  // namespace truffld::merge::testing
