// Range reconstruction: the NVTX pairing rule per thread, start/end ranges by id, payload joins.
#include "core/host_ranges.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/nvtx_pairing.h"
#include "core/sorted_runs.h"

namespace truffld::merge {

// Importers write each thread's events in time order (the injector drains each thread's ring in
// order), so this groups by thread with a counting sort that keeps file order, then sorts only
// the groups that are not already in time order: linear on such input, and no index-chasing
// comparison sort over millions of events.
void OrderByThreadThenTime(const std::vector<Event>& ev, std::vector<uint32_t>* order) {
  auto by_time = [&](uint32_t a, uint32_t b) {
    return ev[a].start != ev[b].start ? ev[a].start < ev[b].start : a < b;
  };
  uint32_t threads = 0;  // 1 + the largest thread index
  bool one = true;
  for (uint32_t i : *order) {
    threads = std::max<uint32_t>(threads, ev[i].thread + 1);
    one &= ev[i].thread == ev[order->front()].thread;
  }
  if (one) {  // one thread (a common dump): nothing to group
    SortRuns(order, by_time);
    return;
  }
  std::vector<size_t> begin(size_t(threads) + 1, 0);
  for (uint32_t i : *order) ++begin[ev[i].thread + 1];
  for (size_t t = 1; t < begin.size(); ++t) begin[t] += begin[t - 1];
  std::vector<uint32_t> sorted(order->size());
  std::vector<size_t> fill(begin.begin(), begin.end() - 1);
  for (uint32_t i : *order) sorted[fill[ev[i].thread]++] = i;
  for (size_t t = 0; t + 1 < begin.size(); ++t) {
    if (begin[t + 1] - begin[t] < 2) continue;
    auto first = sorted.begin() + static_cast<std::ptrdiff_t>(begin[t]);
    auto last = sorted.begin() + static_cast<std::ptrdiff_t>(begin[t + 1]);
    SortRuns(first, last, by_time);
  }
  *order = std::move(sorted);
}

namespace {

// The state of one reconstruction: the file, the ranges made so far, counters and reports.
class Reconstruction {
 public:
  Reconstruction(const TraceFile& f, RangeCounters* c, IngestStats* issues, std::vector<RangeClose>* closes)
      : f_(f), ev_(f.events), c_(*c), issues_(*issues), closes_(closes) {
    // At most one range per event (+ implicit steps, elsewhere): reserved once, since doubling a
    // vector of millions copies it and touches twice its memory.
    out_.reserve(ev_.size() + 64);
  }

  // Complete ranges go straight out; push/pop and start/end events are returned (file order).
  std::vector<uint32_t> CollectHostEvents() {
    std::vector<uint32_t> order;
    order.reserve(ev_.size());
    bool any = false;
    for (uint32_t i = 0; i < ev_.size(); ++i) {
      const Event& e = ev_[i];
      if (!any || e.end > last_) last_ = e.end;
      any = true;
      switch (e.kind) {
        case EventKind::kNvtxPush: case EventKind::kNvtxPop: case EventKind::kNvtxRange:
        case EventKind::kNvtxStart: case EventKind::kNvtxEnd:
          order.push_back(i);
          break;
        case EventKind::kRange:
          out_.push_back({e.start, std::max(e.start, e.end), e.thread, i});
          break;
        default: break;
      }
    }
    return order;
  }

  // Push/pop ranges thread by thread (`order`: OrderByThreadThenTime). A push/pop range takes
  // its slot when pushed, so these come out in (thread, start) order, outer before inner.
  // Returns the start/end events, in the same order.
  std::vector<uint32_t> PairPushPops(const std::vector<uint32_t>& order) {
    std::vector<uint32_t> start_end;
    PushPopPairing pairing;  // of slots in out_
    uint32_t thread = UINT32_MAX;
    for (uint32_t i : order) {
      const Event& e = ev_[i];
      if (e.kind == EventKind::kNvtxStart || e.kind == EventKind::kNvtxEnd) { start_end.push_back(i); continue; }
      if (e.thread != thread) {
        CloseUnpopped(&pairing);
        thread = e.thread;
      }
      if (e.kind == EventKind::kNvtxRange) {  // paired while reading: the same rule's result
        out_.push_back({e.start, std::max(e.start, e.end), e.thread, i});
      } else if (e.kind == EventKind::kNvtxPush) {
        pairing.Push(uint32_t(out_.size()));
        out_.push_back({e.start, e.start, e.thread, i});
      } else if (const uint32_t slot = pairing.Pop(); slot == PushPopPairing::kUnmatched) {
        ++c_.unmatched_pops;
        issues_.Report(Where(e), Problem::kUnmatchedPop, "NVTX_POP with no open push on this thread; ignored");
      } else {
        out_[slot].end = e.start;
        ClosedBy(slot, i);
      }
    }
    CloseUnpopped(&pairing);
    return start_end;
  }

