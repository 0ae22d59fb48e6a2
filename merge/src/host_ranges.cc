// Stack scanning for push/pop ranges and id matching for start/end ranges.
#include "truffld/merge/host_ranges.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "sorted_runs.h"

namespace truffld::merge {

// Importers write each thread's events in time order (the injector drains each thread's ring in
// order), so this groups by thread with a counting sort that keeps file order, then sorts only
// the groups that are not already in time order: linear time on such input, and no
// index-chasing comparison sort over millions of events (that sort was ~5% of a merge).
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
  // A stable counting sort by thread index, then each thread's run in time order.
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

std::vector<HostRange> BuildHostRanges(const TraceFile& file, RangeCounters* c, IngestStats* issues,
                                       std::vector<RangeClose>* payload_closes) {
  const auto& ev = file.events;
  std::vector<HostRange> out;
  std::vector<uint32_t> order;
  // At most one range and one ordered mark per event (+ implicit steps, one per process,
  // appended by the tree builder): reserved once, since doubling a vector of millions copies it
  // and touches twice its memory; capacity never touched costs address space only.
  out.reserve(ev.size() + 64);
  order.reserve(ev.size());
  TimeNs last = 0;
  bool any = false;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const Event& e = ev[i];
    if (!any || e.end > last) last = e.end;
    any = true;
    switch (e.kind) {
      case EventKind::kNvtxPush: case EventKind::kNvtxPop: case EventKind::kNvtxRange:
      case EventKind::kNvtxStart: case EventKind::kNvtxEnd:
        order.push_back(i);
        break;
      case EventKind::kRange:
        out.push_back({e.start, std::max(e.start, e.end), e.thread, i});
        break;
      default: break;
    }
  }
  OrderByThreadThenTime(ev, &order);
  auto where = [&](const Event& e) { return file.meta.path + ":" + std::to_string(file.LineOf(e)); };
  // A range `slot` closed by event `close`: noted when the close carries a payload.
  auto closed_by = [&](uint32_t slot, uint32_t close) {
    if (payload_closes && ev[close].extra != kNoExtra && file.Extra(ev[close]).payload != kNoStr)
      payload_closes->push_back({slot, out[slot].event, close});
  };
  // Open pushes of the current (process, thread), as indices into `out`: a push/pop range takes
  // its slot when pushed and gets its end when popped, so these ranges come out in (thread,
  // start) order, outer before inner, which is the order the tree builder nests them in (a
  // slot taken at the pop gave the children before their parent: a full sort later).
  std::vector<uint32_t> stack;
  uint32_t cur = UINT32_MAX;  // thread of the stack
  auto flush_stack = [&] {
    for (uint32_t slot : stack) {
      HostRange& r = out[slot];
      const Event& s = ev[r.event];
      r.end = std::max(s.start, last);
      ++c->unclosed_ranges;
      issues->Report(where(s), "unclosed_range", "NVTX range '" + std::string(file.strings.Get(s.name)).substr(0, 200) +
                     "' pushed but never popped; closed at the end of the file");
    }
    stack.clear();
  };
  // Start/end ranges cross threads, so they are matched by time over the whole file.
  std::vector<uint32_t> se;
  for (uint32_t i : order) {
    const Event& e = ev[i];
    if (e.kind == EventKind::kNvtxStart || e.kind == EventKind::kNvtxEnd) { se.push_back(i); continue; }
    if (e.thread != cur) {
      flush_stack();
      cur = e.thread;
    }
    if (e.kind == EventKind::kNvtxRange) {
      // A push whose pop the importer folded in (RawLineParser): the matched pair, closed and
      // in the slot the push takes here, so the ranges come out as if both had been scanned.
      out.push_back({e.start, std::max(e.start, e.end), e.thread, i});
    } else if (e.kind == EventKind::kNvtxPush) {
      stack.push_back(static_cast<uint32_t>(out.size()));
      out.push_back({e.start, e.start, e.thread, i});
    } else if (stack.empty()) {
      ++c->unmatched_pops;
      issues->Report(where(e), "unmatched_pop", "NVTX_POP with no open push on this thread; ignored");
    } else {
      HostRange& r = out[stack.back()];
      r.end = e.start;
      closed_by(stack.back(), i);
      stack.pop_back();
    }
  }
  flush_stack();
  std::stable_sort(se.begin(), se.end(), [&](uint32_t a, uint32_t b) { return ev[a].start < ev[b].start; });
  std::unordered_map<std::pair<int64_t, int64_t>, uint32_t, Int64PairHash> open;
  for (uint32_t i : se) {
    const Event& e = ev[i];
    auto key = std::make_pair(file.ProcessOf(e), file.Extra(e).range_id);
    if (e.kind == EventKind::kNvtxStart) {
      auto [it, inserted] = open.emplace(key, i);
      if (!inserted) {
        const Event& s = ev[it->second];
        ++c->duplicate_range_ids;
        ++c->unclosed_ranges;
        issues->Report(where(e), "duplicate_range_id", "range id " + std::to_string(file.Extra(e).range_id) +
                       " started again while open; the earlier one is closed here");
        out.push_back({s.start, e.start, s.thread, it->second});
        it->second = i;
      }
    } else {
      auto it = open.find(key);
      if (it == open.end()) {
        ++c->unmatched_pops;
        issues->Report(where(e), "unmatched_pop", "range end for id " + std::to_string(file.Extra(e).range_id) +
                       " with no open start; ignored");
        continue;
      }
      const Event& s = ev[it->second];
      out.push_back({s.start, e.start, s.thread, it->second});
      closed_by(uint32_t(out.size() - 1), i);
      open.erase(it);
    }
  }
  std::vector<uint32_t> left;
  for (auto& [k, i] : open) left.push_back(i);
  std::sort(left.begin(), left.end());
  for (uint32_t i : left) {
    const Event& s = ev[i];
    out.push_back({s.start, std::max(s.start, last), s.thread, i});
    ++c->unclosed_ranges;
    issues->Report(where(s), "unclosed_range", "range id " + std::to_string(file.Extra(s).range_id) + " ('" +
                   std::string(file.strings.Get(s.name)).substr(0, 200) + "') never ended; closed at the end of the file");
  }
  for (const HostRange& r : out) c->zero_length_ranges += r.start == r.end;
  if (payload_closes)
    std::sort(payload_closes->begin(), payload_closes->end(),
              [](const RangeClose& a, const RangeClose& b) { return a.range < b.range; });
  return out;
}

