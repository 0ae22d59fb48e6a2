// FileTreeBuilder: classification, nesting, step selection, API and device attribution.
#include "tree_builder.h"

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <tuple>
#include <unordered_map>

#include "event_rank.h"
#include "range_classes.h"
#include "release_pages.h"
#include "sorted_runs.h"
#include "truffld/merge/host_ranges.h"

namespace truffld::merge {
namespace {

constexpr uint32_t kNoIdx = UINT32_MAX;

class Builder {
 public:
  Builder(uint32_t fi, TraceFile& f, const ClockMap& off, const MergeOptions& o)
      : fi_(fi), file_(f), ev_(f.events), off_(off), opt_(o) {}

  FileTrees Run() {
    CountRead();
    RangeCounters rc;
    std::vector<RangeClose> payload_closes;
    std::vector<HostRange> ranges = BuildHostRanges(file_, &rc, &file_.stats, &payload_closes);
    JoinClosingPayloads(payload_closes, &file_);
    DropClosingEvents(&ranges);
    KeepRangesInEvents(std::move(ranges));
    out_.counters.unmatched_pops = rc.unmatched_pops;
    out_.counters.unclosed_ranges = rc.unclosed_ranges;
    out_.counters.zero_length_ranges = rc.zero_length_ranges;
    Classify();
    Nest();
    AttachApiCalls();
    LinkDevice();
    // The correlation index serves graph attribution too (CaptureOwners); without GRAPH_NODE
    // records it is done with, before the nodes are emitted.
    if (!graph_nodes_read_) std::vector<CorrEntry>().swap(corr_);
    EmitNodes();
    return std::move(out_);
  }

 private:
  // A range is kept as its opening event's index (range_event_, see KeepRangesInEvents), or,
  // from index real_ranges_ on, as an implicit step's span (implicit_ranges_).
  bool IsImplicit(uint32_t r) const { return r >= real_ranges_; }
  size_t RangeCount() const { return real_ranges_ + implicit_ranges_.size(); }
  // Range r: its start is its opening event's start, its thread that event's thread, and its end
  // the event's end (KeepRangesInEvents). Both inline to the loads that the caller uses.
  __attribute__((always_inline)) HostRange Range(uint32_t r) const {
    if (IsImplicit(r)) [[unlikely]] return implicit_ranges_[r - real_ranges_];
    const uint32_t i = range_event_[r];
    const Event& e = ev_[i];
    return {e.start, e.end, e.thread, i};
  }
  int64_t ProcessOf(const HostRange& h) const { return file_.threads[h.thread].process_id; }

  // Closing events (NVTX_POP, NVTX_END: a third of a dump) have done their work once the ranges
  // are built and their payloads joined: nothing after reads them. They are removed in place
  // (the order of the others is kept, and with it every tie broken by event index), the
  // ranges' event indices are renumbered, and the freed tail of the vector is handed back, for
  // the allocations that follow to reuse.
  void DropClosingEvents(std::vector<HostRange>* ranges) {
    const size_t n = ev_.size();
    EventRank kept;  // an event's index after the removal: its rank among the kept ones
    kept.Build(ev_, [](const Event& e) { return e.kind != EventKind::kNvtxPop && e.kind != EventKind::kNvtxEnd; });
    if (kept.size() == n) return;
    const bool with_lines = file_.lines.size() == n;
    const size_t out = file_.KeepEvents([&](size_t i) { return kept.Has(uint32_t(i)); });
    // The tails are still allocated (resize keeps the capacity): hand their pages back.
    ReleasePages(ev_.data() + out, ev_.data() + n);
    if (with_lines) ReleasePages(file_.lines.data() + out, file_.lines.data() + n);
    for (HostRange& h : *ranges)
      if (h.event != kNoEvent) h.event = kept.Rank(h.event);
  }

  // A range starts at its opening event's time, on that event's thread (BuildHostRanges), and
  // each event opens one range at most; its opening event's end was the opening instant (a
  // push's) or already the range's end (a complete or folded range's), and nothing reads a
  // push's own end. So the range's end is stored in its opening event, as EmitNodes did for every
  // range node anyway, and the range is kept as the event's index: 4 bytes a range instead of
  // 24 in the tables that are alive when the merge reaches its peak memory.
  void KeepRangesInEvents(std::vector<HostRange> ranges) {
    range_event_.resize(ranges.size());
    real_ranges_ = static_cast<uint32_t>(ranges.size());
    for (size_t r = 0; r < ranges.size(); ++r) {
      const HostRange& h = ranges[r];
      ev_[h.event].end = h.end;
      range_event_[r] = h.event;
    }
  }