  // Start/end ranges by (process, id), in time order across threads.
  void PairStartEnds(std::vector<uint32_t> se) {
    std::stable_sort(se.begin(), se.end(), [&](uint32_t a, uint32_t b) { return ev_[a].start < ev_[b].start; });
    std::unordered_map<std::pair<int64_t, int64_t>, uint32_t, Int64PairHash> open;
    for (uint32_t i : se) {
      const Event& e = ev_[i];
      const int64_t id = f_.Extra(e).range_id;
      auto key = std::make_pair(f_.ProcessOf(e), id);
      if (e.kind == EventKind::kNvtxStart) {
        auto [it, inserted] = open.emplace(key, i);
        if (inserted) continue;
        ++c_.duplicate_range_ids;
        ++c_.unclosed_ranges;
        issues_.Report(Where(e), Problem::kDuplicateRangeId, "range id " + std::to_string(id) +
                       " started again while open; the earlier one is closed here");
        out_.push_back({ev_[it->second].start, e.start, ev_[it->second].thread, it->second});
        it->second = i;
        continue;
      }
      auto it = open.find(key);
      if (it == open.end()) {
        ++c_.unmatched_pops;
        issues_.Report(Where(e), Problem::kUnmatchedPop, "range end for id " + std::to_string(id) + " with no open start; ignored");
        continue;
      }
      out_.push_back({ev_[it->second].start, e.start, ev_[it->second].thread, it->second});
      ClosedBy(uint32_t(out_.size() - 1), i);
      open.erase(it);
    }
    std::vector<uint32_t> left;
    for (auto& [k, i] : open) left.push_back(i);
    std::sort(left.begin(), left.end());
    for (uint32_t i : left) {
      const Event& s = ev_[i];
      c_.open_at_end.push_back(uint32_t(out_.size()));
      out_.push_back({s.start, std::max(s.start, last_), s.thread, i});
      ++c_.unclosed_ranges;
      issues_.Report(Where(s), Problem::kUnclosedRange, "range id " + std::to_string(f_.Extra(s).range_id) + " ('" +
                     std::string(f_.strings.Get(s.name)).substr(0, 200) + "') never ended; closed at the end of the file");
    }
  }

  std::vector<HostRange> Finish() {
    for (const HostRange& r : out_) c_.zero_length_ranges += r.start == r.end;
    std::sort(c_.open_at_end.begin(), c_.open_at_end.end());
    if (closes_)
      std::sort(closes_->begin(), closes_->end(), [](const RangeClose& a, const RangeClose& b) { return a.range < b.range; });
    return std::move(out_);
  }

 private:
  std::string Where(const Event& e) const { return f_.meta.path + ":" + std::to_string(f_.LineOf(e)); }

  // Range `slot` closed by event `close`: noted when the close carries a payload.
  void ClosedBy(uint32_t slot, uint32_t close) {
    if (closes_ && ev_[close].extra != kNoExtra && f_.Extra(ev_[close]).payload != kNoStr)
      closes_->push_back({slot, out_[slot].event, close});
  }

  // The thread's pushes never popped end at the file's last timestamp.
  void CloseUnpopped(PushPopPairing* pairing) {
    for (uint32_t slot : pairing->open()) {
      HostRange& r = out_[slot];
      const Event& s = ev_[r.event];
      r.end = std::max(s.start, last_);
      c_.open_at_end.push_back(slot);
      ++c_.unclosed_ranges;
      issues_.Report(Where(s), Problem::kUnclosedRange, "NVTX range '" + std::string(f_.strings.Get(s.name)).substr(0, 200) +
                     "' pushed but never popped; closed at the end of the file");
    }
    pairing->Reset();
  }

  const TraceFile& f_;
  const std::vector<Event>& ev_;
  RangeCounters& c_;
  IngestStats& issues_;
  std::vector<RangeClose>* closes_;
  std::vector<HostRange> out_;
  TimeNs last_ = 0;  // the file's last timestamp (largest event end)
};

}  // namespace

std::vector<HostRange> BuildHostRanges(const TraceFile& file, RangeCounters* c, IngestStats* issues,
                                       std::vector<RangeClose>* payload_closes) {
  Reconstruction r(file, c, issues, payload_closes);
  std::vector<uint32_t> order = r.CollectHostEvents();
  OrderByThreadThenTime(file.events, &order);
  r.PairStartEnds(r.PairPushPops(order));
  return r.Finish();
}

std::vector<JoinedPayload> JoinClosingPayloads(const std::vector<RangeClose>& closes, const TraceFile& file,
                                               StringPool* strings) {
  std::vector<JoinedPayload> out;
  for (const RangeClose& r : closes) {
    const StrId close_payload = file.Extra(file.events[r.close_event]).payload;
    if (close_payload == kNoStr) continue;
    const StrId open_payload = file.Extra(file.events[r.open_event]).payload;
    if (open_payload == kNoStr) {
      out.push_back({r.open_event, close_payload});
      continue;
    }
    // Rare (a handful per communicator), so a parse of both sides is affordable.
    const std::string open_text(strings->Get(open_payload));
    const std::string close_text(strings->Get(close_payload));
    nlohmann::json a = nlohmann::json::parse(open_text, nullptr, false);
    nlohmann::json b = nlohmann::json::parse(close_text, nullptr, false);
    if (!a.is_object()) a = nlohmann::json{{"payload", a.is_discarded() ? nlohmann::json(open_text) : std::move(a)}};
    if (b.is_object()) {
      for (auto& [k, v] : b.items())
        if (!a.contains(k)) a[k] = v;
    } else {
      a["close_payload"] = b.is_discarded() ? nlohmann::json(close_text) : std::move(b);
    }
    // (replace: never throws, though the payloads are valid UTF-8 already)
    out.push_back({r.open_event, strings->Intern(a.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))});
  }
  std::sort(out.begin(), out.end(), [](const JoinedPayload& x, const JoinedPayload& y) { return x.event < y.event; });
  return out;
}

}  // namespace truffld::merge
