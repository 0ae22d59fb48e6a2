// The batch reader of Kineto documents (see document_parts.h, ImportInBatches).
//
// traceEvents is parsed a batch of elements at a time, in place (EventBatches), with one
// simdjson parser whose index is sized for a batch and reused, instead of an index of the whole
// document. The rest of the document, the top-level object without the array's elements, is
// parsed afterwards as a small copy (the "skeleton"). The batches are an optimisation only: on
// anything unexpected the reader hands the document back to the whole-document reader, which
// then finds and reports the problem as it always has.
#include <cstring>

#include "importers/kineto/document_parts.h"
#include "importers/kineto/event_batches.h"

namespace truffld::merge::kineto {
namespace {

namespace od = simdjson::ondemand;

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Offset of the '[' that opens the first "traceEvents": [ in the text, npos if none. Whether
// it is the top-level member is checked later, on the skeleton.
size_t FindEventsArray(std::string_view text) {
  constexpr std::string_view kKey = "\"traceEvents\"";
  const size_t key = text.find(kKey);
  if (key == std::string_view::npos) return key;
  size_t i = key + kKey.size();
  while (i < text.size() && IsSpace(text[i])) ++i;
  if (i >= text.size() || text[i] != ':') return std::string_view::npos;
  ++i;
  while (i < text.size() && IsSpace(text[i])) ++i;
  return i < text.size() && text[i] == '[' ? i : std::string_view::npos;
}

// Walks every batch into `w`. Returns the offset of the ']' that closes traceEvents, npos when
// a batch is not valid (the caller reads the document whole).
size_t WalkBatches(char* text, size_t size, size_t capacity, size_t open, size_t target, Walk* w) {
  EventBatches batches(text, size, open, target);
  od::parser parser;
  // Room for an ordinary batch from the start; a longer one makes iterate() allocate more.
  // One level less than the whole-document reader allows: a batch lacks the top-level object.
  if (parser.allocate(std::min(size, 2 * target) + simdjson::SIMDJSON_PADDING,
                      simdjson::DEFAULT_MAX_DEPTH - 1) != simdjson::SUCCESS)
    return std::string_view::npos;
  while (std::optional<EventBatches::Batch> b = batches.Next()) {
    od::document doc;
    od::array events;
    const simdjson::padded_string_view view(text + b->begin, b->end - b->begin, capacity - b->begin);
    if (parser.iterate(view).get(doc) || doc.get_array().get(events)) return std::string_view::npos;
    w->doc = &doc;
    if (WalkEvents(events, w)) return std::string_view::npos;
    const char* rest = Location(doc);  // nullptr: the batch was read to its end
    w->doc = nullptr;
    if (!rest && b->last) return b->end - 1;
    if (!rest) continue;
    // The array closed inside the batch: its cut lay after traceEvents, in later members.
    size_t close = static_cast<size_t>(rest - text);
    while (close > b->begin && IsSpace(text[close - 1])) --close;
    return close > b->begin && text[close - 1] == ']' ? close - 1 : std::string_view::npos;
  }
  return std::string_view::npos;
}

// Reads the top-level members from the skeleton (the document with traceEvents emptied, whose
// '[' is at `open`). False when the whole-document reader must decide: not exactly one
// traceEvents at `open`, malformed JSON, or anything it would report.
bool ReadSkeleton(const simdjson::padded_string& skeleton, size_t open, TraceFile* tf,
                  std::optional<int64_t>* base_ns) {
  od::parser parser;
  od::document doc;
  od::object top;
  if (parser.iterate(skeleton).get(doc) || doc.get_object().get(top)) return false;
  bool found = false;
  for (auto field : top) {
    std::string_view key;
    od::value v;
    if (field.unescaped_key().get(key) || field.value().get(v)) return false;
    if (key == "traceEvents") {
      if (v.raw_json_token().data() != skeleton.data() + open || found) return false;
      found = true;
    } else if (key == "distributedInfo") {
      ReadDistributedInfo(v, &tf->meta);
    } else if (key == "baseTimeNanoseconds") {
      if (!(*base_ns = ParseBaseTime(v.raw_json_token()))) return false;
    }
  }
  return found && Location(doc) == nullptr;  // nothing after the top-level object
}

}  // namespace

std::optional<Result<TraceFile>> ImportInBatches(char* text, size_t size, size_t capacity,
                                                 const std::string& name,
                                                 const ImportOptions& options) {
  const std::string_view doc(text, size);
  const size_t open = FindEventsArray(doc);
  if (open == std::string_view::npos) return std::nullopt;
  TraceFile tf = NewKinetoFile(name);
  tf.ReserveEvents(size / 80, options.keep_args);  // an event takes >= ~80 bytes of JSON
  KeptArgs kept_args(&tf.strings, &tf.args);
  Locator loc(doc, name), args_loc(doc, name);
  Walk w{&tf, &loc, nullptr, {}, 0, options.keep_args ? &kept_args : nullptr, &args_loc};
  const size_t close = WalkBatches(text, size, capacity, open, options.kineto_batch_bytes, &w);
  if (close == std::string_view::npos) return std::nullopt;
  std::string skeleton_text(doc.substr(0, open + 1));
  skeleton_text.append(doc.substr(close));
  const simdjson::padded_string skeleton(skeleton_text);
  std::optional<int64_t> base_ns;
  if (!ReadSkeleton(skeleton, open, &tf, &base_ns)) return std::nullopt;
  if (w.args) CheckArgs(&w);
  return FinishImport(std::move(tf), w, base_ns, name, options);
}

}  // namespace truffld::merge::kineto
