// RawLineParser implementation: plain records through FastScan (raw_fast_scan.cc), everything
// else through simdjson DOM (runtime-dispatched SIMD kernels; the header-only On-Demand front
// end would fall back to scalar code without -march flags), one pass over each record's fields.
#include "truffld/merge/raw_parser.h"

#include <simdjson.h>

#include <cstring>
#include <type_traits>
#include <vector>

#include "raw_fields.h"
#include "truffld/status.h"

namespace truffld::merge {
namespace dom = simdjson::dom;
using namespace raw;  // Fields, F, IntField, FastScan

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

// Text of a scalar that may be a string or a number (categories, copy kinds).
// Text of a scalar that may be a string or a number (categories, copy kinds); `scratch` holds
// the formatted number.
std::string_view StringOrToken(dom::element v, std::string* scratch) {
  std::string_view s;
  if (v.get_string().get(s) == simdjson::SUCCESS) return s;
  *scratch = simdjson::minify(v);
  return *scratch;
}

}  // namespace

struct RawLineParser::Impl {
  dom::parser parser;
  std::vector<char> buf;
  std::string repaired;
  std::string payload, category, copy_kind, domain, schema;  // scratch for non-string values
  raw::KeyMemo key_memo;  // the fast scanner's remembered key layouts
  // The shared extras record of the last domain seen on a record with no other rare field
  // (most NVTX records): found here without building and hashing a whole EventExtra.
  StrId domain_only = kNoStr;
  uint32_t domain_only_extra = kNoExtra;
  // The last string interned for a field whose value mostly repeats from record to record (the
  // NVTX domain, an API call's name): one compare instead of hashing and probing the pool.
  struct LastString {
    std::string text;
    StrId id = kNoStr;
    StrId Intern(std::string_view v, StringPool& sp) {
      if (id != kNoStr && v.size() == text.size() && std::memcmp(v.data(), text.data(), v.size()) == 0) return id;
      id = sp.Intern(v);
      text.assign(v);
      return id;
    }
  };
  LastString last_domain, last_api_name;
  // Folding state per thread index (set_fold_push_pop).
  struct FoldThread {
    TimeNs last = INT64_MIN;        // time of the thread's latest push or pop
    std::vector<uint32_t> open;     // indices of its open pushes, innermost last
    bool ordered = true;            // every push/pop so far came in time order
    bool folded = false;            // some pop was folded
  };
  std::vector<FoldThread> fold;
};

RawLineParser::RawLineParser(TraceFile* out, std::string source)
    : impl_(std::make_unique<Impl>()), out_(out), source_(std::move(source)) {}
RawLineParser::~RawLineParser() = default;

void RawLineParser::Problem(uint64_t line_no, const char* kind, std::string message) {
  std::string where = source_ + ":" + std::to_string(line_no);
  if (problems_++ == 0) first_problem_ = where + ": " + message;
  out_->stats.Report(std::move(where), kind, std::move(message));
}

