// The batch reader of Kineto documents (see document_parts.h, ImportInBatches).
//
// traceEvents is parsed a batch of elements at a time, in place (EventBatches), with one
// simdjson parser whose index is sized for a batch and reused, instead of an index of the whole
// document. The rest of the document, the top-level object without the array's elements, is
// parsed afterwards as a small copy (the "skeleton"). The batches are an optimisation only: on
// anything unexpected the reader hands the document back to the whole-document reader, which
// then finds and reports the problem as it always has.
#include "importers/kineto/document_parts.h"
#include "importers/kineto/event_batches.h"

namespace truffld::merge::kineto {
namespace {

namespace od = simdjson::ondemand;

// Moves the window on once the batches need bytes past it; false when the document cannot go on.
bool MoveOn(DocFeed* feed, EventBatches* batches, Walk* w) {
  if (w->args) CheckArgs(w, /*hold=*/true);  // pending args point into the bytes about to move
  const size_t keep = batches->needed_from();
  w->loc->Slide(feed->base() + keep);
  w->args_loc->Slide(feed->base() + keep);
  const uint64_t before = feed->base();
  const bool more = feed->Refill(keep);
  batches->Moved(feed->data(), feed->size(), static_cast<size_t>(feed->base() - before),
                 feed->complete() || !more);
  w->loc->SetWindow(feed->view());
  w->args_loc->SetWindow(feed->view());
  return more;
}

// Walks one batch into `w`. Returns kContinue, the offset of the ']' that closes traceEvents
// once it is reached, or npos when the batch is not valid (the caller reads the document whole).
constexpr size_t kContinue = std::string_view::npos - 1;
size_t WalkBatch(od::parser* parser, const DocFeed& feed, const EventBatches::Batch& b, Walk* w) {
  char* text = feed.data();
  od::document doc;
  od::array events;
  const simdjson::padded_string_view view(text + b.begin, b.end - b.begin,
                                          feed.size() + simdjson::SIMDJSON_PADDING - b.begin);
  if (parser->iterate(view).get(doc) || doc.get_array().get(events)) return std::string_view::npos;
  w->doc = &doc;
  const simdjson::error_code e = WalkEvents(events, w);
  const char* rest = e ? nullptr : Location(doc);  // nullptr: the batch was read to its end
  w->doc = nullptr;
  if (e) return std::string_view::npos;
  if (!rest) return b.last ? b.end - 1 : kContinue;
  // The array closed inside the batch: its cut lay after traceEvents, in later members.
  size_t close = static_cast<size_t>(rest - text);
  while (close > b.begin && IsJsonSpace(text[close - 1])) --close;
  return close > b.begin && text[close - 1] == ']' ? close - 1 : std::string_view::npos;
}

// Walks every batch into `w`. Returns the window offset of the ']' that closes traceEvents,
// npos when the document cannot be read in batches.
size_t WalkBatches(DocFeed* feed, size_t open, size_t target, Walk* w) {
  EventBatches batches(feed->data(), feed->size(), open, target, feed->complete());
  od::parser parser;
  // Room for an ordinary batch from the start; a longer one makes iterate() allocate more. One
  // level less than the whole-document reader allows: a batch lacks the top-level object.
  if (parser.allocate(std::min(feed->size(), 2 * target) + simdjson::SIMDJSON_PADDING,
                      simdjson::DEFAULT_MAX_DEPTH - 1) != simdjson::SUCCESS)
    return std::string_view::npos;
  for (;;) {
    EventBatches::Batch b;
    const EventBatches::Step step = batches.Next(&b);
    if (step == EventBatches::Step::kNone) return std::string_view::npos;
    if (step == EventBatches::Step::kNeedMore) {
      if (!MoveOn(feed, &batches, w)) return std::string_view::npos;
      continue;
    }
    if (const size_t close = WalkBatch(&parser, *feed, b, w); close != kContinue) return close;
  }
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
    } else if (!ReadTopMember(key, v, &tf->meta, base_ns)) {
      return false;  // the whole-document reader reports it
    }
  }
  return found && Location(doc) == nullptr;  // nothing after the top-level object
}

}  // namespace

std::optional<Result<TraceFile>> ImportInBatches(DocFeed* feed, const std::string& name,
                                                 const ImportOptions& options) {
  if (ArrayFormOpen(feed->view()) != std::string_view::npos) return std::nullopt;  // read whole
  size_t open = FindEventsArray(feed->view());
  while (open == std::string_view::npos && feed->Refill(0)) open = FindEventsArray(feed->view());
  if (open == std::string_view::npos || feed->base() != 0) return std::nullopt;
  std::string skeleton_text(feed->view().substr(0, open + 1));
  TraceFile tf = NewKinetoFile(name);
  tf.ReserveEvents(feed->size_hint() / 80, options.keep_args);  // an event takes >= ~80 bytes of JSON
  KeptArgs kept_args(&tf.strings, &tf.args);
  Locator loc(feed->view(), name), args_loc(feed->view(), name);
  Walk w{&tf, &loc, nullptr, {}, 0, options.keep_args ? &kept_args : nullptr, &args_loc, {}};
  const size_t close = WalkBatches(feed, open, options.kineto_batch_bytes, &w);
  if (close == std::string_view::npos) return std::nullopt;
  skeleton_text.append(feed->view().substr(close));
  if (!feed->ReadRest(&skeleton_text)) return std::nullopt;
  const simdjson::padded_string skeleton(skeleton_text);
  std::optional<int64_t> base_ns;
  if (!ReadSkeleton(skeleton, open, &tf, &base_ns)) return std::nullopt;
  if (w.args) CheckArgs(&w);
  return FinishImport(std::move(tf), w, base_ns, name, options);
}

}  // namespace truffld::merge::kineto
