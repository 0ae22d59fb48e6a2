// The raw importer's record readers (raw_record_reader.h): simdjson DOM for any line, and the
// plain-record scanner in front of it. DOM: runtime-dispatched SIMD kernels (the header-only
// On-Demand front end would fall back to scalar code without -march flags), one pass over each
// record's fields, on a reused padded buffer.
#include "importers/raw/raw_record_reader.h"

#include <simdjson.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "truffld/json_escape.h"
#include "truffld/utf8.h"

namespace truffld::merge::raw {
namespace dom = simdjson::dom;
namespace {

bool GetInt(dom::element v, int64_t* out) {
  if (v.get_int64().get(*out) == simdjson::SUCCESS) return true;
  double d;
  if (v.is_number() && v.get_double().get(d) == simdjson::SUCCESS && d > -9.2e18 && d < 9.2e18) {
    *out = static_cast<int64_t>(d < 0 ? d - 0.5 : d + 0.5);
    return true;
  }
  return false;
}

// Sums an integer or an object of integer counts.
uint64_t SumCounts(dom::element v) {
  int64_t n = 0;
  if (v.get_int64().get(n) == simdjson::SUCCESS) return n > 0 ? uint64_t(n) : 0;
  dom::object o;
  uint64_t total = 0;
  if (v.get_object().get(o) != simdjson::SUCCESS) return 0;
  for (auto [k, fv] : o)
    if (fv.get_int64().get(n) == simdjson::SUCCESS && n > 0) total += uint64_t(n);
  return total;
}

bool ParseClockPair(dom::element v, std::vector<std::pair<TimeNs, TimeNs>>* out) {
  dom::object o;
  if (v.get_object().get(o) != simdjson::SUCCESS) return false;
  int64_t r = 0, m = 0;
  bool hr = false, hm = false;
  for (auto [k, fv] : o) {
    if (k == "realtime_ns") hr = GetInt(fv, &r);
    else if (k == "monotonic_ns") hm = GetInt(fv, &m);
  }
  if (hr && hm) out->emplace_back(r, m);
  return hr && hm;
}

// clock_sync: one {realtime_ns, monotonic_ns} object, or an array of them.
bool ParseClockSync(dom::element v, std::vector<std::pair<TimeNs, TimeNs>>* out) {
  if (v.is_object()) return ParseClockPair(v, out);
  dom::array a;
  if (v.get_array().get(a) != simdjson::SUCCESS) return false;
  bool ok = a.size() > 0;
  for (dom::element e : a) ok = ParseClockPair(e, out) && ok;
  return ok;
}

void ParseXyz(dom::element v, int32_t out[3]) {
  dom::array a;
  if (v.get_array().get(a) != simdjson::SUCCESS) return;
  int i = 0;
  for (dom::element e : a) {
    int64_t n = 0;
    if (i < 3 && e.get_int64().get(n) == simdjson::SUCCESS) out[i] = static_cast<int32_t>(n);
    ++i;
  }
}

// Text of a scalar that may be a string or a number (categories, copy kinds); `scratch` holds
// the formatted number.
std::string_view StringOrToken(dom::element v, std::string* scratch) {
  std::string_view s;
  if (v.get_string().get(s) == simdjson::SUCCESS) return s;
  *scratch = simdjson::minify(v);
  return *scratch;
}

class DomRecordReader final : public RawRecordReader {
 public:
  explicit DomRecordReader(Report report) : report_(std::move(report)) {}
  bool Read(std::string_view line, uint64_t line_no, Fields* f) override;

