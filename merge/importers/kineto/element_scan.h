// Private to the Kineto importer: the elements of a JSON array found by looking at bytes, for
// reading a damaged traceEvents array one element at a time (recover.cc).
//
// simdjson stops at the first invalid byte of a document (a raw tab inside a string, a bad
// UTF-8 byte, `},,{`, an element cut short), so one bad element would cost every event after
// it. ElementScanner walks the array's text with a string-aware bracket matcher instead: each
// element is handed out as a byte span, checked by the caller's validator, and a damaged one is
// handed out as a bad span while the scan resynchronises at the next element: the next `{`
// after a `,` that opens a valid element followed by `,` or `]`. Pure logic: no I/O, no parser
// (the validator is the caller's).
// Thread-safety: one per scan; the text must not change while it is in use.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

namespace truffld::merge::kineto {

// End of the JSON value that starts at doc[begin] (one past its last byte), matching brackets
// and skipping strings; npos when it does not end well: a closer of the wrong kind, the end of
// `doc` first, or deeper than 1024. *stop (if given) is where it stopped: the bad closer's
// offset, or doc.size(). Scalars end before the next space, ',', ']' or '}'. At most `limit`
// bytes are looked at (a value longer fails as if the document ended there).
size_t MatchValue(std::string_view doc, size_t begin, size_t* stop = nullptr,
                  size_t limit = std::string_view::npos);

// The longest element a resynchronisation takes for the next good one (bytes). In damaged
// text (a corrupt compressed stream decodes to pages of it) brackets that never match would
// otherwise make each candidate's scan run to the document's end.
constexpr size_t kMaxCandidateBytes = size_t{64} << 10;

// One piece of the array, in document byte offsets.
struct ElementSpan {
  enum class Kind {
    kElement,  // [begin, end) is one valid element
    kBad,      // [begin, end) was skipped: `why` says what was wrong
    kClose,    // the array's ']' is at begin
    kEnd,      // the document ended at begin before the array closed
  };
  Kind kind = Kind::kEnd;
  size_t begin = 0, end = 0;
  const char* why = "";
  bool lost = true;  // kBad: an element was skipped (false: only a separator was wrong)
};

class ElementScanner {
 public:
  // `valid(text)`: whether one element's text is valid JSON.
  using Validator = std::function<bool(std::string_view)>;
  // `open`: offset of the array's '['.
  ElementScanner(std::string_view doc, size_t open, Validator valid);

  // The next piece; after kClose or kEnd, kEnd again.
  ElementSpan Next();

 private:
  // A valid element at `at` followed by ',' or ']': its end, else npos.
  size_t GoodElementAt(size_t at) const;
  // The bad bytes from `begin`, up to the next good element (or `stop`'s ']', or the end).
  ElementSpan Resync(size_t begin, size_t stop, const char* why);
  size_t SkipSpace(size_t i) const;
  ElementSpan Take(size_t begin, size_t end);

  std::string_view doc_;
  Validator valid_;
  size_t pos_;
  bool done_ = false;
  ElementSpan pending_;  // a problem found with the element just handed out, handed out next
  bool has_pending_ = false;
};

}  // namespace truffld::merge::kineto
