// Private to the Kineto importer: the walk over traceEvents elements, shared by the two ways of
// reading a document (whole, or in batches: event_batches.h).
//
// Walk is the import's state (the TraceFile being filled, counters, the element number, the
// kept args); WalkEvents imports the elements of one simdjson on-demand array into it, in
// order, so reading the array whole or batch by batch with one Walk gives the same TraceFile.
// Locator turns pointers into the document into "name:LINE (byte N)" for messages.
// Thread-safety: one Walk per import; nothing shared.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <simdjson.h>

#include "importers/kineto/kept_args.h"
#include "truffld/merge/event.h"

namespace truffld::merge::kineto {

// Turns pointers into the document into "name:LINE (byte N)". Offsets must be non-decreasing
// from call to call (an earlier one is clamped to the last), so counting newlines stays linear
// in the document size however many problems are reported. The text it counts in may be the
// whole document or a window on it that moves forward (Slide).
class Locator {
 public:
  Locator(std::string_view doc, const std::string& name) : doc_(doc), name_(name) {}
  std::string Where(const char* p);
  // The window now holds the document from byte `base` on (base <= the old window's end; lines
  // are counted up to it in the old window first). Call it before the old window's bytes change.
  void Slide(uint64_t base);
  void SetWindow(std::string_view window) { doc_ = window; }

 private:
  void CountTo(uint64_t off);  // absolute offset, within the window

  std::string_view doc_;  // the document from byte base_ on
  const std::string& name_;
  uint64_t base_ = 0;
  uint64_t last_ = 0;
  uint64_t line_ = 1;
};

// Where the on-demand document stands (nullptr at its end).
const char* Location(simdjson::ondemand::document& doc);

// The state of one import's walk over traceEvents.
struct Walk {
  TraceFile* out = nullptr;
  Locator* loc = nullptr;
  simdjson::ondemand::document* doc = nullptr;  // the document (or batch) being walked
  uint64_t kept[16] = {};                       // events kept, by EventKind
  uint64_t index = 0;                           // 1-based number of the current element
  KeptArgs* args = nullptr;                     // ImportOptions::keep_args; else null
  Locator* args_loc = nullptr;                  // for args reports, which come after the walk has moved on
  // Args reports found early (CheckArgs with hold), as (where, message): reported at the next
  // check, so that they come in the order the whole-document reader gives them.
  std::vector<std::pair<std::string, std::string>> held_args;
};

// Imports every element of `events` into w->out. Returns the error that stopped the walk
// (malformed JSON); elements before it are kept.
simdjson::error_code WalkEvents(simdjson::ondemand::array events, Walk* w);

// Imports one element, an object, into w->out (w->index already counts it). Returns the
// error that stopped it (malformed JSON); nothing of the element is kept then.
simdjson::error_code WalkObject(simdjson::ondemand::object obj, Walk* w);

// Checks the args objects kept since the last call and reports the invalid ones, after any
// held from before. `hold`: keep them for the next call instead (the window is about to move:
// their text and lines must be read now, but the whole-document reader reports them later).
void CheckArgs(Walk* w, bool hold = false);

}  // namespace truffld::merge::kineto