  void CountRead() {
    uint64_t per_kind[16] = {};
    for (const Event& e : ev_) ++per_kind[static_cast<int>(e.kind)];
    // A folded range was read as an NVTX_PUSH and an NVTX_POP (RawLineParser).
    const uint64_t folded = per_kind[int(EventKind::kNvtxRange)];
    per_kind[int(EventKind::kNvtxPush)] += folded;
    per_kind[int(EventKind::kNvtxPop)] += folded;
    for (int k = 0; k < int(EventKind::kNvtxRange); ++k)
      if (per_kind[k]) out_.counters.events_read.emplace_back(EventKindName(EventKind(k)), per_kind[k]);
    auto& c = out_.counters;
    c.kernels_read = per_kind[int(EventKind::kKernel)];
    c.memcpys_read = per_kind[int(EventKind::kMemcpy)];
    c.memsets_read = per_kind[int(EventKind::kMemset)];
    c.device_ops_read = c.kernels_read + c.memcpys_read + c.memsets_read;
    graph_nodes_read_ = per_kind[int(EventKind::kGraphNode)];
  }

  ClassKey KeyOf(const Event& e) const {
    const EventExtra& x = file_.Extra(e);
    return {e.name, x.domain, x.category};
  }

  StrId FamilyOf(Layer layer, const Event& e) {
    uint64_t key = (uint64_t(layer) << 32) | e.name;
    const StrId copy_kind = layer == Layer::kMemcpy ? file_.Extra(e).copy_kind : kNoStr;
    if (copy_kind != kNoStr) key |= uint64_t(copy_kind) << 40;
    // The key holds a copy kind id of up to 24 bits; a larger one (a file of over 16 M distinct
    // strings) is not cached rather than confused with another.
    if (copy_kind >= (StrId{1} << 24)) return FamilyUncached(layer, e.name, copy_kind);
    FamilySlot& slot = family_front_[(key * 0x9E3779B97F4A7C15ull >> 40) % kFrontSlots];
    if (slot.id != kNoStr && slot.key == key) return slot.id;
    auto it = family_cache_.find(key);
    const StrId id = it != family_cache_.end() ? it->second : FamilyUncached(layer, e.name, copy_kind);
    if (it == family_cache_.end()) family_cache_.emplace(key, id);
    slot = {key, id};
    return id;
  }

  StrId FamilyUncached(Layer layer, StrId name_id, StrId copy_kind) {
    std::string_view name = file_.strings.Get(name_id);
    std::string fam = NormaliseFamily(layer, name);
    if (layer == Layer::kMemcpy && name == "Memcpy" && copy_kind != kNoStr)
      fam += " " + std::string(file_.strings.Get(copy_kind));
    return file_.strings.Intern(fam);
  }

  void Classify() {
    layer_.resize(range_event_.size());
    class_src_.resize(range_event_.size());
    bool any_step = false;
    for (size_t r = 0; r < range_event_.size(); ++r) {
      layer_[r] = classes_.LayerOf(KeyOf(ev_[range_event_[r]]), &class_src_[r]);
      any_step |= layer_[r] == Layer::kStep;
    }
    if (any_step || !opt_.implicit_steps) return;
    // No step range at all: one implicit step per process spanning its host activity.
    std::map<int64_t, std::pair<TimeNs, TimeNs>> span;
    auto widen = [&](int64_t p, TimeNs s, TimeNs e) {
      auto [it, fresh] = span.emplace(p, std::make_pair(s, e));
      if (!fresh) {
        it->second.first = std::min(it->second.first, s);
        it->second.second = std::max(it->second.second, e);
      }
    };
    for (uint32_t r = 0; r < range_event_.size(); ++r) {
      const HostRange h = Range(r);
      widen(ProcessOf(h), h.start, h.end);
    }
    for (const Event& e : ev_)
      if (IsApiKind(e.kind)) widen(file_.ProcessOf(e), e.start, std::max(e.start, e.end));
    StrId name = file_.strings.Intern("<implicit step>");
    // An implicit step's thread is (process, kNone): new table entries, so the table is put
    // back in (process, thread) order (RangeLess compares thread indices).
    for (auto& [p, se] : span) file_.threads.Index(p, kNone);
    file_.SortThreads();  // renumbers the events' threads, and with them the ranges'
    for (auto& [p, se] : span) {
      implicit_of_[p] = static_cast<uint32_t>(RangeCount());
      implicit_ranges_.push_back({se.first, se.second, file_.threads.Index(p, kNone), kNoEvent});
      layer_.push_back(Layer::kStep);
    }
    implicit_name_ = name;
  }

