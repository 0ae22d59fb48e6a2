// RawLineParser: a record's fields (from the RawRecordReader) -> an Event, metadata or counts.
// The per-type rules follow events-v1.md; each problem is counted and reported with file:line.
#include "truffld/merge/raw_parser.h"

#include <cstring>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "core/nvtx_pairing.h"
#include "importers/raw/raw_fields.h"
#include "importers/raw/raw_record_reader.h"
#include "truffld/status.h"

namespace truffld::merge {
using namespace raw;  // Fields, F, RawRecordReader

namespace {

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

}  // namespace

struct RawLineParser::Impl {
  std::unique_ptr<RawRecordReader> reader;
  // The shared extras record of the last domain seen on a record with no other rare field
  // (most NVTX records): found here without building and hashing a whole EventExtra.
  StrId domain_only = kNoStr;
  uint32_t domain_only_extra = kNoExtra;
  LastString last_domain, last_api_name;
  // Source line of each entry of meta.device_window_edges (for Finish's messages).
  std::vector<uint64_t> window_lines;
  // Folding state per thread index (set_fold_push_pop).
  struct FoldThread {
    TimeNs last = INT64_MIN;  // time of the thread's latest push or pop
    PushPopPairing pairing;   // of event indices: the thread's open pushes
    bool ordered = true;      // every push/pop so far came in pairing order
    bool folded = false;      // some pop was folded
  };
  std::vector<FoldThread> fold;
};

// One record's fields -> an Event and its rare fields, by record type.
class RawLineParser::EventBuilder {
 public:
  EventBuilder(RawLineParser& p, const Fields& f, uint64_t line_no) : p_(p), f_(f), line_(line_no), sp_(p.out_->strings) {}

  // False when the record yields no event (the problem is reported).
  bool Build(RecordType rt) {
    xstr(f_.payload, &x.payload);
    xstr(f_.category, &x.category);
    switch (rt) {
      case RecordType::kNvtxPush: case RecordType::kNvtxMark: case RecordType::kNvtxStart:
      case RecordType::kNvtxPop: case RecordType::kNvtxEnd: return Nvtx(rt);
      case RecordType::kNvtxMarker: return Marker();
      case RecordType::kRuntime: case RecordType::kDriver: return Api(rt);
      case RecordType::kKernel: case RecordType::kMemcpy: case RecordType::kMemset: return Device(rt);
      case RecordType::kSync: return Sync();
      case RecordType::kGraphNode: return GraphNode();
      default: break;
    }
    std::string shown(f_.type.substr(0, 64));
    RepairUtf8(&shown);
    p_.ReportProblem(line_, Problem::kUnknownType, "unknown record type '" + shown + "' skipped");
    return false;
  }

  Event e;
  EventExtra x;        // stored with the event (when not all defaults) by the caller
  bool extra = false;  // some field of x was set (most records set none: no IsDefault test)
  int64_t pid = kNone, tid = kNone;

 private:
  bool Nvtx(RecordType rt) {
    if (!instant()) return false;
    host();
    xopt(kId, &x.range_id);
    if (rt != RecordType::kNvtxPop && rt != RecordType::kNvtxEnd) {
      if (!f_.has_name || f_.name_null) return Missing("name");
      e.name = sp_.Intern(f_.name);
    }
    if ((rt == RecordType::kNvtxStart || rt == RecordType::kNvtxEnd) && !need(kId, "id")) return false;
    e.kind = rt == RecordType::kNvtxPush ? EventKind::kNvtxPush : rt == RecordType::kNvtxMark ? EventKind::kNvtxMark
           : rt == RecordType::kNvtxStart ? EventKind::kNvtxStart : rt == RecordType::kNvtxPop ? EventKind::kNvtxPop
           : EventKind::kNvtxEnd;
    return true;
  }

  // The paper's dialect: a named marker opens range `id`, "name": "null" or null closes it.
  bool Marker() {
    if (!instant() || !need(kId, "id")) return false;
    host();
    xopt(kId, &x.range_id);
    const bool closes = !f_.has_name || f_.name_null || f_.name == "null";
    e.kind = closes ? EventKind::kNvtxEnd : EventKind::kNvtxStart;
    if (!closes) e.name = sp_.Intern(f_.name);
    if (p_.out_->meta.format.empty()) p_.out_->meta.format = "truffld-marker";
    return true;
  }

