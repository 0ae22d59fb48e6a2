// Pattern: see truffld/pattern.h.
#include "truffld/pattern.h"

#include <re2/re2.h>

namespace truffld {

Result<Pattern> Pattern::Compile(std::string_view text, bool icase) {
  RE2::Options opt;
  opt.set_encoding(RE2::Options::EncodingLatin1);
  opt.set_case_sensitive(!icase);
  opt.set_log_errors(false);
  auto re = std::make_shared<const RE2>(re2::StringPiece(text.data(), text.size()), opt);
  if (!re->ok()) return InvalidArgument("invalid RE2 pattern '" + std::string(text) + "': " + re->error());
  Pattern p;
  p.re_ = std::move(re);
  p.text_ = std::string(text);
  return p;
}

bool Pattern::Search(std::string_view text, bool at_start) const {
  if (!re_) return false;
  return re_->Match(re2::StringPiece(text.data(), text.size()), 0, text.size(),
                    at_start ? RE2::ANCHOR_START : RE2::UNANCHORED, nullptr, 0);
}

bool Pattern::SearchGroup1(std::string_view text, bool at_start, std::string_view* group) const {
  if (!re_ || re_->NumberOfCapturingGroups() < 1) return false;
  re2::StringPiece sub[2];
  if (!re_->Match(re2::StringPiece(text.data(), text.size()), 0, text.size(),
                  at_start ? RE2::ANCHOR_START : RE2::UNANCHORED, sub, 2))
    return false;
  if (sub[1].data() == nullptr) return false;  // the group did not take part in the match
  *group = std::string_view(sub[1].data(), sub[1].size());
  return true;
}

int Pattern::groups() const { return re_ ? re_->NumberOfCapturingGroups() : 0; }

}  // namespace truffld