  // Parent links per (process, thread) by stack scanning over ranges sorted by start.
  void Nest() {
    const size_t n = RangeCount();
    parent_.assign(n, kNoIdx);
    step_of_.assign(n, kNoIdx);
    sorted_.resize(n);
    for (uint32_t i = 0; i < n; ++i) sorted_[i] = i;
    // BuildHostRanges yields a few blocks each in this order (complete ranges, push/pop ranges,
    // start/end ranges, implicit steps): merged, not comparison-sorted.
    auto less = [&](uint32_t a, uint32_t b) { return RangeLess(a, b); };
    SortRuns(&sorted_, less);
    std::vector<uint32_t> stack;
    uint32_t ct = UINT32_MAX;  // thread of the stack
    for (uint32_t r : sorted_) {
      if (IsImplicit(r)) { step_of_[r] = r; continue; }
      const HostRange h = Range(r);
      if (h.thread != ct) { stack.clear(); ct = h.thread; }
      while (!stack.empty() && !(Range(stack.back()).start <= h.start && h.end <= Range(stack.back()).end))
        stack.pop_back();
      uint32_t p = stack.empty() ? kNoIdx : stack.back();
      parent_[r] = p;
      if (layer_[r] == Layer::kStep && p != kNoIdx && step_of_[p] != kNoIdx) layer_[r] = Layer::kOther;  // nested step
      if (layer_[r] == Layer::kStep) step_of_[r] = r;
      else if (p != kNoIdx) step_of_[r] = step_of_[p];
      else if (auto it = implicit_of_.find(ProcessOf(h)); it != implicit_of_.end()) {
        parent_[r] = it->second;
        step_of_[r] = it->second;
      }
      stack.push_back(r);
    }
    // Cross-thread adoption: a range on another thread of the step's process that lies wholly
    // inside the step (e.g. the autograd thread during a ProfilerStep) joins that step.
    for (uint32_t r = 0; r < n; ++r)
      if (step_of_[r] == r) step_spans_.push_back({ProcessOf(Range(r)), Range(r).start, Range(r).end, r});
    std::sort(step_spans_.begin(), step_spans_.end());
    if (step_spans_.empty()) return;
    for (uint32_t r : sorted_) {
      if (step_of_[r] != kNoIdx) continue;
      uint32_t p = parent_[r];
      if (p != kNoIdx && step_of_[p] != kNoIdx) { step_of_[r] = step_of_[p]; continue; }
      const HostRange h = Range(r);
      uint32_t s = StepContaining(ProcessOf(h), h.start, h.end);
      if (s == kNoIdx) continue;
      parent_[r] = s;
      step_of_[r] = s;
      ++out_.counters.adopted_ranges;
    }
  }

  struct StepSpan {
    int64_t process;
    TimeNs start, end;
    uint32_t range;
    bool operator<(const StepSpan& o) const {
      return std::tie(process, start, end, range) < std::tie(o.process, o.start, o.end, o.range);
    }
  };

  // The latest-starting step of `process` containing [s, e], or kNoIdx.
  uint32_t StepContaining(int64_t process, TimeNs s, TimeNs e) const {
    auto it = std::upper_bound(step_spans_.begin(), step_spans_.end(), StepSpan{process, s, INT64_MAX, kNoIdx});
    // Steps of one process seldom overlap, so the few latest-starting candidates suffice.
    for (int tries = 0; it != step_spans_.begin() && tries < 16; ++tries) {
      --it;
      if (it->process != process) break;
      if (it->start <= s && e <= it->end) return it->range;
    }
    return kNoIdx;
  }

  __attribute__((always_inline)) bool RangeLess(uint32_t a, uint32_t b) const {
    const HostRange x = Range(a);
    const HostRange y = Range(b);
    if (x.thread != y.thread) return x.thread < y.thread;  // (process, thread) order: SortThreads
    if (x.start != y.start) return x.start < y.start;
    if (x.end != y.end) return x.end > y.end;  // the longer one encloses
    return x.event < y.event;
  }