uint64_t JoinClosingPayloads(const std::vector<RangeClose>& closes, TraceFile* file) {
  uint64_t joined = 0;
  std::vector<Event>& ev = file->events;
  for (const RangeClose& r : closes) {
    const StrId close_payload = file->Extra(ev[r.close_event]).payload;
    if (close_payload == kNoStr) continue;
    // A copy: the opening event's record may be shared with other events (TraceFile::SetExtra).
    EventExtra open = file->Extra(ev[r.open_event]);
    if (open.payload == kNoStr) {
      open.payload = close_payload;
      file->SetExtra(ev[r.open_event], open);
      ++joined;
      continue;
    }
    // Rare (a handful per communicator), so a parse of both sides is affordable.
    const std::string open_text(file->strings.Get(open.payload));
    const std::string close_text(file->strings.Get(close_payload));
    nlohmann::json a = nlohmann::json::parse(open_text, nullptr, false);
    nlohmann::json b = nlohmann::json::parse(close_text, nullptr, false);
    if (!a.is_object()) {
      a = nlohmann::json{{"payload", a.is_discarded() ? nlohmann::json(open_text) : std::move(a)}};
    }
    if (b.is_object()) {
      for (auto& [k, v] : b.items()) if (!a.contains(k)) a[k] = v;
    } else {
      a["close_payload"] = b.is_discarded() ? nlohmann::json(close_text) : std::move(b);
    }
    open.payload = file->strings.Intern(a.dump());
    file->SetExtra(ev[r.open_event], open);
    ++joined;
  }
  return joined;
}

}  // namespace truffld::merge
