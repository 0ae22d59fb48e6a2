// Test helper: hand-written trees.jsonl lines are laid out over several lines of source for
// reading; OneLine joins them into the one line the reader expects.
#pragma once

#include <string>

namespace truffld::diagnose::testing {

inline std::string OneLine(const std::string& s) {
  std::string out;
  for (char c : s) if (c != '\n') out += c;
  return out;
}

}  // namespace truffld::diagnose::testing
