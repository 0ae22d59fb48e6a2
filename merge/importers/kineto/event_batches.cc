// EventBatches (see event_batches.h): cuts in the traceEvents array, found by looking at bytes.
#include "importers/kineto/event_batches.h"

#include <cstring>

namespace truffld::merge::kineto {
EventBatches::EventBatches(char* doc, size_t size, size_t open, size_t target, bool complete)
    : doc_(doc), size_(size), begin_(open), target_(target ? target : 1), complete_(complete) {}

size_t EventBatches::SkipSpace(size_t i) const {
  while (i < size_ && IsJsonSpace(doc_[i])) ++i;
  return i;
}

EventBatches::Found EventBatches::FindCut(size_t from, size_t* at, bool* last) const {
  while (from < size_) {
    const void* hit = std::memchr(doc_ + from, '}', size_ - from);
    if (!hit) break;
    const size_t brace = static_cast<size_t>(static_cast<const char*>(hit) - doc_);
    const size_t next = SkipSpace(brace + 1);
    const size_t open = next < size_ && doc_[next] == ',' ? SkipSpace(next + 1) : next;
    if (open >= size_) break;  // the bytes end before this `}` is decided
    if (doc_[next] == ']' || (doc_[next] == ',' && doc_[open] == '{')) {
      *at = next;
      *last = doc_[next] == ']';
      return Found::kCut;
    }
    from = brace + 1;
  }
  return complete_ ? Found::kNoCut : Found::kUndecided;
}

EventBatches::Step EventBatches::Next(Batch* out) {
  if (done_) return Step::kNone;
  if (!commas_.empty() && commas_.back() == begin_) doc_[begin_] = '[';  // the last batch's ']' opens this one
  size_t cut = 0;
  bool last = false;
  Found found = Found::kNoCut;
  if (const size_t first = SkipSpace(begin_ + 1); first >= size_) {
    found = complete_ ? Found::kNoCut : Found::kUndecided;
  } else if (doc_[first] == ']') {  // an empty array: one batch "[]"
    found = Found::kCut, cut = first, last = true;
  } else if (begin_ + target_ < size_ || !complete_) {
    found = begin_ + target_ < size_ ? FindCut(begin_ + target_, &cut, &last) : Found::kUndecided;
  }
  if (found == Found::kNoCut && complete_) {  // none past the target: the last one after begin
    size_t at = 0;
    bool at_last = false;
    for (size_t from = begin_ + 1; FindCut(from, &at, &at_last) == Found::kCut; from = at + 1) {
      found = Found::kCut, cut = at, last = at_last;
    }
  }
  if (found == Found::kUndecided) return Step::kNeedMore;
  if (found != Found::kCut) {
    done_ = true;
    return Step::kNone;
  }
  *out = Batch{begin_, cut + 1, last};
  done_ = last;
  if (!last) {
    commas_.push_back(cut);
    doc_[cut] = ']';
    begin_ = cut;
  }
  return Step::kBatch;
}

void EventBatches::Moved(char* doc, size_t size, size_t dropped, bool complete) {
  std::vector<size_t> kept;
  for (size_t at : commas_)
    if (at >= dropped) kept.push_back(at - dropped);
  commas_ = std::move(kept);
  doc_ = doc;
  size_ = size;
  begin_ -= dropped;
  complete_ = complete;
}

void EventBatches::Restore() {
  for (size_t at : commas_) doc_[at] = ',';
  commas_.clear();
}

}  // namespace truffld::merge::kineto