  // api_owner_[call ordinal] = innermost range containing the call's start on its thread.
  void AttachApiCalls() {
    api_rank_.Build(ev_, [](const Event& e) { return IsApiKind(e.kind); });
    std::vector<uint32_t> api;
    api.reserve(api_rank_.size());
    for (uint32_t i = 0; i < ev_.size(); ++i)
      if (api_rank_.Has(i)) api.push_back(i);
    OrderByThreadThenTime(ev_, &api);  // (process, thread, start), ties in file order
    api_owner_.assign(api_rank_.size(), kNoIdx);
    // Capture ranges serve CUDA-graph attribution only (CaptureOwners): no GRAPH_NODE records,
    // no 4 bytes per call.
    if (graph_nodes_read_) capture_range_.assign(api_rank_.size(), kNoIdx);
    size_t ri = 0;
    std::vector<uint32_t> stack;
    uint32_t ct = UINT32_MAX;  // thread of the stack
    auto before = [&](uint32_t r, uint32_t t) { return Range(r).thread < t; };  // range's thread sorts first
    // Correlation index: (correlation, start) -> API event, sorted for binary search below.
    corr_.reserve(api.size());
    constexpr size_t kAhead = 16;  // calls lie scattered among other events: load ahead
    for (size_t ai = 0; ai < api.size(); ++ai) {
      if (ai + kAhead < api.size()) PrefetchLine(&ev_[api[ai + kAhead]]);
      const uint32_t a = api[ai];
      const Event& e = ev_[a];
      corr_.push_back({file_.Correlation(e), a});
      if (e.thread != ct) { stack.clear(); ct = e.thread; }
      while (ri < sorted_.size() && (IsImplicit(sorted_[ri]) || before(sorted_[ri], ct))) ++ri;
      while (ri < sorted_.size()) {
        uint32_t r = sorted_[ri];
        if (IsImplicit(r)) { ++ri; continue; }
        const HostRange h = Range(r);
        if (h.thread != ct || h.start > e.start) break;
        while (!stack.empty() && Range(stack.back()).end < h.start) stack.pop_back();
        stack.push_back(r);
        ++ri;
      }
      while (!stack.empty() && Range(stack.back()).end < e.start) stack.pop_back();
      uint32_t owner = stack.empty() ? kNoIdx : stack.back();
      // The owner must contain the whole call (a call starting as a range ends belongs to the
      // enclosing range); partially overlapping ranges can also leave a non-containing entry
      // on top of the stack. Walk down to the innermost range containing [start, end].
      const TimeNs call_end = std::max(e.start, e.end);
      for (size_t k = stack.size(); owner != kNoIdx && k-- > 0;) {
        const HostRange h = Range(stack[k]);
        if (h.start <= e.start && call_end <= h.end) { owner = stack[k]; break; }
        if (k == 0) owner = kNoIdx;
      }
      if (graph_nodes_read_) capture_range_[api_rank_.Rank(a)] = owner;  // kept even outside steps: graphs are often captured there
      if (owner == kNoIdx)
        if (auto it = implicit_of_.find(file_.ProcessOf(e)); it != implicit_of_.end()) owner = it->second;
      if ((owner == kNoIdx || step_of_[owner] == kNoIdx) && !step_spans_.empty()) {
        uint32_t st = StepContaining(file_.ProcessOf(e), e.start, call_end);
        if (st != kNoIdx) { owner = st; ++out_.counters.adopted_api_calls; }
      }
      if (owner == kNoIdx || step_of_[owner] == kNoIdx) {
        ++out_.counters.api_calls_outside_step;
        owner = kNoIdx;
      }
      api_owner_[api_rank_.Rank(a)] = owner;
    }
    SortRuns(&corr_, [this](const CorrEntry& x, const CorrEntry& y) { return CorrLess(x, y); });
    // CUPTI gives a driver call made inside a runtime call (cudaMalloc -> cuMemAlloc, cuBLAS's
    // launches) the runtime call's correlation id: such a nested call is normal, not a
    // duplicate. Only a call outside the group's current outermost call counts.
    size_t outer = 0;
    for (size_t i = 1; i < corr_.size(); ++i) {
      if (corr_[i].corr != corr_[i - 1].corr) { outer = i; continue; }
      if (NestedIn(ev_[corr_[i].event], ev_[corr_[outer].event])) {
        ++out_.counters.nested_api_calls;
        continue;
      }
      const bool same_process = file_.ProcessOf(ev_[corr_[i].event]) == file_.ProcessOf(ev_[corr_[outer].event]);
      outer = i;
      if (corr_[i].corr != kNone && same_process) {
        ++out_.counters.duplicate_correlations;
        file_.stats.Report(file_.meta.path + ":" + std::to_string(file_.LineOf(corr_[i].event)), "duplicate_correlation",
                           "correlation id " + std::to_string(corr_[i].corr) +
                           " used by more than one API call; device activity goes to the latest call before it");
      }
    }
  }

  // `inner` runs inside `outer` on the same thread (a driver call made by a runtime call).
  static bool NestedIn(const Event& inner, const Event& outer) {
    return inner.thread == outer.thread &&
           outer.start <= inner.start && inner.end <= outer.end;
  }

  // The correlation index: an API call's correlation id and event, 12 bytes (packed: an int64
  // and a uint32 would take 16). Ordered by (correlation, call start, event); the start is read
  // from the event, only when two calls share a correlation id.
  struct __attribute__((packed)) CorrEntry {
    int64_t corr;
    uint32_t event;
  };
  static_assert(sizeof(CorrEntry) == 12);
  bool CorrLess(const CorrEntry& x, const CorrEntry& y) const {
    if (x.corr != y.corr) return x.corr < y.corr;
    const TimeNs xs = ev_[x.event].start, ys = ev_[y.event].start;
    return xs != ys ? xs < ys : x.event < y.event;
  }
  // The first entry of correlation id c.
  std::vector<CorrEntry>::const_iterator FirstOf(int64_t c) const {
    return std::lower_bound(corr_.begin(), corr_.end(), c, [](const CorrEntry& x, int64_t v) { return x.corr < v; });
  }