  bool Api(RecordType rt) {
    if (!interval(kStart, kEnd, kCount)) return false;
    host();
    if (!need(kCorr, "correlation_id")) return false;
    p_.out_->SetCorrelation(e, f_.v[kCorr]);
    e.name = p_.impl_->last_api_name.Intern(f_.has_name && !f_.name_null ? f_.name : std::string_view("<unnamed API>"), sp_);
    xopt(kCbid, &x.cbid);
    xopt(kRet, &x.return_code);
    xopt(kBytes, &x.bytes);
    xopt(kStream, &x.stream);
    if (f_.has[kDevice]) { x.SetDevice(f_.v[kDevice]); extra = true; }
    xstr(f_.copy_kind, &x.copy_kind);
    e.kind = rt == RecordType::kRuntime ? EventKind::kRuntime : EventKind::kDriver;
    return true;
  }

  bool Device(RecordType rt) {
    if (!interval(kGpuStart, kGpuEnd, kStart)) return false;
    opt(kProcess, &pid);
    corr();
    if (f_.has[kDevice]) x.SetDevice(f_.v[kDevice]);
    xopt(kStream, &x.stream);
    xopt(kBytes, &x.bytes);
    xstr(f_.copy_kind, &x.copy_kind);
    xopt(kGraph, &x.graph_id);
    xopt(kGraphNode, &x.graph_node_id);
    std::memcpy(x.grid, f_.grid, sizeof x.grid);
    std::memcpy(x.block, f_.block, sizeof x.block);
    extra = true;  // geometry: tested by SetExtra
    const bool named = f_.has_name && !f_.name_null;
    if (rt == RecordType::kKernel) {
      e.kind = EventKind::kKernel;
      e.name = sp_.Intern(named ? f_.name : std::string_view("<unnamed kernel>"));
    } else {
      e.kind = rt == RecordType::kMemcpy ? EventKind::kMemcpy : EventKind::kMemset;
      e.name = sp_.Intern(named ? f_.name : rt == RecordType::kMemcpy ? std::string_view("Memcpy") : std::string_view("Memset"));
    }
    if (!f_.has[kCorr])
      p_.ReportProblem(line_, Problem::kMissingField, std::string(f_.type) + " record without \"correlation_id\"; kept, cannot be linked");
    return true;
  }

  bool Sync() {
    if (!interval(kStart, kEnd, kCount)) return false;
    host();
    corr();
    xopt(kStream, &x.stream);
    e.name = x.category != kNoStr ? x.category : sp_.Intern("sync");  // the category, interned above
    e.kind = EventKind::kSync;
    return true;
  }

  bool GraphNode() {
    if (!instant() || !need(kGraph, "graph_id") || !need(kGraphNode, "graph_node_id")) return false;
    host();
    corr();
    xopt(kGraph, &x.graph_id);
    xopt(kGraphNode, &x.graph_node_id);
    xopt(kOrigGraphNode, &x.original_graph_node_id);
    e.kind = EventKind::kGraphNode;
    return true;
  }

  bool Missing(const char* what) {
    p_.ReportProblem(line_, Problem::kMissingField, std::string(f_.type) + " record without \"" + what + "\"");
    return false;
  }
  bool need(F a, const char* what) { return f_.has[a] || Missing(what); }
  // Copies field a into *dst (int64 or int32) when the record has it; true when it did.
  template <class T>
  bool opt(F a, T* dst) {
    if (!f_.has[a]) return false;
    *dst = static_cast<T>(f_.v[a]);
    return true;
  }
  template <class T>
  void xopt(F a, T* dst) { extra |= opt(a, dst); }
  void xstr(std::string_view v, StrId* dst) {
    if (v.empty()) return;
    *dst = sp_.Intern(v);
    extra = true;
  }
  void host() { opt(kProcess, &pid); opt(kThread, &tid); }
  void corr() { if (f_.has[kCorr]) p_.out_->SetCorrelation(e, f_.v[kCorr]); }
  bool instant() {
    if (!need(kTimestamp, "timestamp")) return false;
    e.start = e.end = f_.v[kTimestamp];
    return true;
  }
  bool interval(F s, F en, F alt_s);

