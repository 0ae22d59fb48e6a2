// Stack scanning for push/pop ranges and id matching for start/end ranges.
#include "truffld/merge/host_ranges.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace truffld::merge {
namespace {

struct PairHash {
  size_t operator()(const std::pair<int64_t, int64_t>& p) const noexcept {
    return std::hash<int64_t>()(p.first * 1000003 ^ p.second);
  }
};

}  // namespace

std::vector<HostRange> BuildHostRanges(const TraceFile& file, RangeCounters* c, IngestStats* issues) {
  const auto& ev = file.events;
  std::vector<HostRange> out;
  std::vector<uint32_t> order;
  TimeNs last = 0;
  bool any = false;
  for (uint32_t i = 0; i < ev.size(); ++i) {
    const Event& e = ev[i];
    if (!any || e.end > last) last = e.end;
    any = true;
    switch (e.kind) {
      case EventKind::kNvtxPush: case EventKind::kNvtxPop:
      case EventKind::kNvtxStart: case EventKind::kNvtxEnd:
        order.push_back(i);
        break;
      case EventKind::kRange:
        out.push_back({e.start, std::max(e.start, e.end), e.process_id, e.thread_id, i, false});
        break;
      default: break;
    }
  }
  // Per (process, thread) in time order; ties keep file order (stable on index).
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const Event& x = ev[a];
    const Event& y = ev[b];
    if (x.process_id != y.process_id) return x.process_id < y.process_id;
    if (x.thread_id != y.thread_id) return x.thread_id < y.thread_id;
    if (x.start != y.start) return x.start < y.start;
    return a < b;
  });
  auto where = [&](const Event& e) { return file.meta.path + ":" + std::to_string(e.line); };
  std::vector<uint32_t> stack;  // open pushes of the current (process, thread)
  int64_t cur_p = kNone - 1, cur_t = kNone - 1;
  auto flush_stack = [&] {
    for (uint32_t i : stack) {
      const Event& s = ev[i];
      out.push_back({s.start, std::max(s.start, last), s.process_id, s.thread_id, i, true});
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
    if (e.process_id != cur_p || e.thread_id != cur_t) {
      flush_stack();
      cur_p = e.process_id;
      cur_t = e.thread_id;
    }
    if (e.kind == EventKind::kNvtxPush) {
      stack.push_back(i);
    } else if (stack.empty()) {
      ++c->unmatched_pops;
      issues->Report(where(e), "unmatched_pop", "NVTX_POP with no open push on this thread; ignored");
    } else {
      const Event& s = ev[stack.back()];
      out.push_back({s.start, e.start, s.process_id, s.thread_id, stack.back(), false});
      stack.pop_back();
    }
  }
  flush_stack();
  std::stable_sort(se.begin(), se.end(), [&](uint32_t a, uint32_t b) { return ev[a].start < ev[b].start; });
  std::unordered_map<std::pair<int64_t, int64_t>, uint32_t, PairHash> open;
  for (uint32_t i : se) {
    const Event& e = ev[i];
    auto key = std::make_pair(e.process_id, e.range_id);
    if (e.kind == EventKind::kNvtxStart) {
      auto [it, inserted] = open.emplace(key, i);
      if (!inserted) {
        const Event& s = ev[it->second];
        ++c->duplicate_range_ids;
        ++c->unclosed_ranges;
        issues->Report(where(e), "duplicate_range_id", "range id " + std::to_string(e.range_id) +
                       " started again while open; the earlier one is closed here");
        out.push_back({s.start, e.start, s.process_id, s.thread_id, it->second, true});
        it->second = i;
      }
    } else {
      auto it = open.find(key);
      if (it == open.end()) {
        ++c->unmatched_pops;
        issues->Report(where(e), "unmatched_pop", "range end for id " + std::to_string(e.range_id) +
                       " with no open start; ignored");
        continue;
      }
      const Event& s = ev[it->second];
      out.push_back({s.start, e.start, s.process_id, s.thread_id, it->second, false});
      open.erase(it);
    }
  }
  std::vector<uint32_t> left;
  for (auto& [k, i] : open) left.push_back(i);
  std::sort(left.begin(), left.end());
  for (uint32_t i : left) {
    const Event& s = ev[i];
    out.push_back({s.start, std::max(s.start, last), s.process_id, s.thread_id, i, true});
    ++c->unclosed_ranges;
    issues->Report(where(s), "unclosed_range", "range id " + std::to_string(s.range_id) + " ('" +
                   std::string(file.strings.Get(s.name)).substr(0, 200) + "') never ended; closed at the end of the file");
  }
  for (const HostRange& r : out) c->zero_length_ranges += r.start == r.end;
  return out;
}

}  // namespace truffld::merge