  // Device activity (and SYNC records) -> launching API call.
  void LinkDevice() {
    auto& c = out_.counters;
    device_of_.reserve(c.device_ops_read + 16);  // no doubling copies
    for (uint32_t i = 0; i < ev_.size(); ++i) {
      const Event& d = ev_[i];
      bool device = IsDeviceKind(d.kind);
      if (!device && d.kind != EventKind::kSync) continue;
      const int64_t corr = file_.Correlation(d);
      auto lo = FirstOf(corr);
      auto hi = lo;
      while (hi != corr_.end() && hi->corr == corr) ++hi;
      uint32_t api = kNoIdx;
      bool any = false;
      const int64_t dp = file_.ProcessOf(d);
      // The latest call in the same process starting no later; of a runtime call and the driver
      // calls nested in it (one correlation id), the outermost, the one the application made.
      for (auto it = lo; it != hi; ++it) {
        const Event& a = ev_[it->event];
        if (dp != kNone && file_.ProcessOf(a) != kNone && dp != file_.ProcessOf(a)) continue;
        any = true;
        if (a.start <= d.start && (api == kNoIdx || !NestedIn(a, ev_[api]))) api = it->event;
      }
      const char* reason = nullptr;
      if (corr == kNone || !any) reason = "no_launch_api";
      else if (api == kNoIdx) reason = "starts_before_launch";
      else if (api_owner_[api_rank_.Rank(api)] == kNoIdx) reason = "launch_outside_step";
      if (reason) {
        if (device) {
          c.AddReason(reason);
          ++c.device_ops_unattributed;
          if (d.kind == EventKind::kKernel) ++c.kernels_unattributed;
          if (reason[0] != 'l')
            file_.stats.Report(file_.meta.path + ":" + std::to_string(file_.LineOf(i)), std::string("device_") + reason,
                               std::string(EventKindName(d.kind)) + " with correlation id " +
                               std::to_string(corr) +
                               (reason[0] == 'n' ? " has no launching API call in this file"
                                                 : " starts before its launching API call"));
        }
        continue;
      }
      device_of_.push_back({api, i});
      if (device) {
        ++c.device_ops_linked_unique;
        if (d.kind == EventKind::kKernel) ++c.kernels_linked_unique;
      }
    }
  }

  // graph_node_id -> range open around the API call that created the node (following clones
  // to their original), from GRAPH_NODE records; empty when the file has none. Must run while
  // api_owner_ still holds ranges.
  std::unordered_map<int64_t, uint32_t> CaptureOwners() const {
    std::unordered_map<int64_t, const Event*> by_id;
    for (const Event& e : ev_)
      if (e.kind == EventKind::kGraphNode) by_id.emplace(file_.Extra(e).graph_node_id, &e);
    std::unordered_map<int64_t, uint32_t> out;
    for (const auto& [id, first] : by_id) {
      const Event* g = first;
      for (int hop = 0; hop < 8 && file_.Extra(*g).original_graph_node_id != kNone; ++hop) {
        auto it = by_id.find(file_.Extra(*g).original_graph_node_id);
        if (it == by_id.end()) break;
        g = it->second;
      }
      uint32_t owner = kNoIdx;
      const int64_t corr = file_.Correlation(*g);
      for (auto c = FirstOf(corr); c != corr_.end() && c->corr == corr; ++c) {
        const uint32_t k = api_rank_.Rank(c->event);
        if (api_owner_[k] != kNoIdx) owner = api_owner_[k];
        else if (capture_range_[k] != kNoIdx) owner = capture_range_[k];
      }
      if (owner != kNoIdx) out.emplace(id, owner);
    }
    return out;
  }

  Layer DeviceLayer(EventKind k) const {
    switch (k) {
      case EventKind::kKernel: return Layer::kKernel;
      case EventKind::kMemcpy: return Layer::kMemcpy;
      case EventKind::kMemset: return Layer::kMemset;
      default: return Layer::kSync;
    }
  }

  // A node for `event` spanning [s, e] (file time; s is the event's start): the end is kept in
  // the event (a range's opening event gets the range's end) and MapEvents puts both on the
  // merged axis at the end. kNoEvent: an implicit step named implicit_name_, whose span is
  // kept in out_.implicit.
  uint32_t NewNode(uint32_t event, Layer layer, TimeNs s, TimeNs e) {
    Node n;
    n.file = fi_;
    n.event = event;
    n.layer = layer;
    const uint32_t index = static_cast<uint32_t>(out_.nodes.size());
    if (event != kNoEvent) ev_[event].end = e;
    else out_.implicit.push_back({index, off_.Map(s), off_.Map(e), implicit_name_});
    out_.nodes.push_back(n);
    return index;
  }

  // Every event's times onto the merged axis, in place, once all nodes exist (they read their
  // times from their events from here on).
  void MapEvents() {
    if (off_.offset == 0 && off_.drift == 0) return;  // the file is on the axis already
    for (Event& e : ev_) {
      e.start = off_.Map(e.start);
      e.end = off_.Map(e.end);
    }
  }