  RawLineParser& p_;
  const Fields& f_;
  uint64_t line_;
  StringPool& sp_;
};

// [start, end] from `s` (or `alt_s`) and `en`, `end` or `duration`; a negative duration is
// clamped to zero length and reported.
bool RawLineParser::EventBuilder::interval(F s, F en, F alt_s) {
  if (!f_.has[s] && alt_s != kCount && f_.has[alt_s]) s = alt_s;
  if (!need(s, s == kGpuStart ? "gpu_start" : "start")) return false;
  e.start = f_.v[s];
  if (f_.has[en]) e.end = f_.v[en];
  else if (f_.has[kEnd]) e.end = f_.v[kEnd];
  else if (f_.has[kDuration]) {
    if (__builtin_add_overflow(e.start, f_.v[kDuration], &e.end))  // untrusted input: saturate
      e.end = f_.v[kDuration] < 0 ? INT64_MIN : INT64_MAX;
  } else {
    return need(en, en == kGpuEnd ? "gpu_end" : "end");
  }
  if (e.end < e.start) {
    // unsigned: the difference of two untrusted int64s may not fit one
    p_.ReportProblem(line_, Problem::kNegativeDuration, std::string(f_.type) + " ends " + std::to_string(uint64_t(e.start) - uint64_t(e.end)) +
               " ns before it starts; clamped to zero length");
    e.end = e.start;
  }
  return true;
}

RawLineParser::RawLineParser(TraceFile* out, std::string source)
    : impl_(std::make_unique<Impl>()), out_(out), source_(std::move(source)) {
  set_fast_path(RawReaderFromEnvironment() == RawReaderKind::kFast);
}
RawLineParser::~RawLineParser() = default;

void RawLineParser::set_fast_path(bool on) {
  impl_->reader = MakeRawRecordReader(on ? RawReaderKind::kFast : RawReaderKind::kSimdjson,
                                      [this](uint64_t line_no, Problem kind, std::string message) {
                                        ReportProblem(line_no, kind, std::move(message));
                                      });
}

void RawLineParser::Finish() {
  // A window end whose window never started (in any order in the file) is no window: taken as
  // one from the file's start it would mark every earlier step as having device detail.
  using E = FileMeta::WindowEdge;
  auto& edges = out_->meta.device_window_edges;
  std::unordered_set<int64_t> started;
  for (const auto& w : edges)
    if (w.edge != E::kEnd) started.insert(w.id);
  size_t kept = 0;
  for (size_t i = 0; i < edges.size(); ++i) {
    if (edges[i].edge == E::kEnd && !started.count(edges[i].id)) {
      ReportProblem(impl_->window_lines[i], Problem::kBadField,
                    "DEVICE_WINDOW end of window " + std::to_string(edges[i].id) + " without its start; ignored");
      continue;
    }
    edges[kept++] = edges[i];
  }
  edges.resize(kept);
}

void RawLineParser::ParseCutLine(std::string_view line, uint64_t line_no) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;  // blank: nothing lost
  cut_line_ = true;
  cut_error_.clear();
  ParseLine(line, line_no);
  cut_line_ = false;
  ReportProblem(line_no, Problem::kTruncatedLastLine,
                cut_error_.empty() ? "last line has no newline terminator (file cut short?); its record was read"
                                   : "last line has no newline terminator and is no complete record (file cut "
                                     "short?): " + cut_error_ + "; dropped");
}

void RawLineParser::ReportProblem(uint64_t line_no, Problem kind, std::string message) {
  if (cut_line_ && kind == Problem::kMalformedJson) {  // the cut itself: ParseCutLine reports it
    cut_error_ = std::move(message);
    return;
  }
  std::string where = source_ + ":" + std::to_string(line_no);
  if (problems_++ == 0) first_problem_ = where + ": " + message;
  out_->stats.Report(std::move(where), kind, std::move(message));
}

