// RawLineParser::EventBuilder: the per-record-type rules of events-v1.md that turn one
// record's fields into an Event and its rare fields (problems reported through the parser).
// Included by raw_parser.cc only. Units: ns. Thread-safety: one parser per file, one thread.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

#include "importers/raw/raw_fields.h"
#include "importers/raw/raw_parser_impl.h"
#include "truffld/status.h"

namespace truffld::merge {
using namespace raw;  // Fields, F

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

}  // namespace truffld::merge
