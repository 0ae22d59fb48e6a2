// Reading a damaged Kineto document one traceEvents element at a time (see recover.h).
//
// simdjson refuses a whole document for one bad byte (a raw tab inside a string, invalid UTF-8)
// and its on-demand walk stops at the first structural error (`},,{`), so the whole-document
// reader hands such a document over here. ElementScanner finds the elements by their bytes;
// each is checked by simdjson's DOM parser (which reads every byte, as Python's json does) and
// imported in place by the same walk as the other readers (WalkObject), so a damaged element
// costs that element only. The members around traceEvents (baseTimeNanoseconds,
// distributedInfo) come from a copy of the document without the array's elements.
#include "importers/kineto/recover.h"

#include <optional>

#include "importers/kineto/document_parts.h"
#include "importers/kineto/element_scan.h"
#include "importers/kineto/kept_args.h"

namespace truffld::merge::kineto {
namespace {

namespace od = simdjson::ondemand;
using Kind = ElementSpan::Kind;

// One valid element, parsed in place (the document's own bytes pad it).
void ImportElement(od::parser* parser, simdjson::padded_string_view buf, const ElementSpan& s, Walk* w) {
  ++w->index;
  const char* at = buf.data() + s.begin;
  const std::string number = std::to_string(w->index);
  if (*at != '{') {
    w->out->stats.Report(w->loc->Where(at), Problem::kKinetoNotAnObject,
                         "traceEvents element #" + number + " is not a JSON object");
    return;
  }
  od::document doc;
  od::object obj;
  const simdjson::padded_string_view view(at, s.end - s.begin, buf.capacity() - s.begin);
  simdjson::error_code e = parser->iterate(view).get(doc);
  if (!e) e = doc.get_object().get(obj);
  if (!e) {
    w->doc = &doc;
    e = WalkObject(obj, w);
    w->doc = nullptr;
  }
  if (e)
    w->out->stats.Report(w->loc->Where(at), Problem::kKinetoMalformedJson,
                         "traceEvents element #" + number + ": " + simdjson::error_message(e) + "; skipped");
}

void ReportBad(const char* text, const ElementSpan& s, Walk* w) {
  std::string what;
  if (s.lost) {
    ++w->index;
    what = "traceEvents element #" + std::to_string(w->index) + " (bytes " + std::to_string(s.begin) +
           " to " + std::to_string(s.end) + "): " + s.why + "; skipped, read on at the next element";
  } else {
    what = std::string("traceEvents: ") + s.why + " at byte " + std::to_string(s.begin) + "; both read";
  }
  w->out->stats.Report(w->loc->Where(text + s.begin), Problem::kKinetoMalformedJson, what);
}

// The top-level members besides traceEvents, read from `skeleton` (the document with the
// array's elements left out); a skeleton that is not valid JSON is reported, not fatal.
void ReadMembers(const std::string& skeleton_text, const std::string& name, TraceFile* tf,
                 std::optional<int64_t>* base_ns) {
  const simdjson::padded_string skeleton(skeleton_text);
  od::parser parser;
  od::document doc;
  od::object top;
  simdjson::error_code e = parser.iterate(skeleton).get(doc);
  if (!e) e = doc.get_object().get(top);
  if (!e) {
    for (auto field : top) {
      std::string_view key;
      od::value v;
      if ((e = field.unescaped_key().get(key)) || (e = field.value().get(v))) break;
      if (key != "traceEvents" && !ReadTopMember(key, v, &tf->meta, base_ns))
        tf->stats.Report(name, Problem::kKinetoBadField, "baseTimeNanoseconds is not an integer; times left relative");
    }
  }
  if (e)
    tf->stats.Report(name, Problem::kKinetoMalformedJson,
                     std::string("the document around traceEvents is not valid JSON (") +
                         simdjson::error_message(e) + "); the members there that could not be read are ignored");
}

}  // namespace

Result<TraceFile> ImportRecovering(simdjson::padded_string_view buf, const std::string& name,
                                   const ImportOptions& options, Status original) {
  const std::string_view text(buf.data(), buf.size());
  const size_t array_form = ArrayFormOpen(text);
  const size_t open = array_form != std::string_view::npos ? array_form : FindEventsArray(text);
  if (open == std::string_view::npos) return original;
  TraceFile tf = NewKinetoFile(name);
  KeptArgs kept_args(&tf.strings, &tf.args);
  Locator loc(text, name), args_loc(text, name);
  Walk w{&tf, &loc, nullptr, {}, 0, options.keep_args ? &kept_args : nullptr, &args_loc, {}};
  simdjson::dom::parser validator;
  ElementScanner scan(text, open, [&validator](std::string_view element) {
    return validator.parse(element.data(), element.size(), false).error() == simdjson::SUCCESS;
  });
  od::parser parser;
  ElementSpan s;
  for (s = scan.Next(); s.kind == Kind::kElement || s.kind == Kind::kBad; s = scan.Next()) {
    if (s.kind == Kind::kElement) ImportElement(&parser, buf, s, &w);
    else ReportBad(text.data(), s, &w);
  }
  // The JSON Array Format may end without its ']' (the Chrome trace spec allows it).
  if (s.kind == Kind::kEnd && array_form == std::string_view::npos)
    tf.stats.Report(loc.Where(text.data() + s.begin), Problem::kKinetoTruncated,
                    "document ends at byte " + std::to_string(text.size()) +
                        " before traceEvents closes; the complete events before this point were kept");
  if (tf.events.empty()) return original;
  const size_t after = s.kind == Kind::kClose ? text.find_first_not_of(" \t\r\n", s.end) : std::string_view::npos;
  if (array_form != std::string_view::npos && after != std::string_view::npos)
    tf.stats.Report(loc.Where(text.data() + after), Problem::kKinetoTrailingBytes,
                    std::to_string(text.size() - after) + " bytes after the end of the JSON array (byte " +
                        std::to_string(after) + " on); ignored");
  std::optional<int64_t> base_ns;
  if (array_form == std::string_view::npos) {
    std::string skeleton(text.substr(0, open + 1));
    skeleton += s.kind == Kind::kClose ? text.substr(s.begin) : std::string_view("]}");
    ReadMembers(skeleton, name, &tf, &base_ns);
  }
  if (w.args) CheckArgs(&w);
  return FinishImport(std::move(tf), w, base_ns, name, options);
}

}  // namespace truffld::merge::kineto
