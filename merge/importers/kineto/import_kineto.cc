// Kineto importer: reads a Chrome-trace document with simdjson on-demand and fills a TraceFile.
// This file owns the entry points, the choice between the two readers and the whole-document
// reader with its error paths (--strict validation, truncated documents, malformed JSON). The
// batch reader is import_batched.cc, the walk over traceEvents event_walk.cc, one record's
// reading and mapping kineto_record.cc, what every import ends with document_parts.cc.
#include "truffld/merge/import_kineto.h"

#include <simdjson.h>

#include <cstdint>
#include <cstdio>

#include "importers/kineto/doc_feed.h"
#include "importers/kineto/document_parts.h"
#include "importers/kineto/element_scan.h"
#include "importers/kineto/kept_args.h"
#include "importers/kineto/recover.h"
#include "importers/kineto/salvage.h"
#include "truffld/byte_source.h"

namespace truffld::merge {
namespace {

namespace od = simdjson::ondemand;
using kineto::FinishImport;
using kineto::Locator;
using kineto::Location;
using kineto::Walk;

// --strict: the whole document must be valid JSON. The on-demand walk below only looks at the
// values the importer uses, so an invalid token elsewhere ("x":tru) would pass unseen; the DOM
// parser checks every byte (with --strict only: it costs a second pass over the document).
Status ValidateDocument(simdjson::padded_string_view buf, const std::string& name) {
  simdjson::dom::parser validator;
  if (auto e = validator.parse(buf.data(), buf.size(), false).error())
    return ParseError(name + ": not valid JSON (" + simdjson::error_message(e) + "); --strict reads only valid documents");
  return Status::Ok();
}

bool LooksTruncated(simdjson::error_code e) {
  return e == simdjson::INCOMPLETE_ARRAY_OR_OBJECT || e == simdjson::UNCLOSED_STRING;
}

// `salvaged_from` > 0: `buf` is a repaired prefix of a truncated document of that many bytes;
// kNoRescue: `buf` must be read as it is (see Rescue).
constexpr size_t kNoRescue = SIZE_MAX;
Result<TraceFile> ImportPadded(simdjson::padded_string_view buf, const std::string& name,
                               const ImportOptions& options, size_t salvaged_from = 0);

// A document that ends with brackets open: import the complete events before the cut. A
// document in the JSON Array Format may lack its closing ']' (the Chrome trace spec allows it):
// that alone is not reported.
Result<TraceFile> ImportSalvaged(std::string_view text, const std::string& name,
                                 const ImportOptions& options, Status original) {
  std::optional<kineto::Salvaged> s = kineto::SalvageTruncatedJson(text);
  if (!s) return original;
  simdjson::padded_string repaired(s->text);
  Result<TraceFile> r = ImportPadded(repaired, name, options, text.size());
  if (!r.ok()) return original;
  const size_t rest = text.find_first_not_of(" \t\r\n,", s->kept_bytes);
  if (kineto::ArrayFormOpen(text) != std::string_view::npos && rest == std::string_view::npos) return r;
  r->stats.Report(Locator(text, name).Where(text.data() + s->kept_bytes), Problem::kKinetoTruncated,
                  "document ends at byte " + std::to_string(text.size()) +
                      " with brackets still open (" + original.message() +
                      "); imported the complete events before this point, dropped the rest");
  return r;
}

// Bytes after the JSON document (a log line, NUL padding): the document is read without them
// and they are reported. nullopt when the document does not end early (its brackets do not
// balance, or nothing but whitespace follows).
std::optional<Result<TraceFile>> ImportWithoutTrailing(simdjson::padded_string_view buf,
                                                       const std::string& name,
                                                       const ImportOptions& options) {
  const std::string_view text(buf.data(), buf.size());
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || (text[first] != '{' && text[first] != '[')) return std::nullopt;
  const size_t end = kineto::MatchValue(text, first);
  if (end == std::string_view::npos || text.find_first_not_of(" \t\r\n", end) == std::string_view::npos)
    return std::nullopt;
  // A bracket that the scan took for the document's last (a quote missing before it) would
  // cut it short: only a part that reads as it is counts as the document.
  Result<TraceFile> r = ImportPadded(simdjson::padded_string_view(buf.data(), end, buf.capacity()), name, options, kNoRescue);
  if (!r.ok()) return std::nullopt;
  char first_byte[8];
  std::snprintf(first_byte, sizeof first_byte, "0x%02x", static_cast<unsigned char>(text[end]));
  r->stats.Report(Locator(text, name).Where(text.data() + end), Problem::kKinetoTrailingBytes,
                  std::to_string(text.size() - end) + " bytes after the end of the JSON document (byte " +
                      std::to_string(end) + " on, the first " + first_byte + "); ignored");
  return r;
}

// The whole-document reader could not read `buf` (simdjson's `e`, reported as `original`):
// trailing bytes are cut off, a document cut short is salvaged, anything else (and what the
// salvage cannot read) is read one element at a time.
Result<TraceFile> Rescue(simdjson::padded_string_view buf, const std::string& name,
                         const ImportOptions& options, simdjson::error_code e, Status original,
                         size_t salvaged_from) {
  if (options.strict || salvaged_from == kNoRescue) return original;
  if (!salvaged_from) {
    if (auto r = ImportWithoutTrailing(buf, name, options)) return std::move(*r);
    // An unclosed string may be a cut end or a quote missing inside: the reading that keeps
    // more events wins (the salvage on a tie: one message for a plain cut).
    if (LooksTruncated(e)) {
      Result<TraceFile> salvaged = ImportSalvaged(std::string_view(buf.data(), buf.size()), name, options, original);
      Result<TraceFile> recovered = kineto::ImportRecovering(buf, name, options, original);
      if (salvaged.ok() && (!recovered.ok() || recovered->events.size() <= salvaged->events.size())) return salvaged;
      return recovered;
    }
  }
  return kineto::ImportRecovering(buf, name, options, original);
}

// Walks the top-level object: traceEvents, distributedInfo, baseTimeNanoseconds (the rest is
// ignored). Returns the error that stopped it.
simdjson::error_code WalkTopLevel(od::object top, Walk* w, bool* saw_events,
                                  std::optional<int64_t>* base_ns, Status* fatal) {
  TraceFile& tf = *w->out;
  for (auto field : top) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return e;
    od::value v;
    if (auto e = field.value().get(v)) return e;
    if (key == "traceEvents") {
      od::array arr;
      if (v.get_array().get(arr) != simdjson::SUCCESS) {
        *fatal = ParseError(w->loc->Where(Location(*w->doc)) + ": 'traceEvents' is not an array");
        return simdjson::SUCCESS;
      }
      *saw_events = true;
      if (auto e = kineto::WalkEvents(arr, w)) return e;
    } else if (!kineto::ReadTopMember(key, v, &tf.meta, base_ns)) {
      tf.stats.Report(w->loc->Where(Location(*w->doc)), Problem::kKinetoBadField,
                      "baseTimeNanoseconds is not an integer; times left relative");
    }
  }
  return simdjson::SUCCESS;
}