  TimeNs NodeStart(uint32_t i) const {
    const Node& n = out_.nodes[i];
    if (n.event != kNoEvent) return ev_[n.event].start;
    const ImplicitSpan* sp = FindImplicitSpan(out_.implicit, i);  // in node order: appended as created
    return sp ? sp->start : 0;
  }

  // Node n (the newest node, so the side tables stay ascending) belongs to request set `set`
  // only, or is anchored to node a.
  void SetRequests(uint32_t n, uint32_t set) {
    out_.nodes[n].has_requests = true;
    out_.requests.push_back({n, set});
  }
  void SetAnchor(uint32_t n, uint32_t a) {
    out_.nodes[n].has_anchor = true;
    out_.anchors.push_back({n, a});
  }

  // The step whose vertical root is node v. Steps are appended as their roots are created, so
  // out_.steps is in root-node order: a binary search (only ranges naming requests and
  // communication ranges ask), instead of a step slot per range.
  const StepRoot& StepOfRoot(uint32_t v) const {
    auto it = std::lower_bound(out_.steps.begin(), out_.steps.end(), v,
                               [](const StepRoot& s, uint32_t x) { return s.vertical < x; });
    return *it;
  }

  uint32_t RequestSet(const std::vector<std::string>& ids) {
    for (size_t i = 0; i < out_.request_sets.size(); ++i)
      if (out_.request_sets[i] == ids) return static_cast<uint32_t>(i);
    out_.request_sets.push_back(ids);
    return static_cast<uint32_t>(out_.request_sets.size() - 1);
  }

