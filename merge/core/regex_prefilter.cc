// RegexPrefilter: see regex_prefilter.h.
#include "truffld/merge/regex_prefilter.h"

#include <algorithm>
#include <cctype>

namespace truffld::merge {
namespace {

// Splits `re` at its top-level '|' (outside groups and bracket classes, not escaped).
std::vector<std::string_view> Alternatives(std::string_view re) {
  std::vector<std::string_view> out;
  int depth = 0;
  bool in_class = false;
  size_t begin = 0;
  for (size_t i = 0; i < re.size(); ++i) {
    const char c = re[i];
    if (c == '\\') { ++i; continue; }
    if (in_class) { if (c == ']') in_class = false; continue; }
    if (c == '[') in_class = true;
    else if (c == '(') ++depth;
    else if (c == ')') --depth;
    else if (c == '|' && depth == 0) { out.push_back(re.substr(begin, i - begin)); begin = i + 1; }
  }
  out.push_back(re.substr(begin));
  return out;
}

// The literal text an alternative must begin with (from `pos`), and whether that is all of it.
std::string LeadingLiteral(std::string_view alt, size_t pos, bool* pure) {
  std::string lit;
  *pure = false;
  for (size_t i = pos; i < alt.size(); ++i) {
    char c = alt[i];
    if (c == '*' || c == '?' || c == '{') {  // the last literal is optional (or counted): drop it
      if (!lit.empty()) lit.pop_back();
      return lit;
    }
    if (c == '\\') {
      if (i + 1 >= alt.size()) return lit;
      const char n = alt[i + 1];
      if (std::isalnum(static_cast<unsigned char>(n)) || n == '_') return lit;  // \b \d \w \1 ...
      c = n;  // escaped punctuation is itself
      ++i;
    } else if (std::string_view(".[]()+|^$").find(c) != std::string_view::npos) {
      return lit;  // '+' keeps the char before it (at least once) but ends the literal run
    }
    // A quantifier after this char would make it optional: look ahead.
    if (i + 1 < alt.size() && (alt[i + 1] == '*' || alt[i + 1] == '?' || alt[i + 1] == '{')) return lit;
    lit += c;
  }
  *pure = true;
  return lit;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool StartsWith(std::string_view s, std::string_view p, bool icase) {
  if (s.size() < p.size()) return false;
  if (!icase) return s.compare(0, p.size(), p) == 0;
  for (size_t i = 0; i < p.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != static_cast<unsigned char>(p[i])) return false;
  return true;
}

}  // namespace

RegexPrefilter RegexPrefilter::Analyse(std::string_view re, bool icase, std::vector<std::string> needs_any) {
  RegexPrefilter f;
  f.icase = icase;
  if (re.empty()) return f;
  const auto alts = Alternatives(re);
  bool all_anchored = true, all_pure = true, all_literal = true;
  std::vector<std::string> lits;
  for (std::string_view a : alts) {
    const bool anchored = !a.empty() && a[0] == '^';
    bool pure = false;
    std::string lit = LeadingLiteral(a, anchored ? 1 : 0, &pure);
    all_anchored &= anchored;
    all_pure &= pure;
    all_literal &= !lit.empty();
    lits.push_back(icase ? Lower(lit) : lit);
  }
  f.anchored = all_anchored;
  if (all_anchored && all_literal) {
    f.prefixes = lits;
    f.exact = all_pure;
    for (const std::string& p : f.prefixes)
      for (int c = 0; c < 256; ++c)  // every byte StartsWith accepts as p's first
        if (icase ? std::tolower(c) == static_cast<unsigned char>(p[0]) : c == static_cast<unsigned char>(p[0]))
          f.first_bytes[c / 64] |= uint64_t{1} << (c % 64);
  } else if (all_literal) {
    f.contains_any = lits;
  }
  if (f.contains_any.empty() && !needs_any.empty()) f.contains_any = std::move(needs_any);
  return f;
}

RegexPrefilter::Verdict RegexPrefilter::Check(std::string_view name) const {
  if (!prefixes.empty()) {
    if (name.empty()) return Verdict::kNo;  // every prefix has a byte
    const unsigned char c0 = static_cast<unsigned char>(name[0]);
    if (!(first_bytes[c0 / 64] >> (c0 % 64) & 1)) return Verdict::kNo;
    const bool any = std::any_of(prefixes.begin(), prefixes.end(),
                                 [&](const std::string& p) { return StartsWith(name, p, icase); });
    if (!any) return Verdict::kNo;
    if (exact) return Verdict::kYes;
  }
  if (!contains_any.empty()) {
    // Case-insensitive: the lowered name, on the stack when it fits (callers cut names to 4 KiB).
    char small[4096];
    std::string big;
    std::string_view hay = name;
    if (icase) {
      char* out = small;
      if (name.size() > sizeof small) {
        big.resize(name.size());
        out = big.data();
      }
      for (size_t i = 0; i < name.size(); ++i)
        out[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(name[i])));
      hay = std::string_view(out, name.size());
    }
    const bool any = std::any_of(contains_any.begin(), contains_any.end(),
                                 [&](const std::string& p) { return hay.find(p) != std::string_view::npos; });
    if (!any) return Verdict::kNo;
  }
  return Verdict::kMaybe;
}

bool RegexPrefilter::Search(std::string_view name, const Pattern& re) const {
  switch (Check(name)) {
    case Verdict::kNo: return false;
    case Verdict::kYes: return true;
    case Verdict::kMaybe: break;
  }
  return re.Search(name, anchored);
}

namespace {

bool Digit(char c) { return c >= '0' && c <= '9'; }

// '^' and a literal to the end (LeadingLiteral: all of it), holding no ',' ("^c10d::").
bool AnchoredLiteralWithoutComma(std::string_view alt) {
  if (alt.empty() || alt[0] != '^') return false;
  bool pure;
  const std::string lit = LeadingLiteral(alt, 1, &pure);
  return pure && lit.find(',') == std::string::npos;
}

// No digit outside {m,n} quantifiers and whole "0-9" bracket ranges; no \digit escape.
bool TreatsDigitsAlike(std::string_view re) {
  const size_t n = re.size();
  bool in_class = false;
  for (size_t i = 0; i < n; ++i) {
    const char c = re[i];
    if (c == '\\') {  // the escaped character is skipped; \1 (a backreference) or \0 is not alike
      if (i + 1 < n && Digit(re[i + 1])) return false;
      ++i;              // \x31, \u0031: the digits after the letter fail below
      continue;
    }
    if (in_class) {
      if (c == ']') { in_class = false; continue; }
      if (!Digit(c)) continue;
      // Only a whole "0-9", not the end of a range ("+-0") nor the start of one ("9-A").
      if (re.substr(i, 3) != "0-9" || re[i - 1] == '-' || (i + 3 < n && re[i + 3] == '-')) return false;
      i += 2;
      continue;
    }
    if (c == '[') {
      in_class = true;
      if (i + 1 < n && re[i + 1] == '^') ++i;
      if (i + 1 < n && re[i + 1] == ']') return false;  // "[]", "[^]": not assumed to be read alike
      continue;
    }
    if (c == '{') {  // a quantifier {m}, {m,} or {m,n}: its digits count repeats, not text
      size_t j = i + 1;
      while (j < n && Digit(re[j])) ++j;
      const bool m = j > i + 1;
      if (m && j < n && re[j] == ',') for (++j; j < n && Digit(re[j]);) ++j;
      if (m && j < n && re[j] == '}') { i = j; continue; }
    }
    if (Digit(c)) return false;
  }
  return true;
}

}  // namespace

bool RegexNumberBlind(std::string_view re) {
  // Per top-level alternative: one that treats digits alike, or an anchored literal without a
  // comma, which can only match text before the name's first ", " (its digits are never the
  // ones that differ).
  for (std::string_view alt : Alternatives(re))
    if (!AnchoredLiteralWithoutComma(alt) && !TreatsDigitsAlike(alt)) return false;
  return true;
}

}  // namespace truffld::merge