// The whole document at once: the reader for --strict, small documents, and anything the
// batches hand back (ImportInBatches). `salvaged_from` > 0: `buf` is a repaired prefix. The
// document is a JSON object holding traceEvents, or an array of events (the Chrome trace
// spec's JSON Array Format).
Result<TraceFile> ImportPadded(simdjson::padded_string_view buf, const std::string& name,
                               const ImportOptions& options, size_t salvaged_from) {
  TraceFile tf = kineto::NewKinetoFile(name);
  std::string_view text(buf.data(), buf.size());
  Locator loc(text, name);
  if (options.strict) TRUFFLD_RETURN_IF_ERROR(ValidateDocument(buf, name));
  od::parser parser;
  od::document doc;
  if (auto e = parser.iterate(buf).get(doc))
    return Rescue(buf, name, options, e, ParseError(name + ": not a JSON document: " + simdjson::error_message(e)), salvaged_from);
  const bool array_form = kineto::ArrayFormOpen(text) != std::string_view::npos;
  od::object top;
  od::array events;
  if (auto e = array_form ? doc.get_array().get(events) : doc.get_object().get(top)) {
    Status st = ParseError(loc.Where(Location(doc)) + ": top level is not a JSON object (" +
                           simdjson::error_message(e) + "); expected {\"traceEvents\": [...]} or [{event}, ...]");
    return Rescue(buf, name, options, e, st, salvaged_from);
  }
  tf.ReserveEvents(buf.size() / 80, options.keep_args);  // an event takes >= ~80 bytes of JSON
  kineto::KeptArgs kept_args(&tf.strings, &tf.args);
  Locator args_loc(text, name);
  Walk w{&tf, &loc, &doc, {}, 0, options.keep_args ? &kept_args : nullptr, &args_loc, {}};
  bool saw_events = array_form;
  std::optional<int64_t> base_ns;
  Status fatal = Status::Ok();
  const simdjson::error_code err = array_form ? kineto::WalkEvents(events, &w)
                                              : WalkTopLevel(top, &w, &saw_events, &base_ns, &fatal);
  if (!fatal.ok()) return fatal;
  if (w.args) CheckArgs(&w);
  if (err) {
    std::string msg = loc.Where(Location(doc)) + ": malformed JSON after " +
                      std::to_string(w.index) + " trace events: " + simdjson::error_message(err);
    if (!saw_events) return ParseError(msg);
    return Rescue(buf, name, options, err, ParseError(msg), salvaged_from);
  }
  if (!saw_events) return ParseError(name + ": no 'traceEvents' array; not a Kineto/Chrome trace");
  if (array_form && w.index == tf.stats.Get(Problem::kKinetoNotAnObject))
    return ParseError(name + ": a JSON array holding no event objects; not a Chrome trace");
  return FinishImport(std::move(tf), w, base_ns, name, options);
}