  void EmitNodes() {
    // Of the source lines, only the step roots' are read from here on (StepRoot::line): keep
    // those few and free the rest before the nodes grow, where the merge reaches its peak.
    NodeSideTable step_lines;  // (event, line), ascending by event
    for (const StepSpan& s : step_spans_)  // the ranges r with step_of_[r] == r (Nest)
      if (!IsImplicit(s.range) && layer_[s.range] == Layer::kStep)
        step_lines.push_back({range_event_[s.range], file_.LineOf(range_event_[s.range])});
    std::sort(step_lines.begin(), step_lines.end());
    std::vector<uint32_t>().swap(file_.lines);
    // At most one node per (remaining) event, plus a second root per step and two per implicit
    // step: reserved once, since a regrowth would copy the nodes and briefly hold them twice
    // (untouched capacity costs address space only).
    out_.nodes.reserve(ev_.size() + 2 * step_spans_.size() + 16);
    // node_of[r]: range r's node (kNoNode: none, the range lies outside every step). It takes
    // over the parent table and overwrites it range by range: r's entry is read as r's parent
    // when r is reached, then replaced by r's node; parents are reached before their children
    // (below), so a child finds its parent's node there. One 4-byte table less at the peak.
    std::vector<uint32_t> node_of = std::move(parent_);
    // Until the sibling lists are built at the end, a node's next_sibling holds its parent
    // (kNoNode: a root): no separate 4-bytes-a-node table at the merge's peak.
    auto link = [&](uint32_t parent, uint32_t child) { out_.nodes[child].next_sibling = parent; };
    // Parents precede children in sorted_ order (implicit steps are created up front).
    for (uint32_t r : sorted_) {
      if (!IsImplicit(r)) continue;
      const HostRange h = Range(r);
      uint32_t v = NewNode(kNoEvent, Layer::kStep, h.start, h.end);
      out_.nodes[v].family = file_.strings.Intern("step");
      node_of[r] = v;
      const uint32_t hroot = NewNode(kNoEvent, Layer::kStep, h.start, h.end);
      out_.nodes[hroot].family = out_.nodes[v].family;
      out_.steps.push_back({v, hroot, off_.Map(h.start), ProcessOf(h), {"*"}, true, 0});
      ++out_.counters.implicit_steps;
    }
    std::vector<uint8_t> in_comm(RangeCount(), 0);
    // Two passes: step roots first, because a range adopted from another thread can sort
    // before its step (sorted_ orders by thread first).
    constexpr size_t kAhead = 16;  // ranges and their events lie scattered: load ahead
    for (int pass = 0; pass < 2; ++pass)
    for (size_t si = 0; si < sorted_.size(); ++si) {
      if (si + kAhead < sorted_.size() && !IsImplicit(sorted_[si + kAhead]))
        PrefetchLine(&range_event_[sorted_[si + kAhead]]);
      if (si + kAhead / 2 < sorted_.size() && !IsImplicit(sorted_[si + kAhead / 2]))
        PrefetchLine(&ev_[range_event_[sorted_[si + kAhead / 2]]]);  // its index was prefetched 8 rounds ago
      const uint32_t r = sorted_[si];
      if (IsImplicit(r)) continue;
      if (step_of_[r] == kNoIdx) {
        if (pass == 0) node_of[r] = kNoNode;  // no node: its parent entry goes too
        continue;
      }
      if ((step_of_[r] == r) != (pass == 0)) continue;
      const HostRange h = Range(r);
      const Event& e = ev_[h.event];
      const RangeClass& cls = classes_.ClassFor(KeyOf(e), layer_[r], class_src_[r]);
      const uint32_t p = node_of[r];  // still r's parent range: read before r's node replaces it
      uint32_t n = NewNode(h.event, layer_[r], h.start, h.end);
      node_of[r] = n;
      out_.nodes[n].family = cls.family;
      if (layer_[r] == Layer::kStep && step_of_[r] == r) {
        const uint32_t hroot = NewNode(h.event, Layer::kStep, h.start, h.end);
        out_.nodes[hroot].family = out_.nodes[n].family;
        auto ids = cls.requests;
        if (ids.empty()) ids = {"*"};
        out_.steps.push_back({n, hroot, off_.Map(h.start), ProcessOf(h), std::move(ids), false,
                               LookUpSide(step_lines, h.event, 0)});
        continue;
      }
      const uint32_t step = step_of_[r];
      if (!cls.requests.empty()) {
        const auto& step_ids = StepOfRoot(node_of[step]).requests;
        std::vector<std::string> sub;
        for (const auto& id : cls.requests)
          if (std::find(step_ids.begin(), step_ids.end(), id) != step_ids.end() || step_ids[0] == "*") sub.push_back(id);
        if (!sub.empty() && (step_ids[0] == "*" || sub.size() < step_ids.size())) SetRequests(n, RequestSet(sub));
      }
      if (layer_[r] == Layer::kComm && !in_comm[p]) {
        // Outermost comm range: horizontal view, anchored to the enclosing vertical range.
        in_comm[r] = 1;
        SetAnchor(n, node_of[p]);
        link(StepOfRoot(node_of[step]).horizontal, n);  // the step's horizontal root
      } else {
        in_comm[r] = in_comm[p];
        link(node_of[p], n);
      }
    }
    std::unordered_map<int64_t, uint32_t> capture_owner = CaptureOwners();
    // Linking and capture owners are done: free their indexes before the nodes grow (the merge's
    // peak memory is reached while nodes are emitted).
    std::vector<CorrEntry>().swap(corr_);
    std::vector<uint32_t>().swap(capture_range_);
    // So are the range tables (node_of stays: calls link to their range's node). The API and
    // device nodes created next are most of the nodes: freeing ~15 bytes per range first lowers
    // the peak, and the pages freed are the ones those nodes then reuse (on a VM that hands
    // freed memory back to the host, a fresh page costs far more than a reused one). The
    // fallback for graphs captured outside steps still reads range_event_ and layer_.
    std::vector<uint8_t>().swap(in_comm);
    std::vector<RangeClasses::Source>().swap(class_src_);
    for (auto* v : {&step_of_, &sorted_}) std::vector<uint32_t>().swap(*v);
    std::vector<StepSpan>().swap(step_spans_);
    std::unordered_map<int64_t, uint32_t>().swap(implicit_of_);
    if (capture_owner.empty()) {
      std::vector<uint32_t>().swap(range_event_);
      std::vector<Layer>().swap(layer_);
    }
    for (uint32_t a = 0, k = 0; a < ev_.size(); ++a) {
      const Event& e = ev_[a];
      if (!api_rank_.Has(a)) continue;
      uint32_t& owner_slot = api_owner_[k++];  // calls in event order: k is a's ordinal
      if (owner_slot == kNoIdx) continue;
      const uint32_t owner = owner_slot;
      uint32_t n = NewNode(a, e.kind == EventKind::kRuntime ? Layer::kRuntime : Layer::kDriver, e.start,
                           std::max(e.start, e.end));
      out_.nodes[n].family = FamilyOf(out_.nodes[n].layer, e);
      owner_slot = n;  // from here on: the call's node
      link(node_of[owner], n);
    }
    // Device ops link to their call's node: look those up now and free the per-call table
    // (and node_of, unless graph attribution still needs it) before the device nodes grow.
    for (auto& [api, d] : device_of_) api = api_owner_[api_rank_.Rank(api)];
    std::vector<uint32_t>().swap(api_owner_);
    api_rank_ = EventRank();
    if (capture_owner.empty()) std::vector<uint32_t>().swap(node_of);
    for (size_t di = 0; di < device_of_.size(); ++di) {
      if (di + kAhead < device_of_.size()) PrefetchLine(&ev_[device_of_[di + kAhead].second]);
      const auto [api_node, d] = device_of_[di];
      const Event& e = ev_[d];
      Layer l = DeviceLayer(e.kind);
      uint32_t n = NewNode(d, l, e.start, std::max(e.start, e.end));
      out_.nodes[n].family = FamilyOf(l, e);
      link(api_node, n);
      const int64_t graph_node_id = file_.Extra(e).graph_node_id;
      if (graph_node_id != kNone && !capture_owner.empty()) {
        // CUDA graph work: name the operator that was open when this node was captured.
        auto it = capture_owner.find(graph_node_id);
        if (it != capture_owner.end() && node_of[it->second] == kNoNode) {
          // Captured outside every step (engines capture graphs during warm-up): the range gets
          // a node of its own that belongs to no tree, so captured_in can still name it.
          const HostRange h = Range(it->second);
          uint32_t c = NewNode(h.event, layer_[it->second], h.start, h.end);
          out_.nodes[c].family = file_.strings.Intern(
              NormaliseFamily(layer_[it->second], file_.strings.Get(ev_[h.event].name)));
          node_of[it->second] = c;
          ++out_.counters.capture_ranges_outside_steps;
        }
        if (it != capture_owner.end()) {
          SetAnchor(n, node_of[it->second]);
          ++out_.counters.graph_ops_attributed;
        }
      }
    }
    // Sibling lists in start order. Walking the nodes backwards and pushing each onto its
    // parent's list leaves every list in creation order, with no memory beyond the nodes (a
    // node's parent is read from its next_sibling before that is overwritten; the parent's
    // first_child is another field); a list whose order is not (start, node) is noted as it is
    // built (a child starting after the sibling created after it), and only those few lists
    // are sorted. No comparison sort over millions of links.
    MapEvents();
    auto& nodes = out_.nodes;
    std::vector<uint32_t> unsorted;
    for (uint32_t c = static_cast<uint32_t>(nodes.size()); c-- > 0;) {
      const uint32_t p = nodes[c].next_sibling;  // the parent, see link()
      if (p == kNoNode) continue;
      const uint32_t next = nodes[p].first_child;
      if (next != kNoNode && NodeStart(next) < NodeStart(c)) unsorted.push_back(p);
      nodes[c].next_sibling = next;
      nodes[p].first_child = c;
    }
    std::sort(unsorted.begin(), unsorted.end());
    unsorted.erase(std::unique(unsorted.begin(), unsorted.end()), unsorted.end());
    // A list is a few runs in start order (a range's child ranges, then its API calls, then
    // device work, each created in order): merged as runs, on (start, node) pairs read once,
    // since a comparison that looks a start up through the node's event is a cache miss (a
    // comparison sort that did so was a fifth of a realistic merge's instructions).
    std::vector<std::pair<TimeNs, uint32_t>> kids;
    for (const uint32_t p : unsorted) {
      kids.clear();
      for (uint32_t x = nodes[p].first_child; x != kNoNode; x = nodes[x].next_sibling) kids.emplace_back(NodeStart(x), x);
      SortRuns(kids.begin(), kids.end(), std::less<>());
      for (size_t k = 0; k + 1 < kids.size(); ++k) nodes[kids[k].second].next_sibling = kids[k + 1].second;
      nodes[kids.back().second].next_sibling = kNoNode;
      nodes[p].first_child = kids.front().second;
    }
    out_.counters.steps = out_.steps.size();
  }

