// Salvaging a truncated Chrome-trace document (a profiler killed while writing, a cut download).
//
// simdjson refuses a document whose brackets do not balance, so without help a trace missing
// its last bytes would import nothing. This scanner walks the text once, tracking strings and
// the bracket stack, remembers the last point where an element of the events array (depth 2:
// `{"traceEvents": [ ..., {...}`; depth 1 for a top-level array `[ ..., {...}`) was complete, cuts there and appends the closers the stack
// needs. The importer then parses the repaired copy and reports what was lost and where.
// Pure logic; only run when the normal parse failed for an unbalanced document.
#include "importers/kineto/salvage.h"

#include <vector>

namespace truffld::merge::kineto {

std::optional<Salvaged> SalvageTruncatedJson(std::string_view doc) {
  std::vector<char> stack;          // open brackets: '{' or '['
  std::string best_closers;         // closers needed at the best cut
  size_t best_cut = 0;              // bytes kept (0: nothing salvageable)
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < doc.size(); ++i) {
    const char c = doc[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '{':
      case '[':
        if (stack.size() > 64) return std::nullopt;  // not a trace shape worth repairing
        stack.push_back(c);
        break;
      case '}':
      case ']': {
        if (stack.empty() || (c == '}') != (stack.back() == '{')) return std::nullopt;
        stack.pop_back();
        // A complete element of an array that is a value of the top-level object.
        if (stack.size() == 2 && stack[0] == '{' && stack[1] == '[') {
          best_cut = i + 1;
          best_closers = "]}";
        }
        // A complete element of a top-level array (the JSON Array Format: `[ {...}, ...`).
        if (stack.size() == 1 && stack[0] == '[') {
          best_cut = i + 1;
          best_closers = "]";
        }
        break;
      }
      default: break;
    }
  }
  if (stack.empty() && !in_string) return std::nullopt;  // balanced: not a truncation problem
  if (best_cut == 0) return std::nullopt;
  Salvaged s;
  s.kept_bytes = best_cut;
  s.text.reserve(best_cut + best_closers.size());
  s.text.append(doc.substr(0, best_cut));
  s.text.append(best_closers);
  return s;
}

}  // namespace truffld::merge::kineto
