// ElementScanner (see element_scan.h): a damaged JSON array read one element at a time.
#include "importers/kineto/element_scan.h"

#include "importers/kineto/event_batches.h"  // IsJsonSpace

namespace truffld::merge::kineto {

namespace {
constexpr size_t kNpos = std::string_view::npos;
constexpr size_t kMaxDepth = 1024;

bool EndsScalar(char c) { return IsJsonSpace(c) || c == ',' || c == ']' || c == '}'; }
}  // namespace

size_t MatchValue(std::string_view doc, size_t begin, size_t* stop, size_t limit) {
  auto fail = [&](size_t at) {
    if (stop) *stop = at;
    return kNpos;
  };
  if (begin >= doc.size()) return fail(doc.size());
  if (limit < doc.size() - begin) doc = doc.substr(0, begin + limit);
  const char first = doc[begin];
  if (first != '{' && first != '[' && first != '"') {
    size_t i = begin;
    while (i < doc.size() && !EndsScalar(doc[i])) ++i;
    if (stop) *stop = i;
    return i;
  }
  char stack[kMaxDepth];
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = begin; i < doc.size(); ++i) {
    const char c = doc[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      if (!in_string && depth == 0) return stop ? (*stop = i + 1) : i + 1;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (depth == kMaxDepth) return fail(i);
      stack[depth++] = c;
    } else if (c == '}' || c == ']') {
      if (depth == 0 || stack[depth - 1] != (c == '}' ? '{' : '[')) return fail(i);
      if (--depth == 0) return stop ? (*stop = i + 1) : i + 1;
    }
  }
  return fail(doc.size());
}

ElementScanner::ElementScanner(std::string_view doc, size_t open, Validator valid)
    : doc_(doc), valid_(std::move(valid)), pos_(open + 1) {}

size_t ElementScanner::SkipSpace(size_t i) const {
  while (i < doc_.size() && IsJsonSpace(doc_[i])) ++i;
  return i;
}

size_t ElementScanner::GoodElementAt(size_t at) const {
  const size_t end = MatchValue(doc_, at, nullptr, kMaxCandidateBytes);
  if (end == kNpos || end == at) return kNpos;
  const size_t after = SkipSpace(end);
  if (after >= doc_.size() || (doc_[after] != ',' && doc_[after] != ']')) return kNpos;
  return valid_(doc_.substr(at, end - at)) ? end : kNpos;
}

ElementSpan ElementScanner::Resync(size_t begin, size_t stop, const char* why) {
  // A bad closer ']' is most likely the array's own (its last element cut short): candidates
  // are looked for before it only.
  const bool closer = stop < doc_.size() && doc_[stop] == ']';
  const size_t limit = closer ? stop : doc_.size();
  for (size_t p = doc_.find('{', begin + 1); p != kNpos && p < limit; p = doc_.find('{', p + 1)) {
    size_t prev = p;
    while (prev > begin && IsJsonSpace(doc_[prev - 1])) --prev;
    if (prev == begin || doc_[prev - 1] != ',') continue;
    if (GoodElementAt(p) == kNpos) continue;
    pos_ = p;
    return {ElementSpan::Kind::kBad, begin, prev - 1, why};
  }
  pos_ = closer ? stop : doc_.size();
  return {ElementSpan::Kind::kBad, begin, pos_, why};
}

ElementSpan ElementScanner::Take(size_t begin, size_t end) {
  const size_t after = SkipSpace(end);
  if (after < doc_.size() && (doc_[after] == ',' || doc_[after] == ']')) {
    pos_ = doc_[after] == ',' ? after + 1 : after;
    if (valid_(doc_.substr(begin, end - begin))) return {ElementSpan::Kind::kElement, begin, end};
    return {ElementSpan::Kind::kBad, begin, end, "an element that is not valid JSON"};
  }
  if (after < doc_.size() && doc_[after] == '{' && valid_(doc_.substr(begin, end - begin))) {
    pos_ = after;  // `}{`: both kept, the missing comma reported
    pending_ = {ElementSpan::Kind::kBad, end, after, "no ',' between two elements", false};
    has_pending_ = true;
    return {ElementSpan::Kind::kElement, begin, end};
  }
  return Resync(begin, after, "an element followed by neither ',' nor ']'");
}

ElementSpan ElementScanner::Next() {
  if (has_pending_) {
    has_pending_ = false;
    return pending_;
  }
  if (done_) return {ElementSpan::Kind::kEnd, doc_.size(), doc_.size()};
  const size_t i = SkipSpace(pos_);
  if (i >= doc_.size()) {
    done_ = true;
    return {ElementSpan::Kind::kEnd, i, i};
  }
  if (doc_[i] == ']') {
    done_ = true;
    pos_ = i + 1;
    return {ElementSpan::Kind::kClose, i, i + 1};
  }
  if (doc_[i] == ',') {
    pos_ = i + 1;
    return {ElementSpan::Kind::kBad, i, i + 1, "an empty element (one ',' too many)"};
  }
  size_t stop = 0;
  const size_t end = MatchValue(doc_, i, &stop);
  if (end != kNpos && end > i) return Take(i, end);
  return Resync(i, stop, stop >= doc_.size() ? "an element cut short by the end of the document"
                                             : "an element whose brackets do not match");
}

}  // namespace truffld::merge::kineto