// Batches where they can be used (see ImportOptions::kineto_batch_bytes), else the whole.
Result<TraceFile> ImportDocument(char* text, size_t size, size_t capacity, const std::string& name,
                                 const ImportOptions& options) {
  kineto::BlankByteOrderMark(text, size);
  if (!options.strict && options.kineto_batch_bytes > 0 && size > options.kineto_batch_bytes) {
    kineto::DocFeed feed(text, size, capacity);
    if (auto r = kineto::ImportInBatches(&feed, name, options)) return std::move(*r);
  }
  return ImportPadded(simdjson::padded_string_view(text, size, capacity), name, options);
}

// The whole document in memory, then ImportDocument.
Result<TraceFile> ImportRead(ByteSource& src, const ImportOptions& options) {
  // A cut-short or corrupt gzip/zstd stream still yields the bytes decoded before the problem;
  // the JSON salvage then keeps the complete events among them and reports the cut.
  Status read_error = Status::Ok();
  Result<Bytes> bytes = ReadAll(src, /*allow_truncated=*/true, simdjson::SIMDJSON_PADDING, &read_error);
  if (!bytes.ok()) return bytes.status();
  if (!read_error.ok() && (options.strict || bytes->size == 0)) return read_error;
  Result<TraceFile> r = ImportDocument(bytes->data.get(), bytes->size, bytes->capacity, src.path(), options);
  if (read_error.ok()) return r;
  if (!r.ok()) return Status(read_error.code(), read_error.message() + "; the " + std::to_string(bytes->size) +
                                                   " bytes decoded before it: " + r.status().message());
  // A damaged deflate stream often decodes on, to garbage, until its CRC check fails at the
  // end: the first damage the JSON reader met says better where it lies.
  std::string first_damage;
  for (const IngestIssue& i : r->stats.issues)
    if (first_damage.empty() && (i.kind == Problem::kKinetoMalformedJson || i.kind == Problem::kKinetoTruncated ||
                                 i.kind == Problem::kKinetoNotAnObject))
      first_damage = "; the first damage met in the decoded JSON is at " + i.where;
  r->stats.Report(src.path() + " (decompressed byte " + std::to_string(bytes->size) + ")", Problem::kReadError,
                  read_error.message() + "; the " + std::to_string(bytes->size) +
                      " bytes decompressed before it were read (the complete events among them kept)" + first_damage);
  return r;
}

// A regular file in batches through a window of four batches, never held whole; read again,
// whole, when the batches cannot go on (a file is read whole anyway when it fits the window).
Result<TraceFile> ImportStreamed(std::unique_ptr<ByteSource> src, const ImportOptions& options) {
  const std::string path = src->path();
  kineto::DocFeed feed(src.get(), 4 * options.kineto_batch_bytes);
  if (feed.Refill(0)) {
    kineto::BlankByteOrderMark(feed.data(), feed.size());
    if (feed.complete())
      return ImportDocument(feed.data(), feed.size(), feed.size() + simdjson::SIMDJSON_PADDING, path, options);
    if (auto r = kineto::ImportInBatches(&feed, path, options)) return std::move(*r);
  }
  src.reset();
  auto again = OpenByteSource(path);
  if (!again.ok()) return again.status();
  return ImportRead(**again, options);
}

}  // namespace

Result<TraceFile> ImportKinetoFromBuffer(std::string_view json, const std::string& name,
                                         const ImportOptions& options) {
  simdjson::padded_string copy(json);
  return ImportDocument(copy.data(), copy.size(), copy.size() + simdjson::SIMDJSON_PADDING, name, options);
}

Result<TraceFile> ImportKineto(std::unique_ptr<ByteSource> src, const ImportOptions& options) {
  if (src->rereadable() && !options.strict && options.kineto_batch_bytes > 0)
    return ImportStreamed(std::move(src), options);
  return ImportRead(*src, options);
}

Result<TraceFile> ImportKineto(const std::string& path, const ImportOptions& options) {
  auto src = OpenByteSource(path);
  if (!src.ok()) return src.status();
  return ImportKineto(std::move(*src), options);
}

}  // namespace truffld::merge
