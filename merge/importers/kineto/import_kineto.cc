// Kineto importer: walks a Chrome-trace document once with simdjson on-demand and fills a
// TraceFile. Record-level mapping lives in import_kineto_record.cc; this file owns the document
// walk, the file-level fields (baseTimeNanoseconds, distributedInfo), the post-pass that gives
// device events their host process, the counters and error messages.
#include "truffld/merge/import_kineto.h"

#include <charconv>
#include <unordered_map>

#include <simdjson.h>

#include "importers/kineto/kept_args.h"
#include "importers/kineto/kineto_record.h"
#include "importers/main_process.h"
#include "importers/kineto/salvage.h"
#include "truffld/byte_source.h"

namespace truffld::merge {
namespace {

namespace od = simdjson::ondemand;
using kineto::Disposition;

// Turns byte offsets into "name:LINE (byte N)" locations. Offsets must be non-decreasing, so
// counting newlines stays linear in the document size however many problems are reported.
class Locator {
 public:
  Locator(std::string_view doc, const std::string& name) : doc_(doc), name_(name) {}
  std::string Where(const char* p) {
    size_t off = (p && p >= doc_.data() && p <= doc_.data() + doc_.size())
                     ? static_cast<size_t>(p - doc_.data())
                     : last_;
    if (off < last_) off = last_;
    for (size_t i = last_; i < off; ++i) line_ += doc_[i] == '\n';
    last_ = off;
    return name_ + ":" + std::to_string(line_) + " (byte " + std::to_string(off) + ")";
  }

 private:
  std::string_view doc_;
  const std::string& name_;
  size_t last_ = 0;
  uint64_t line_ = 1;
};

const char* Location(od::document& doc) {
  const char* p = nullptr;
  if (doc.current_location().get(p) != simdjson::SUCCESS) return nullptr;
  return p;
}

std::optional<int64_t> ParseInt(std::string_view raw) {
  while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\n' || raw.back() == '\r' ||
                          raw.back() == '\t'))
    raw.remove_suffix(1);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), v);
  if (ec != std::errc() || p != raw.data() + raw.size()) return std::nullopt;
  return v;
}

// The walk state: what has been imported so far and how to name places.
struct Walk {
  TraceFile* out;
  Locator* loc;
  od::document* doc;
  uint64_t kept[16] = {};
  uint64_t index = 0;  // 1-based index of the current traceEvents element
  kineto::KeptArgs* args = nullptr;  // ImportOptions::keep_args; else null (no args kept)
  Locator* args_loc = nullptr;       // for args reports, which come after the walk has moved on
};

// Checks the pending args objects; the invalid ones are reported (and not kept; their events are).
void CheckArgs(Walk* w) {
  for (const kineto::KeptArgs::Rejected& r : w->args->Check())
    w->out->stats.Report(w->args_loc->Where(r.where), Problem::kKinetoIgnoredField,
                         "event #" + std::to_string(r.event_number) +
                             ": args is not a valid JSON object; not kept in trace.json, event kept");
}

void KeepArgs(const kineto::KinetoRecord& rec, Walk* w) {
  if (!w->args) {
    w->out->args.push_back(kNoStr);
  } else if (w->args->Add(rec.args_text, w->index)) {
    CheckArgs(w);
  }
}

