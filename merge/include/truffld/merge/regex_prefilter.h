// RegexPrefilter: a cheap necessary condition for a classification regex to match a name.
//
// Real traces name every operator call differently ("aten::mm, seq = 1234, op_id = 56789"), so
// the merge cannot cache classification by name, and running every rule's regex over every
// name costs (with libstdc++'s std::regex it was 40 % of the merge on an 8-rank synthetic vLLM
// dump). Most rules are anchored literal prefixes ("^aten::", "^nccl") and the request regex
// starts with a literal ("request_ids:"), so a prefix or substring test decides nearly every
// name; the regex runs only when the test cannot rule it out, and anchored regexes are tried at
// position 0 only. The verdicts are exact consequences of the regex text (a differential test
// checks them against the plain regex over real and adversarial names).
// Pure value type; thread-safe to share once built.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "truffld/pattern.h"

namespace truffld::merge {

struct RegexPrefilter {
  enum class Verdict { kNo, kYes, kMaybe };

  bool anchored = false;                  // every top-level alternative starts with '^'
  bool exact = false;                     // ... and is nothing but '^' + a literal: no regex needed
  bool icase = false;
  std::vector<std::string> prefixes;      // anchored: the name starts with one of these
  std::vector<std::string> contains_any;  // the name contains one of these (lowercased if icase)
  // Anchored: the bytes a name may start with (bit c of word c / 64), from the prefixes' first
  // bytes, so most names are ruled out by one lookup.
  uint64_t first_bytes[4] = {0, 0, 0, 0};

  // Derives what the RE2 text `re` lets us conclude cheaply. `needs_any`: extra literals
  // of which a match must contain one (for rules whose text is too complex to analyse; given
  // lowercased when icase). Nothing is concluded from text it does not understand.
  static RegexPrefilter Analyse(std::string_view re, bool icase, std::vector<std::string> needs_any = {});

  // kNo: `name` cannot match; kYes: it matches (exact filters only); kMaybe: run the regex.
  Verdict Check(std::string_view name) const;

  // Whether `re` matches somewhere in `name`, with this filter in front of it.
  bool Search(std::string_view name, const Pattern& re) const;
};

// Whether an RE2 regex surely cannot tell apart two names that are equal up to their
// first ", " and differ after it only in which digits stand where (the numbered operator calls
// "aten::mm, seq = 1, op_id = 7" and "aten::mm, seq = 2, op_id = 9"): same verdict, matches at
// the same places. True when every top-level alternative either holds no digit outside {m,n}
// quantifiers and whole "0-9" bracket ranges and no \digit escape, or is '^' and a literal
// without a comma ("^c10d::"). Conservative: false may be said of a regex that is blind after
// all (only speed depends on it), true never of one that is not. Pure.
bool RegexNumberBlind(std::string_view re);

}  // namespace truffld::merge