 private:
  simdjson::error_code Member(std::string_view key, dom::element v, uint64_t line_no, Fields* f);
  Report report_;
  dom::parser parser;
  std::vector<char> buf;
  std::string repaired;
  std::string payload, category, copy_kind, domain, schema;  // scratch for non-string values
};

// The whole JSON grammar, problems reported. False when the line yields nothing.
bool DomRecordReader::Read(std::string_view line, uint64_t line_no, Fields* f) {
  auto load = [&](std::string_view text) {
    buf.resize(text.size() + simdjson::SIMDJSON_PADDING);
    std::memcpy(buf.data(), text.data(), text.size());
    std::memset(buf.data() + text.size(), 0, simdjson::SIMDJSON_PADDING);
  };
  load(line);
  size_t len = line.size();
  dom::element doc;
  auto err = parser.parse(buf.data(), len, false).get(doc);
  if (err == simdjson::UTF8_ERROR) {
    repaired.assign(line);
    size_t n = RepairUtf8(&repaired);
    report_(line_no, Problem::kInvalidUtf8,
            std::to_string(n) + " invalid UTF-8 sequence(s) replaced by U+FFFD");
    load(repaired);
    len = repaired.size();
    err = parser.parse(buf.data(), len, false).get(doc);
  }
  if (err == simdjson::STRING_ERROR) {
    // Half a surrogate pair (Python's json writes "\udcff" for an undecodable byte): read as
    // U+FFFD and keep the record, like invalid UTF-8 bytes.
    repaired.assign(buf.data(), len);  // the line as read so far (UTF-8 repaired or not)
    if (const size_t n = ReplaceLoneSurrogateEscapes(&repaired)) {
      report_(line_no, Problem::kInvalidUtf8,
              std::to_string(n) + " unpaired UTF-16 surrogate escape(s) read as U+FFFD");
      load(repaired);
      err = parser.parse(buf.data(), len, false).get(doc);
    }
  }
  dom::object obj;
  if (!err) err = doc.get_object().get(obj);
  if (err) {
    report_(line_no, Problem::kMalformedJson, std::string("not a JSON object: ") + simdjson::error_message(err));
    return false;
  }
  for (auto [key, v] : obj) {
    err = Member(key, v, line_no, f);
    if (err) {
      report_(line_no, Problem::kBadField, "field \"" + std::string(key.substr(0, 64)) + "\" has the wrong type: " +
              simdjson::error_message(err));
      return false;
    }
  }
  return true;
}

// One member of a record into *f; a wrong type for a string field is the error returned.
simdjson::error_code DomRecordReader::Member(std::string_view key, dom::element v, uint64_t line_no, Fields* f) {
  simdjson::error_code err = simdjson::SUCCESS;
  if (key == "type") {
    err = v.get_string().get(f->type);
  } else if (key == "name") {
    f->has_name = true;
    if (v.is_null()) f->name_null = true;
    else err = v.get_string().get(f->name);
  } else if (key == "domain") {
    if (!v.is_null()) f->domain = StringOrToken(v, &domain);
  } else if (key == "category" || key == "sync_kind") {
    if (!v.is_null()) f->category = StringOrToken(v, &category);
  } else if (key == "copy_kind") {
    if (!v.is_null()) f->copy_kind = StringOrToken(v, &copy_kind);
  } else if (key == "payload") {
    if (v.is_object()) {
      payload = simdjson::minify(v);
      f->payload = payload;
    }
  } else if (key == "grid") {
    ParseXyz(v, f->grid);
  } else if (key == "block") {
    ParseXyz(v, f->block);
  } else if (key == "host") {
    if (!v.is_null()) err = v.get_string().get(f->host);
  } else if (key == "edge") {
    if (!v.is_null()) err = v.get_string().get(f->edge);
  } else if (key == "clock") {
    if (!v.is_null()) err = v.get_string().get(f->clock);
  } else if (key == "schema") {
    if (!v.is_null()) f->schema = StringOrToken(v, &schema);
  } else if (key == "clock_sync") {
    if (!ParseClockSync(v, &f->clock_sync))
      report_(line_no, Problem::kBadClockSync, "clock_sync is not {realtime_ns, monotonic_ns}");
  } else if (key == "config") {  // META: the injector's settings; one matters here
    // A config object is never a plain record, so the fast scanner leaves it to this reader.
    std::string_view windows;
    if (v.is_object() && v.at_key("device_windows").get_string().get(windows) == simdjson::SUCCESS) {
      f->device_sampled = !windows.empty() && windows != "all";  // steps:..., time:... or off
      f->device_all = windows == "all";
    }
  } else if (key == "records_dropped" || key == "cupti_dropped") {
    f->dropped += SumCounts(v);
    f->has_dropped = true;
  } else if (key == "rank") {
    if (v.is_null()) f->rank_null = true;
    else if (GetInt(v, &f->v[kRank])) f->has[kRank] = true;
  } else {
    int field = IntField(key);
    if (field >= 0 && !v.is_null()) f->has[field] = GetInt(v, &f->v[field]);
  }
  return err;
}

// Plain records through FastScan (remembering each record type's keys and tail), anything it
// declines through the DOM reader.
class FastRecordReader final : public RawRecordReader {
 public:
  explicit FastRecordReader(Report report) : dom_(std::move(report)) {}
  bool Read(std::string_view line, uint64_t line_no, Fields* f) override {
    if (FastScan(line, f, &memo_)) return true;
    *f = Fields{};
    return dom_.Read(line, line_no, f);
  }

 private:
  KeyMemo memo_;
  DomRecordReader dom_;
};

}  // namespace

RawReaderKind RawReaderFromEnvironment() {
  const char* v = std::getenv("TRUFFLD_RAW_READER");
  return v && std::strcmp(v, "simdjson") == 0 ? RawReaderKind::kSimdjson : RawReaderKind::kFast;
}

std::unique_ptr<RawRecordReader> MakeRawRecordReader(RawReaderKind kind, RawRecordReader::Report report) {
  if (kind == RawReaderKind::kSimdjson) return std::make_unique<DomRecordReader>(std::move(report));
  return std::make_unique<FastRecordReader>(std::move(report));
}

}  // namespace truffld::merge::raw