  uint32_t fi_;
  TraceFile& file_;
  std::vector<Event>& ev_;
  ClockMap off_;
  const MergeOptions& opt_;
  FileTrees out_;
  size_t graph_nodes_read_ = 0;
  std::vector<uint32_t> range_event_;        // per range: its opening event (KeepRangesInEvents)
  uint32_t real_ranges_ = 0;                 // range_event_.size(), kept after range_event_ is freed
  std::vector<HostRange> implicit_ranges_;   // implicit steps' spans, ranges real_ranges_ on
  std::vector<Layer> layer_;
  std::vector<RangeClasses::Source> class_src_;  // per range: where Classify found its class
  std::vector<uint32_t> parent_, step_of_, sorted_;
  std::vector<StepSpan> step_spans_;
  std::unordered_map<int64_t, uint32_t> implicit_of_;
  RangeClasses classes_{opt_.rules, file_.strings};
  std::unordered_map<uint64_t, StrId> family_cache_;
  static constexpr size_t kFrontSlots = 1024;
  struct FamilySlot { uint64_t key = 0; StrId id = kNoStr; };
  std::array<FamilySlot, kFrontSlots> family_front_{};
  // Per API call (by ordinal, api_rank_): its owning range (kNoIdx: outside any step), later its
  // node index.
  EventRank api_rank_;
  std::vector<uint32_t> api_owner_;
  std::vector<uint32_t> capture_range_;  // per API call: innermost containing range, steps or not
  std::vector<CorrEntry> corr_;
  std::vector<std::pair<uint32_t, uint32_t>> device_of_;  // (api event, device event)
  StrId implicit_name_ = kNoStr;
};

}  // namespace

FileTrees BuildFileTrees(uint32_t file_index, TraceFile& file, const ClockMap& clock, const MergeOptions& options) {
  return Builder(file_index, file, clock, options).Run();
}

}  // namespace truffld::merge