void RawLineParser::ParseLine(std::string_view line, uint64_t line_no) {
  const size_t first = line.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return;  // blank
  line.remove_prefix(first);  // (leading blanks are no part of the record)
  Fields f;
  if (!impl_->reader->Read(line, line_no, &f)) return;
  if (f.type.empty()) {
    ReportProblem(line_no, Problem::kMissingField, "record has no \"type\"");
    return;
  }
  const RecordType rt = f.type_code_set ? f.type_code : RecordTypeOf(f.type);
  switch (rt) {
    case RecordType::kMeta: ReadMeta(f, line_no); return;
    case RecordType::kClock:
      out_->meta.clock_sync.insert(out_->meta.clock_sync.end(), f.clock_sync.begin(), f.clock_sync.end());
      return;
    case RecordType::kStats:
      out_->meta.stats_json.assign(line);
      if (f.dropped) out_->stats.Add(Problem::kInjectorDropped, f.dropped);
      return;
    case RecordType::kDeviceWindow:  // an edge of a sampled device window: metadata, no event
      if (!f.has[kId] || !f.has[kTimestamp])
        ReportProblem(line_no, Problem::kMissingField, "DEVICE_WINDOW record without \"id\" or \"timestamp\"");
      else {
        using E = FileMeta::WindowEdge;
        const E edge = f.edge == "start" ? E::kStart : f.edge == "end" ? E::kEnd : E::kUnknown;
        if (edge == E::kUnknown)
          ReportProblem(line_no, Problem::kMissingField, "DEVICE_WINDOW record without \"edge\": \"start\" or \"end\"");
        if (f.v[kId] < 0) {
          ReportProblem(line_no, Problem::kBadField,
                        "DEVICE_WINDOW \"id\" " + std::to_string(f.v[kId]) + " is negative (ids count from 0); ignored");
          return;
        }
        out_->meta.device_window_edges.push_back({f.v[kId], f.v[kTimestamp], edge});
        impl_->window_lines.push_back(line_no);
      }
      return;
    default: break;
  }
  EventBuilder b(*this, f, line_no);
  if (!b.Build(rt)) return;
  Store(b.e, b.x, b.extra, f.domain, b.pid, b.tid, line_no);
}

void RawLineParser::ReadMeta(const raw::Fields& f, uint64_t line_no) {
  FileMeta& meta = out_->meta;
  if (meta.has_meta) {
    ReportProblem(line_no, Problem::kDuplicateMeta, "second META record ignored");
    return;
  }
  meta.has_meta = true;
  meta.format = "truffld";
  meta.host.assign(f.host);
  if (f.has[kProcess]) meta.process_id = f.v[kProcess];
  if (f.has[kRank]) meta.rank = f.v[kRank];
  if (f.has[kLocalRank]) meta.local_rank = f.v[kLocalRank];
  if (f.has[kWorldSize]) meta.world_size = f.v[kWorldSize];
  if (!f.clock.empty()) {
    if (auto c = ParseClockName(f.clock)) meta.clock = *c;
    else ReportProblem(line_no, Problem::kBadField, "unknown clock '" + std::string(f.clock) + "'");
  }
  meta.clock_sync.insert(meta.clock_sync.end(), f.clock_sync.begin(), f.clock_sync.end());
  meta.device_sampled = f.device_sampled;
  meta.device_all = f.device_all;
  if (!f.schema.empty() && f.schema != "truffld.events/1")
    ReportProblem(line_no, Problem::kUnknownSchema, "schema '" + std::string(f.schema) + "' read as truffld.events/1");
}

// Gives `e` its rare fields, domain and thread, and appends it (or folds it, see Fold).
void RawLineParser::Store(Event& e, EventExtra& x, bool extra, std::string_view domain, int64_t pid, int64_t tid,
                          uint64_t line_no) {
  TraceFile& out = *out_;
  if (!domain.empty()) {
    Impl& m = *impl_;
    x.domain = m.last_domain.Intern(domain, out.strings);
    if (!extra) {  // the domain is the only rare field
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

// Applies the pairing rule (core/nvtx_pairing.h) to one thread while its records arrive in
// pairing order: a pop that closes a push there closes it after sorting too, and dropping a
// matched pair leaves every other match unchanged. True when `e` (a pop) was folded into its
// push and must not be stored.
bool RawLineParser::Fold(Event& e, StrId payload) {
  auto& threads = impl_->fold;
  if (e.thread >= threads.size()) threads.resize(size_t(e.thread) + 1);
  Impl::FoldThread& t = threads[e.thread];
  if (!t.ordered) return false;
  if (!InPairingOrder(t.last, e.start)) {  // from here on file order is not pairing order: stop
    t.ordered = false;
    t.pairing.Reset();
    if (t.folded) fold_conflict_ = true;
    return false;
  }
  t.last = e.start;
  std::vector<Event>& ev = out_->events;
  if (e.kind == EventKind::kNvtxPush) {
    t.pairing.Push(uint32_t(ev.size()));  // its index once stored
    return false;
  }
  const uint32_t open = t.pairing.Pop();
  if (open == PushPopPairing::kUnmatched) return false;  // range reconstruction reports it
  if (payload != kNoStr) return false;  // stored: reconstruction pairs it and joins the payload
  Event& push = ev[open];
  push.kind = EventKind::kNvtxRange;
  push.end = e.start;
  t.folded = true;
  ++out_->folded_pops;
  return true;
}

}  // namespace truffld::merge
