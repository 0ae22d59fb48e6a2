// EventBatches (see event_batches.h): cuts in the traceEvents array, found by looking at bytes.
#include "importers/kineto/event_batches.h"

#include <cstring>

namespace truffld::merge::kineto {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

}  // namespace

EventBatches::EventBatches(char* doc, size_t size, size_t open, size_t target)
    : doc_(doc), size_(size), begin_(open), target_(target ? target : 1) {}

size_t EventBatches::SkipSpace(size_t i) const {
  while (i < size_ && IsSpace(doc_[i])) ++i;
  return i;
}

std::optional<size_t> EventBatches::FindCut(size_t from, bool* last) const {
  while (from < size_) {
    const void* hit = std::memchr(doc_ + from, '}', size_ - from);
    if (!hit) return std::nullopt;
    const size_t brace = static_cast<size_t>(static_cast<const char*>(hit) - doc_);
    const size_t next = SkipSpace(brace + 1);
    if (next < size_ && doc_[next] == ']') {
      *last = true;
      return next;
    }
    if (next < size_ && doc_[next] == ',') {
      const size_t open = SkipSpace(next + 1);
      if (open < size_ && doc_[open] == '{') {
        *last = false;
        return next;
      }
    }
    from = brace + 1;
  }
  return std::nullopt;
}

std::optional<EventBatches::Batch> EventBatches::Next() {
  if (done_) return std::nullopt;
  if (!commas_.empty()) doc_[begin_] = '[';  // the comma that closed the batch before opens this one
  // An empty array: one batch "[]".
  if (const size_t first = SkipSpace(begin_ + 1); first < size_ && doc_[first] == ']') {
    done_ = true;
    return Batch{begin_, first + 1, true};
  }
  bool last = false;
  std::optional<size_t> cut;
  if (begin_ + target_ < size_) cut = FindCut(begin_ + target_, &last);
  if (!cut) {  // none past the target: the last one after begin (one scan, however many)
    bool more_last = false;
    size_t from = begin_ + 1;
    while (std::optional<size_t> c = FindCut(from, &more_last)) {
      cut = c;
      last = more_last;
      from = *c + 1;
    }
  }
  if (!cut) {
    done_ = true;
    return std::nullopt;
  }
  const Batch b{begin_, *cut + 1, last};
  done_ = last;
  if (!last) {
    commas_.push_back(*cut);
    doc_[*cut] = ']';
    begin_ = *cut;
  }
  return b;
}

void EventBatches::Restore() {
  for (size_t at : commas_) doc_[at] = ',';
  commas_.clear();
}

}  // namespace truffld::merge::kineto
