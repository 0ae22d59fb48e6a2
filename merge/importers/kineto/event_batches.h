// Private to the Kineto importer: the traceEvents array cut into batches of whole elements.
//
// simdjson's parsers index every structural character of a document before reading it: 4 bytes
// per `{`, `:`, `,`, ..., about 40 MB for a 53 MB trace, touched once and thrown away, so its
// page faults cost more kernel time than the rest of the import's memory together. Parsing the
// array a batch at a time (about `target` bytes each) lets one small index serve every batch.
//
// EventBatches finds the cuts and makes each batch a JSON array in place, without copying: a
// batch ends at a `}` followed by `,` and `{` (whitespace allowed between), and that comma is
// turned into the batch's `]` and then into the next batch's `[`. The array's own `[` opens the
// first batch; a `}` followed by `]` ends the last. Every changed byte is put back by Restore
// (or the destructor). The cut is found by looking at bytes, not by parsing, so it can be wrong
// where such a sequence sits inside a string or a nested array of objects: the batch is then not
// valid JSON, and the caller, which parses and checks each batch, must then give up on the
// batches and read the document whole. Pure: no I/O, no parser.
// Thread-safety: one per document; the document must not be read by others while it is in use.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace truffld::merge::kineto {

// JSON's whitespace (RFC 8259): space, tab, line feed, carriage return.
inline bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

class EventBatches {
 public:
  // One batch: doc[begin] is '[' and doc[end - 1] is ']'; `last` when that ']' closes the
  // traceEvents array itself.
  struct Batch {
    size_t begin = 0, end = 0;
    bool last = false;
  };
  enum class Step {
    kBatch,     // the next batch is ready
    kNeedMore,  // the bytes held end before the next cut could be decided: call Moved with more
    kNone,      // no more batches: the last was returned, or no cut exists before the document ends
  };

  // `doc`: `size` bytes of the document (writable), from its start or from where the caller
  // last moved it (Moved). `open`: offset of the '[' that opens traceEvents. `target`: bytes
  // per batch (at least 1); a batch runs to the first cut past it. `complete`: the document ends
  // at doc + size (else more may follow, and a cut that needs bytes beyond is not decided).
  EventBatches(char* doc, size_t size, size_t open, size_t target, bool complete = true);
  ~EventBatches() { Restore(); }
  EventBatches(const EventBatches&) = delete;
  EventBatches& operator=(const EventBatches&) = delete;

  // The next batch into *out (kBatch), or what stopped it.
  Step Next(Batch* out);

  // Offset where the next batch starts: the bytes before it are no longer needed.
  size_t needed_from() const { return begin_; }

  // The caller dropped the first `dropped` bytes (at most needed_from()) and now holds `size`
  // bytes at `doc`, more of the same document; `complete`: it ends there.
  void Moved(char* doc, size_t size, size_t dropped, bool complete);

  // Puts back every byte the batches changed that is still held. Idempotent.
  void Restore();

 private:
  enum class Found { kCut, kNoCut, kUndecided };
  // The first `}` at or after `from` that ends an element: followed by `,` and `{` (*last
  // false; *at is the comma's offset) or by `]` (*last true; *at is the `]`'s).
  Found FindCut(size_t from, size_t* at, bool* last) const;
  size_t SkipSpace(size_t i) const;

  char* doc_;
  size_t size_;
  size_t begin_;  // where the next batch starts ('[' once it is returned)
  size_t target_;
  bool complete_;
  bool done_ = false;
  std::vector<size_t> commas_;  // offsets of commas turned into brackets
};

}  // namespace truffld::merge::kineto