// Imports every element of the traceEvents array. Returns the error that stopped the walk.
simdjson::error_code WalkEvents(od::array events, Walk* w) {
  for (auto item : events) {
    ++w->index;
    od::object obj;
    if (auto e = item.get_object().get(obj)) {
      if (e != simdjson::INCORRECT_TYPE) return e;
      w->out->stats.Report(w->loc->Where(Location(*w->doc)), Problem::kKinetoNotAnObject,
                           "traceEvents element #" + std::to_string(w->index) +
                               " is not a JSON object");
      continue;
    }
    kineto::KinetoRecord rec;
    if (auto e = kineto::ReadKinetoRecord(obj, &rec)) return e;
    kineto::Mapped m = kineto::MapKinetoRecord(rec, &w->out->strings);
    switch (m.what) {
      case Disposition::kSkip:
        w->out->stats.Add(m.key);
        break;
      case Disposition::kProblem:
        w->out->stats.Report(w->loc->Where(Location(*w->doc)), m.key,
                             "event #" + std::to_string(w->index) + ": " + m.message);
        break;
      case Disposition::kEvent: {
        const int64_t corr = rec.correlation.value_or(kNone);
        w->out->SetCorrelation(m.event, corr);
        if ((IsApiKind(m.event.kind) || IsDeviceKind(m.event.kind)) && corr == kNone)
          w->out->stats.Report(w->loc->Where(Location(*w->doc)), Problem::kKinetoMissingCorrelation,
                               "event #" + std::to_string(w->index) + ": " +
                                   std::string(EventKindName(m.event.kind)) +
                                   " without args.correlation (kept, cannot be linked)");
        if (!rec.ignored_field.empty())
          w->out->stats.Report(w->loc->Where(Location(*w->doc)), Problem::kKinetoIgnoredField,
                               "event #" + std::to_string(w->index) + ": args." +
                                   std::string(rec.ignored_field) +
                                   " has the wrong JSON type; field ignored, event kept");
        ++w->kept[static_cast<int>(m.event.kind)];
        w->out->SetExtra(m.event, m.extra);
        w->out->SetThread(m.event, m.host.process_id, m.host.thread_id);
        w->out->AddEvent(m.event, w->index);
        KeepArgs(rec, w);
        break;
      }
    }
  }
  return simdjson::SUCCESS;
}

void ReadDistributedInfo(od::value v, FileMeta* meta) {
  od::object obj;
  if (v.get_object().get(obj) != simdjson::SUCCESS) return;
  for (auto field : obj) {
    std::string_view key;
    if (field.unescaped_key().get(key) != simdjson::SUCCESS) return;
    int64_t x = 0;
    if (key == "rank" && field.value().get_int64().get(x) == simdjson::SUCCESS) meta->rank = x;
    if (key == "world_size" && field.value().get_int64().get(x) == simdjson::SUCCESS)
      meta->world_size = x;
  }
}

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

// `salvaged_from` > 0: `buf` is a repaired prefix of a truncated document of that many bytes.
Result<TraceFile> ImportPadded(simdjson::padded_string_view buf, const std::string& name,
                               const ImportOptions& options, size_t salvaged_from = 0);

// A document that ends with brackets open: import the complete events before the cut.
Result<TraceFile> ImportSalvaged(std::string_view text, const std::string& name,
                                 const ImportOptions& options, Status original) {
  if (options.strict) return original;
  std::optional<kineto::Salvaged> s = kineto::SalvageTruncatedJson(text);
  if (!s) return original;
  simdjson::padded_string repaired(s->text);
  Result<TraceFile> r = ImportPadded(repaired, name, options, text.size());
  if (!r.ok()) return original;
  r->stats.Report(Locator(text, name).Where(text.data() + s->kept_bytes), Problem::kKinetoTruncated,
                  "document ends at byte " + std::to_string(text.size()) +
                      " with brackets still open (" + original.message() +
                      "); imported the complete events before this point, dropped the rest");
  return r;
}

