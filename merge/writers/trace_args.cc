// trace.json's slice names and args (see trace_args.h).
#include "writers/trace_args.h"
#include "writers/step_phase.h"

#include <algorithm>

#include "truffld/merge/classify.h"
#include "truffld/step_tags.h"

namespace truffld::merge {
namespace {

bool KeyChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// "-12" or "42" that fits an int64 comfortably (at most 18 digits): written as a JSON number.
bool IsInteger(std::string_view v) {
  if (!v.empty() && v.front() == '-') v.remove_prefix(1);
  return !v.empty() && v.size() <= 18 && (v.size() == 1 || v.front() != '0') &&
         std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Whether the kept args object text (compact) has member `key`.
bool HasMember(std::string_view args, std::string_view key) {
  for (size_t at = args.find(key); at != std::string_view::npos; at = args.find(key, at + 1))
    if (at > 0 && args[at - 1] == '"' && at + key.size() + 1 < args.size() && args[at + key.size()] == '"' &&
        args[at + key.size() + 1] == ':')
      return true;
  return false;
}

}  // namespace

bool NameFields(std::string_view rest, std::vector<NameField>* out) {
  out->clear();
  bool all = true;
  size_t i = 0;
  while (i < rest.size()) {
    if (rest.compare(i, 2, ", ") != 0) return false;  // only ", "-separated pieces
    i += 2;
    const size_t begin = i;
    int depth = 0;
    for (; i < rest.size(); ++i) {
      const char c = rest[i];
      if (c == '[' || c == '(' || c == '{') ++depth;
      else if ((c == ']' || c == ')' || c == '}') && depth > 0) --depth;
      else if (depth == 0 && c == ',' && i + 1 < rest.size() && rest[i + 1] == ' ') break;
    }
    const std::string_view piece = rest.substr(begin, i - begin);
    const size_t eq = piece.find('=');
    const std::string_view key = Trim(piece.substr(0, eq == std::string_view::npos ? 0 : eq));
    if (eq == std::string_view::npos || key.empty() || !std::all_of(key.begin(), key.end(), KeyChar)) {
      all = false;
      continue;
    }
    out->emplace_back(key, Trim(piece.substr(eq + 1)));
  }
  return all;
}

SliceNamer::SliceNamer(const MergeResult& r, JsonOut* out) : r_(r), out_(*out), strings_(r, out) {
  for (uint32_t t = 0; t < r.trees.size(); ++t)
    if (r.trees[t].view == View::kVertical) step_roots_.emplace_back(r.trees[t].root, t);
  std::sort(step_roots_.begin(), step_roots_.end());
}

void SliceNamer::Name(uint32_t, const Node& n, const Event* e) {
  renamed_ = e && NamedByFamily(n.layer) && n.family != e->name && n.family != kNoStr &&
             !r_.Str(n.file, n.family).empty();
  strings_.Write(n.file, renamed_ ? n.family : e ? e->name : r_.NameId(n));
}

void SliceNamer::Key(std::string_view key) {
  out_.Raw(open_ ? ",\"" : ",\"args\":{\"");
  open_ = true;
  out_.Raw(key);
  out_.Raw("\":");
}

void SliceNamer::Args(uint32_t i, const Node& n, const Event* e) {
  open_ = false;
  while (next_root_ < step_roots_.size() && step_roots_[next_root_].first < i) ++next_root_;
  if (next_root_ < step_roots_.size() && step_roots_[next_root_].first == i) {
    StepArgs(r_.trees[step_roots_[next_root_].second], r_.Name(n));
  }
  const TraceFile& f = r_.files[n.file];
  std::string_view kept;
  if (e && !f.args.empty()) kept = f.strings.Get(f.args[n.event]);
  if (renamed_) OperatorArgs(n, *e, kept);
  if (kept.size() > 2) {  // the members of {...}
    out_.Raw(open_ ? "," : ",\"args\":{");
    open_ = true;
    out_.Raw(kept.substr(1, kept.size() - 2));
  }
  if (const int64_t corr = e ? f.Correlation(*e) : kNone; corr != kNone && !HasMember(kept, "correlation")) {
    Key("correlation");
    out_.Int(corr);
  }
  if (open_) out_.Char('}');
}

void SliceNamer::StepArgs(const Tree& t, std::string_view name) {
  Key("step_index");
  out_.Int(t.step_index);
  if (t.rank) {
    Key("rank");
    out_.Int(*t.rank);
  }
  const std::vector<std::string>& reqs = r_.request_sets[t.requests];
  Key("request_count");
  out_.Int(int64_t(reqs.size()));
  Key("requests");
  out_.Char('[');
  for (size_t k = 0; k < reqs.size() && k < kMaxRequestsListed; ++k) {
    if (k) out_.Char(',');
    out_.String(reqs[k]);
  }
  out_.Char(']');
  Key("phase");
  out_.String(StepPhase(r_, t));
  for (std::string_view tag : {"tokens", "ctx"}) {
    if (const int64_t v = StepNameTag(name, tag); v >= 0) {
      Key(tag);
      out_.Int(v);
    }
  }
  if (t.implicit_step) {
    Key("implicit_step");
    out_.Raw("true");
  }
}

void SliceNamer::OperatorArgs(const Node& n, const Event& e, std::string_view kept) {
  const std::string_view name = r_.Str(n.file, e.name), family = r_.Str(n.file, n.family);
  const bool prefix = name.substr(0, family.size()) == family;
  const bool complete = prefix && NameFields(name.substr(family.size()), &fields_);
  if (!prefix) fields_.clear();
  bool dropped = false;  // a pair not written: args.name keeps it
  for (size_t k = 0; k < fields_.size(); ++k) {
    const auto& [key, value] = fields_[k];
    const auto same_key = [&key = key](const NameField& f) { return f.first == key; };
    if (key == "name" || key == "correlation" || HasMember(kept, key) ||
        std::any_of(fields_.begin(), fields_.begin() + long(k), same_key)) {
      dropped = true;
      continue;
    }
    Key(key);
    if (IsInteger(value)) out_.Raw(value);
    else out_.String(value);
  }
  if (!complete || dropped) {
    // The original name; under "name" unless the profiler's args hold that key already.
    Key(HasMember(kept, "name") ? "slice_name" : "name");
    strings_.Write(n.file, e.name);
  }
}

}  // namespace truffld::merge
