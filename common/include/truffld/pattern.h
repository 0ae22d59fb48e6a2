// Pattern: one regular expression in RE2 syntax (https://github.com/google/re2/wiki/Syntax),
// the only engine truffld runs user-supplied patterns with (--rules name_regex, request_regex,
// --request-regex) and its built-in classification patterns.
//
// Why RE2: it matches in time linear in the text and bounded memory, so a pattern such as
// "(.*)*x" cannot make a run hang on a long name the way a backtracking engine (std::regex)
// does; it has no backreferences or lookaround. Text and pattern are read byte by byte
// (Latin-1): '.' is one byte, as for names that are not valid UTF-8.
// Thread-safety: immutable after Compile; copies share the compiled program and may be used
// from any number of threads at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "truffld/status.h"

namespace re2 {
class RE2;
}

namespace truffld {

class Pattern {
 public:
  // Compiles `text`; an invalid pattern is InvalidArgument with RE2's reason (the caller names
  // the flag or rule). `icase`: ASCII letters match either case.
  static Result<Pattern> Compile(std::string_view text, bool icase = false);

  Pattern() = default;  // matches nothing until assigned from Compile

  // Whether the pattern matches somewhere in `text` (`at_start`: only a match starting at byte 0).
  bool Search(std::string_view text, bool at_start = false) const;
  // Like Search; on a match whose first capture group took part, *group is that group (a view
  // into `text`) and the result is true.
  bool SearchGroup1(std::string_view text, bool at_start, std::string_view* group) const;
  // Number of capture groups (0 for a default-constructed Pattern).
  int groups() const;
  const std::string& text() const { return text_; }

 private:
  std::shared_ptr<const re2::RE2> re_;
  std::string text_;
};

}  // namespace truffld