Result<TraceFile> ImportPadded(simdjson::padded_string_view buf, const std::string& name,
                               const ImportOptions& options, size_t salvaged_from) {
  TraceFile tf;
  tf.meta.path = name;
  tf.meta.format = "kineto";
  tf.meta.clock = ClockId::kRealtime;
  std::string_view text(buf.data(), buf.size());
  Locator loc(text, name);
  if (options.strict) TRUFFLD_RETURN_IF_ERROR(ValidateDocument(buf, name));
  od::parser parser;
  od::document doc;
  if (auto e = parser.iterate(buf).get(doc)) {
    Status st = ParseError(name + ": not a JSON document: " + simdjson::error_message(e));
    return LooksTruncated(e) && !salvaged_from ? ImportSalvaged(text, name, options, st) : st;
  }
  od::object top;
  if (auto e = doc.get_object().get(top)) {
    Status st = ParseError(loc.Where(Location(doc)) + ": top level is not a JSON object (" +
                           simdjson::error_message(e) + "); expected {\"traceEvents\": [...]}");
    return LooksTruncated(e) && !salvaged_from ? ImportSalvaged(text, name, options, st) : st;
  }
  tf.ReserveEvents(buf.size() / 80, options.keep_args);  // an event takes >= ~80 bytes of JSON
  kineto::KeptArgs kept_args(&tf.strings, &tf.args);
  Locator args_loc(text, name);
  Walk w{&tf, &loc, &doc, {}, 0, options.keep_args ? &kept_args : nullptr, &args_loc};
  bool saw_events = false;
  std::optional<int64_t> base_ns;
  simdjson::error_code err = simdjson::SUCCESS;
  for (auto field : top) {
    std::string_view key;
    if ((err = field.unescaped_key().get(key))) break;
    od::value v;
    if ((err = field.value().get(v))) break;
    if (key == "traceEvents") {
      od::array arr;
      if (v.get_array().get(arr) != simdjson::SUCCESS)
        return ParseError(loc.Where(Location(doc)) + ": 'traceEvents' is not an array");
      saw_events = true;
      if ((err = WalkEvents(arr, &w))) break;
    } else if (key == "distributedInfo") {
      ReadDistributedInfo(v, &tf.meta);
    } else if (key == "baseTimeNanoseconds") {
      std::string_view raw;
      raw = v.raw_json_token();
      base_ns = ParseInt(raw);
      if (!base_ns)
        tf.stats.Report(loc.Where(Location(doc)), Problem::kKinetoBadField,
                        "baseTimeNanoseconds is not an integer; times left relative");
    }
  }
  if (w.args) CheckArgs(&w);
  if (err) {
    std::string msg = loc.Where(Location(doc)) + ": malformed JSON after " +
                      std::to_string(w.index) + " trace events: " + simdjson::error_message(err);
    if (!saw_events || tf.events.empty() || options.strict) return ParseError(msg);
    tf.stats.Report(name, Problem::kKinetoMalformedJson, msg + "; the events before it were kept");
  } else if (!saw_events) {
    return ParseError(name + ": no 'traceEvents' array; not a Kineto/Chrome trace");
  }
  if (base_ns && *base_ns != 0) {
    for (Event& e : tf.events) {
      if (__builtin_add_overflow(e.start, *base_ns, &e.start) ||
          __builtin_add_overflow(e.end, *base_ns, &e.end)) {
        tf.stats.Report(name, Problem::kKinetoBadNumber,
                        "baseTimeNanoseconds + ts overflows int64 ns at event #" +
                            std::to_string(tf.LineOf(e)));
      }
    }
  }
  AssignDeviceProcesses(&tf);  // device events carry pid = device in Kineto
  tf.SortThreads();
  for (int k = 0; k < 16; ++k)
    if (w.kept[k]) tf.stats.AddKept(static_cast<EventKind>(k), w.kept[k]);
  tf.stats.Add(Problem::kKinetoTraceEvents, w.index);
  if (options.strict && !tf.stats.issues.empty()) {
    const IngestIssue& i = tf.stats.issues.front();
    return ParseError(i.where + ": " + ProblemKey(i.kind) + ": " + i.message + " (--strict)");
  }
  return tf;
}

}  // namespace

Result<TraceFile> ImportKinetoFromBuffer(std::string_view json, const std::string& name,
                                         const ImportOptions& options) {
  simdjson::padded_string copy(json);
  return ImportPadded(copy, name, options);
}

Result<TraceFile> ImportKineto(std::unique_ptr<ByteSource> src, const ImportOptions& options) {
  // A cut-short gzip/zstd stream still yields its decodable bytes; the JSON salvage then keeps
  // the complete events and reports the truncation.
  const std::string path = src->path();
  Result<Bytes> bytes = ReadAll(*src, /*allow_truncated=*/true, simdjson::SIMDJSON_PADDING);
  if (!bytes.ok()) return bytes.status();
  return ImportPadded(simdjson::padded_string_view(bytes->data.get(), bytes->size, bytes->capacity), path, options);
}

Result<TraceFile> ImportKineto(const std::string& path, const ImportOptions& options) {
  auto src = OpenByteSource(path);
  if (!src.ok()) return src.status();
  return ImportKineto(std::move(*src), options);
}

}  // namespace truffld::merge
