// RawLineParser: a record's fields (from the RawRecordReader) -> an Event, metadata or counts.
// The per-type rules follow events-v1.md; each problem is counted and reported with file:line.
#include "truffld/merge/raw_parser.h"

#include <cstring>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "core/nvtx_pairing.h"
#include "importers/raw/raw_event_builder.h"
#include "importers/raw/raw_fields.h"
#include "importers/raw/raw_record_reader.h"
#include "truffld/status.h"

namespace truffld::merge {
using namespace raw;  // Fields, F, RawRecordReader

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