// The slow path: the whole JSON grammar, problems reported. False when the line yields nothing.
bool RawLineParser::ReadWithDom(std::string_view line, uint64_t line_no, Fields* f) {
  auto& buf = impl_->buf;
  auto load = [&](std::string_view text) {
    buf.resize(text.size() + simdjson::SIMDJSON_PADDING);
    std::memcpy(buf.data(), text.data(), text.size());
    std::memset(buf.data() + text.size(), 0, simdjson::SIMDJSON_PADDING);
  };
  load(line);
  size_t len = line.size();
  dom::element doc;
  auto err = impl_->parser.parse(buf.data(), len, false).get(doc);
  if (err == simdjson::UTF8_ERROR) {
    impl_->repaired.assign(line);
    size_t n = RepairUtf8(&impl_->repaired);
    Problem(line_no, "invalid_utf8",
            std::to_string(n) + " invalid UTF-8 sequence(s) replaced by U+FFFD");
    load(impl_->repaired);
    len = impl_->repaired.size();
    err = impl_->parser.parse(buf.data(), len, false).get(doc);
  }
  dom::object obj;
  if (!err) err = doc.get_object().get(obj);
  if (err) {
    Problem(line_no, "malformed_json", std::string("not a JSON object: ") + simdjson::error_message(err));
    return false;
  }
  for (auto [key, v] : obj) {
    if (key == "type") {
      err = v.get_string().get(f->type);
    } else if (key == "name") {
      f->has_name = true;
      if (v.is_null()) f->name_null = true;
      else err = v.get_string().get(f->name);
    } else if (key == "domain") {
      if (!v.is_null()) f->domain = StringOrToken(v, &impl_->domain);
    } else if (key == "category" || key == "sync_kind") {
      if (!v.is_null()) f->category = StringOrToken(v, &impl_->category);
    } else if (key == "copy_kind") {
      if (!v.is_null()) f->copy_kind = StringOrToken(v, &impl_->copy_kind);
    } else if (key == "payload") {
      if (v.is_object()) {
        impl_->payload = simdjson::minify(v);
        f->payload = impl_->payload;
      }
    } else if (key == "grid") {
      ParseXyz(v, f->grid);
    } else if (key == "block") {
      ParseXyz(v, f->block);
    } else if (key == "host") {
      if (!v.is_null()) err = v.get_string().get(f->host);
    } else if (key == "clock") {
      if (!v.is_null()) err = v.get_string().get(f->clock);
    } else if (key == "schema") {
      if (!v.is_null()) f->schema = StringOrToken(v, &impl_->schema);
    } else if (key == "clock_sync") {
      if (!ParseClockSync(v, &f->clock_sync))
        Problem(line_no, "bad_clock_sync", "clock_sync is not {realtime_ns, monotonic_ns}");
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
    if (err) {
      Problem(line_no, "bad_field", "field \"" + std::string(key.substr(0, 64)) + "\" has the wrong type: " +
              simdjson::error_message(err));
      return false;
    }
  }
  return true;
}

void RawLineParser::ParseLine(std::string_view line, uint64_t line_no) {
  size_t first = line.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return;  // blank
  Fields f;
  if (!fast_path_ || !FastScan(line.substr(first), &f, &impl_->key_memo)) {
    f = Fields{};
    if (!ReadWithDom(line, line_no, &f)) return;
  }
  TraceFile& out = *out_;
  if (f.type.empty()) {
    Problem(line_no, "missing_field", "record has no \"type\"");
    return;
  }
  const RecordType rt = f.type_code_set ? f.type_code : RecordTypeOf(f.type);
  if (rt == RecordType::kMeta) {
    if (out.meta.has_meta) Problem(line_no, "duplicate_meta", "second META record ignored");
    else {
      out.meta.has_meta = true;
      out.meta.format = "truffld";
      out.meta.host.assign(f.host);
      if (f.has[kProcess]) out.meta.process_id = f.v[kProcess];
      if (f.has[kRank]) out.meta.rank = f.v[kRank];
      if (f.has[kLocalRank]) out.meta.local_rank = f.v[kLocalRank];
      if (f.has[kWorldSize]) out.meta.world_size = f.v[kWorldSize];
      if (!f.clock.empty()) {
        auto c = ParseClockName(f.clock);
        if (c) out.meta.clock = *c;
        else Problem(line_no, "bad_field", "unknown clock '" + std::string(f.clock) + "'");
      }
      out.meta.clock_sync.insert(out.meta.clock_sync.end(), f.clock_sync.begin(), f.clock_sync.end());
      if (!f.schema.empty() && f.schema != "truffld.events/1")
        Problem(line_no, "unknown_schema", "schema '" + std::string(f.schema) + "' read as truffld.events/1");
    }
    return;
  }
  if (rt == RecordType::kClock) {
    out.meta.clock_sync.insert(out.meta.clock_sync.end(), f.clock_sync.begin(), f.clock_sync.end());
    return;
  }
  if (rt == RecordType::kStats) {
    out.meta.stats_json.assign(line);
    if (f.dropped) out.stats.Add("injector_dropped", f.dropped);
    return;
  }
  Event e;
  auto need = [&](F a, const char* what) {
    if (f.has[a]) return true;
    Problem(line_no, "missing_field", std::string(f.type) + " record without \"" + what + "\"");
    return false;
  };
  // Copies field a into *dst (int64 or int32) when the record has it; true when it did.
  auto opt = [&](F a, auto* dst) {
    if (!f.has[a]) return false;
    *dst = static_cast<std::remove_pointer_t<decltype(dst)>>(f.v[a]);
    return true;
  };
  int64_t pid = kNone, tid = kNone;
  auto host = [&] { opt(kProcess, &pid); opt(kThread, &tid); };
  auto corr = [&] { if (f.has[kCorr]) out.SetCorrelation(e, f.v[kCorr]); };  // when the record has one
  auto interval = [&](F s, F en, F alt_s) {
    if (!f.has[s] && alt_s != kCount && f.has[alt_s]) s = alt_s;
    if (!need(s, s == kGpuStart ? "gpu_start" : "start")) return false;
    e.start = f.v[s];
    if (f.has[en]) e.end = f.v[en];
    else if (f.has[kEnd]) e.end = f.v[kEnd];
    else if (f.has[kDuration]) {
      if (__builtin_add_overflow(e.start, f.v[kDuration], &e.end))  // untrusted input: saturate
        e.end = f.v[kDuration] < 0 ? INT64_MIN : INT64_MAX;
    } else {
      return need(en, en == kGpuEnd ? "gpu_end" : "end");
    }
    if (e.end < e.start) {
      Problem(line_no, "negative_duration", std::string(f.type) + " ends " +
              // unsigned: the difference of two untrusted int64s may not fit one
              std::to_string(uint64_t(e.start) - uint64_t(e.end)) + " ns before it starts; clamped to zero length");
      e.end = e.start;
    }
    return true;
  };
  auto instant = [&] {
    if (!need(kTimestamp, "timestamp")) return false;
    e.start = e.end = f.v[kTimestamp];
    return true;
  };
  StringPool& sp = out.strings;
  EventExtra x;  // the rare fields; stored with the event (when not all defaults) at the end
  bool extra = false;  // some field of x was set (most records set none: no IsDefault test)
  auto xopt = [&](F a, auto* dst) { extra |= opt(a, dst); };
  auto xstr = [&](std::string_view v, StrId* dst) {
    if (v.empty()) return;
    *dst = sp.Intern(v);
    extra = true;
  };
  xstr(f.payload, &x.payload);
  xstr(f.category, &x.category);
  const std::string_view t = f.type;
  if (rt == RecordType::kNvtxPush || rt == RecordType::kNvtxMark || rt == RecordType::kNvtxStart ||
      rt == RecordType::kNvtxPop || rt == RecordType::kNvtxEnd) {
    if (!instant()) return;
    host();
    xopt(kId, &x.range_id);
    bool opens = rt != RecordType::kNvtxPop && rt != RecordType::kNvtxEnd;
    if (opens) {
      if (!f.has_name || f.name_null) { Problem(line_no, "missing_field", std::string(t) + " record without \"name\""); return; }
      e.name = sp.Intern(f.name);
    }
    if ((rt == RecordType::kNvtxStart || rt == RecordType::kNvtxEnd) && !need(kId, "id")) return;
    e.kind = rt == RecordType::kNvtxPush ? EventKind::kNvtxPush : rt == RecordType::kNvtxMark ? EventKind::kNvtxMark
           : rt == RecordType::kNvtxStart ? EventKind::kNvtxStart : rt == RecordType::kNvtxPop ? EventKind::kNvtxPop
           : EventKind::kNvtxEnd;
  } else if (rt == RecordType::kNvtxMarker) {
    if (!instant() || !need(kId, "id")) return;
    host();
    xopt(kId, &x.range_id);
    bool closes = !f.has_name || f.name_null || f.name == "null";
    e.kind = closes ? EventKind::kNvtxEnd : EventKind::kNvtxStart;
    if (!closes) e.name = sp.Intern(f.name);
    if (out.meta.format.empty()) out.meta.format = "truffld-marker";
  } else if (rt == RecordType::kRuntime || rt == RecordType::kDriver) {
    if (!interval(kStart, kEnd, kCount)) return;
    host();
    if (!need(kCorr, "correlation_id")) return;
    out.SetCorrelation(e, f.v[kCorr]);
    e.name = impl_->last_api_name.Intern(f.has_name && !f.name_null ? f.name : std::string_view("<unnamed API>"), sp);
    xopt(kCbid, &x.cbid); xopt(kRet, &x.return_code); xopt(kBytes, &x.bytes);
    xopt(kStream, &x.stream);
    if (f.has[kDevice]) { x.SetDevice(f.v[kDevice]); extra = true; }
    xstr(f.copy_kind, &x.copy_kind);
    e.kind = rt == RecordType::kRuntime ? EventKind::kRuntime : EventKind::kDriver;
  } else if (rt == RecordType::kKernel || rt == RecordType::kMemcpy || rt == RecordType::kMemset) {
    if (!interval(kGpuStart, kGpuEnd, kStart)) return;
    opt(kProcess, &pid);
    corr();
    if (f.has[kDevice]) x.SetDevice(f.v[kDevice]);
    xopt(kStream, &x.stream); xopt(kBytes, &x.bytes);
    xstr(f.copy_kind, &x.copy_kind);
    xopt(kGraph, &x.graph_id); xopt(kGraphNode, &x.graph_node_id);
    std::memcpy(x.grid, f.grid, sizeof x.grid);
    std::memcpy(x.block, f.block, sizeof x.block);
    extra = true;  // geometry: tested by SetExtra
    if (rt == RecordType::kKernel) {
      e.kind = EventKind::kKernel;
      e.name = sp.Intern(f.has_name && !f.name_null ? f.name : std::string_view("<unnamed kernel>"));
    } else {
      e.kind = rt == RecordType::kMemcpy ? EventKind::kMemcpy : EventKind::kMemset;
      e.name = sp.Intern(f.has_name && !f.name_null ? f.name
                         : rt == RecordType::kMemcpy ? std::string_view("Memcpy") : std::string_view("Memset"));
    }
    if (!f.has[kCorr]) Problem(line_no, "missing_field", std::string(t) + " record without \"correlation_id\"; kept, cannot be linked");
  } else if (rt == RecordType::kSync) {
    if (!interval(kStart, kEnd, kCount)) return;
    host();
    corr();
    xopt(kStream, &x.stream);
    e.name = x.category != kNoStr ? x.category : sp.Intern("sync");  // the category, interned above
    e.kind = EventKind::kSync;
  } else if (rt == RecordType::kGraphNode) {
    if (!instant() || !need(kGraph, "graph_id") || !need(kGraphNode, "graph_node_id")) return;
    host();
    corr();
    xopt(kGraph, &x.graph_id); xopt(kGraphNode, &x.graph_node_id);
    xopt(kOrigGraphNode, &x.original_graph_node_id);
    e.kind = EventKind::kGraphNode;
  } else {
    std::string shown(t.substr(0, 64));
    RepairUtf8(&shown);
    Problem(line_no, "unknown_type", "unknown record type '" + shown + "' skipped");
    return;
  }
  if (!f.domain.empty()) {
    x.domain = impl_->last_domain.Intern(f.domain, sp);
    if (!extra) {  // the domain is the only rare field
      Impl& m = *impl_;
      if (x.domain != m.domain_only) {
        out.SetExtra(e, x);
        m.domain_only = x.domain;
        m.domain_only_extra = e.extra;
      }
      e.extra = m.domain_only_extra;
    }
  }
  if (extra) out.SetExtra(e, x);
  out.SetThread(e, pid, tid);
  if (fold_ && (e.kind == EventKind::kNvtxPush || e.kind == EventKind::kNvtxPop) && Fold(e, x.payload)) return;
  out.AddEvent(e, line_no);
}

// Mirrors the stack scan of BuildHostRanges on one thread while the thread's records arrive in
// time order (ties in file order, as that scan breaks them): a pop closes the innermost open
// push there too, and dropping a matched pair leaves every other match unchanged. True when
// `e` (a pop) was folded into its push and must not be stored.
bool RawLineParser::Fold(Event& e, StrId payload) {
  auto& threads = impl_->fold;
  if (e.thread >= threads.size()) threads.resize(size_t(e.thread) + 1);
  Impl::FoldThread& t = threads[e.thread];
  if (!t.ordered) return false;
  if (e.start < t.last) {  // from here on file order is not time order: stop folding
    t.ordered = false;
    std::vector<uint32_t>().swap(t.open);
    if (t.folded) fold_conflict_ = true;
    return false;
  }
  t.last = e.start;
  std::vector<Event>& ev = out_->events;
  if (e.kind == EventKind::kNvtxPush) {
    t.open.push_back(static_cast<uint32_t>(ev.size()));  // its index once stored
    return false;
  }
  if (t.open.empty()) return false;  // an unmatched pop: range reconstruction reports it
  Event& push = ev[t.open.back()];
  t.open.pop_back();
  if (payload != kNoStr) return false;  // stored: range reconstruction pairs it and joins the payload
  push.kind = EventKind::kNvtxRange;
  push.end = e.start;
  t.folded = true;
  ++out_->folded_pops;
  return true;
}

}  // namespace truffld::merge
