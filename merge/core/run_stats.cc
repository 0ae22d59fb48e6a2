// ComputeRunStats: one walk over every tree's nodes, then per-name, per-step and per-rank
// reductions (see truffld/merge/run_stats.h).
#include "truffld/merge/run_stats.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <unordered_map>

namespace truffld::merge {
namespace {

struct Interval {
  TimeNs start, end;
  bool comm;
};

struct KernelAcc {
  std::string_view name;
  bool nccl = false;  // named nccl*: communication wherever it runs
  int64_t count = 0, total = 0, lo = INT64_MAX, hi = INT64_MIN;
};

struct LatencyAcc {
  std::string_view name;  // the launching API
  std::vector<int64_t> from_start, from_end;
};

// Accumulators (each with a `name`) by name: a name is looked up by its text once per file and string id, then by a
// flat per-file table (most kernels repeat a few names millions of times).
template <typename Acc>
class ByName {
 public:
  explicit ByName(const MergeResult& r) : r_(r), slots_(r.files.size()) {}
  Acc& Get(uint32_t file, StrId id) {
    std::vector<uint32_t>& slots = slots_[file];
    if (slots.empty()) slots.assign(r_.files[file].strings.size(), kNone32);
    uint32_t& slot = slots[id];
    if (slot == kNone32) {
      const std::string_view name = r_.Str(file, id);
      auto [it, fresh] = index_.try_emplace(name, static_cast<uint32_t>(accs_.size()));
      if (fresh) {
        accs_.emplace_back();
        accs_.back().name = name;
      }
      slot = it->second;
    }
    return accs_[slot];
  }
  std::vector<Acc>& all() { return accs_; }

 private:
  static constexpr uint32_t kNone32 = UINT32_MAX;
  const MergeResult& r_;
  std::vector<std::vector<uint32_t>> slots_;  // per file: string id -> index in accs_
  std::unordered_map<std::string_view, uint32_t> index_;
  std::vector<Acc> accs_;
};

// Nearest-rank p50, p90 and p99 of `v` (non-empty), selected in place without a full sort.
std::array<int64_t, 3> Percentiles(std::vector<int64_t>* v) {
  std::array<int64_t, 3> out{};
  const double ps[3] = {0.5, 0.9, 0.99};
  auto from = v->begin();
  for (int i = 0; i < 3; ++i) {
    const auto at = v->begin() + static_cast<std::ptrdiff_t>(NearestRankIndex(v->size(), ps[i]));
    if (at >= from) {
      std::nth_element(from, at, v->end());
      from = at + 1;
    }
    out[i] = *at;
  }
  return out;
}

// Length of the union of `iv` clipped to [lo, hi] (sorts `iv`).
int64_t UnionClipped(std::vector<Interval>* iv, TimeNs lo, TimeNs hi) {
  std::sort(iv->begin(), iv->end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  int64_t busy = 0;
  TimeNs cur_s = 0, cur_e = 0;
  bool open = false;
  for (const Interval& x : *iv) {
    const TimeNs a = std::max(x.start, lo), b = std::min(x.end, hi);
    if (b <= a) continue;
    if (open && a <= cur_e) {
      cur_e = std::max(cur_e, b);
      continue;
    }
    if (open) busy += cur_e - cur_s;
    cur_s = a, cur_e = b, open = true;
  }
  if (open) busy += cur_e - cur_s;
  return busy;
}

// One rank's compute, communication and overlapping busy time from its kernels (end > start),
// swept as start/end events with starts before ends at equal times.
RankOverlap SweepOverlap(const std::optional<int64_t>& rank, const std::vector<Interval>& kernels) {
  struct Ev {
    TimeNs t;
    int dc, dm;
  };
  std::vector<Ev> ev;
  ev.reserve(kernels.size() * 2);
  for (const Interval& k : kernels) {
    ev.push_back({k.start, k.comm ? 0 : 1, k.comm ? 1 : 0});
    ev.push_back({k.end, k.comm ? 0 : -1, k.comm ? -1 : 0});
  }
  std::sort(ev.begin(), ev.end(), [](const Ev& a, const Ev& b) {
    return a.t != b.t ? a.t < b.t : a.dc + a.dm > b.dc + b.dm;
  });
  RankOverlap r;
  r.rank = rank;
  int c = 0, m = 0;
  for (size_t i = 0; i < ev.size(); ++i) {
    c += ev[i].dc, m += ev[i].dm;
    if (i + 1 == ev.size()) break;
    const int64_t span = ev[i + 1].t - ev[i].t;
    if (c > 0) r.compute_ns += span;
    if (m > 0) r.comm_ns += span;
    if (c > 0 && m > 0) r.overlap_ns += span;
  }
  r.overlap_share = r.comm_ns > 0 ? static_cast<double>(r.overlap_ns) / static_cast<double>(r.comm_ns) : 0.0;
  return r;
}

// Walks the trees and accumulates every figure but the per-rank idle summary.
class Walker {
 public:
  explicit Walker(const MergeResult& r) : r_(r) {}

  void Run(RunStats* out) {
    // The trees of one step (its views) made adjacent: by rank, step index, then file (steps of
    // rankless processes share a rank and step index).
    const std::vector<Tree>& trees = r_.trees;
    std::vector<uint32_t> order(trees.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      const Tree &x = trees[a], &y = trees[b];
      if (x.rank != y.rank) return x.rank < y.rank;
      return x.step_index != y.step_index ? x.step_index < y.step_index : x.file < y.file;
    });
    for (size_t i = 0; i < order.size();) {
      const Tree& t = trees[order[i]];
      size_t j = i + 1;
      while (j < order.size() && trees[order[j]].rank == t.rank && trees[order[j]].step_index == t.step_index &&
             trees[order[j]].file == t.file)
        ++j;
      if (i > 0 && t.rank != trees[order[i - 1]].rank) FlushRank(out);
      rank_ = t.rank;
      Step(order, i, j, out);
      i = j;
    }
    FlushRank(out);
    Finish(out);
  }

 private:
  struct Frame {
    uint32_t node, call;
    bool comm;
  };

  // One step: order[first, last) are its trees, the vertical view first.
  void Step(const std::vector<uint32_t>& order, size_t first, size_t last, RunStats* out) {
    step_device_.clear();
    const Tree& lead = r_.trees[order[first]];
    const Node& root = r_.nodes[lead.root];
    for (size_t t = first; t < last; ++t) Walk(r_.trees[order[t]].root);
    if (!lead.device_detail || root.end <= root.start) return;
    StepIdle s;
    s.rank = lead.rank;
    s.step_index = lead.step_index;
    s.duration_ns = root.end - root.start;
    s.busy_ns = UnionClipped(&step_device_, root.start, root.end);
    s.idle_share = 1.0 - static_cast<double>(s.busy_ns) / static_cast<double>(s.duration_ns);
    out->step_idle.push_back(s);
  }

  void Walk(uint32_t root) {
    stack_.assign(1, Frame{root, kNoNode, false});
    while (!stack_.empty()) {
      const Frame f = stack_.back();
      stack_.pop_back();
      const Node& n = r_.nodes[f.node];
      Frame child = f;
      if (n.layer == Layer::kComm) child.comm = true;
      if (IsApiLayer(n.layer)) child.call = f.node;
      if (IsDeviceLayer(n.layer)) Device(n, f);
      for (uint32_t c = n.first_child; c != kNoNode; c = r_.nodes[c].next_sibling) {
        child.node = c;
        stack_.push_back(child);
      }
    }
  }

  void Device(const Node& n, const Frame& f) {
    step_device_.push_back({n.start, n.end, false});
    if (n.layer != Layer::kKernel) return;
    const int64_t d = n.end - n.start;
    KernelAcc& k = kernels_.Get(n.file, r_.NameId(n));
    if (k.count == 0) k.nccl = k.name.starts_with("nccl");
    ++k.count, k.total += d, k.lo = std::min(k.lo, d), k.hi = std::max(k.hi, d);
    if (n.end > n.start) rank_kernels_.push_back({n.start, n.end, f.comm || k.nccl});
    if (f.call != kNoNode) {
      const Node& call = r_.nodes[f.call];
      LatencyAcc& l = latency_.Get(call.file, r_.NameId(call));
      l.from_start.push_back(n.start - call.start);
      l.from_end.push_back(n.start - call.end);
    }
  }

  void FlushRank(RunStats* out) {
    if (rank_kernels_.empty()) return;
    out->overlap.push_back(SweepOverlap(rank_, rank_kernels_));
    rank_kernels_.clear();
  }

  void Finish(RunStats* out) {
    for (const KernelAcc& k : kernels_.all()) {
      out->kernels += k.count;
      out->kernel_total_ns += k.total;
      out->kernel_summary.push_back(KernelSummary{std::string(k.name), k.count, k.total, k.lo, k.hi,
                                                  static_cast<double>(k.total) / static_cast<double>(k.count), 0.0});
    }
    for (KernelSummary& k : out->kernel_summary) {
      k.share = out->kernel_total_ns > 0 ? static_cast<double>(k.total_ns) / static_cast<double>(out->kernel_total_ns) : 0;
    }
    std::sort(out->kernel_summary.begin(), out->kernel_summary.end(), [](const KernelSummary& a, const KernelSummary& b) {
      return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
    });
    for (LatencyAcc& l : latency_.all()) {
      const auto [lo, hi] = std::minmax_element(l.from_start.begin(), l.from_start.end());
      const int64_t min = *lo, max = *hi;
      const std::array<int64_t, 3> p = Percentiles(&l.from_start);
      out->launch_latency.push_back(LaunchLatency{std::string(l.name), static_cast<int64_t>(l.from_start.size()), min,
                                                  p[0], p[1], p[2], max, Percentiles(&l.from_end)[0]});
    }
    std::sort(out->launch_latency.begin(), out->launch_latency.end(), [](const LaunchLatency& a, const LaunchLatency& b) {
      return a.count != b.count ? a.count > b.count : a.api < b.api;
    });
    SummariseRankIdle(out);
  }

  const MergeResult& r_;
  std::optional<int64_t> rank_;
  std::vector<Frame> stack_;
  std::vector<Interval> step_device_, rank_kernels_;
  ByName<KernelAcc> kernels_{r_};
  ByName<LatencyAcc> latency_{r_};
};

}  // namespace

RunStats ComputeRunStats(const MergeResult& result) {
  RunStats out;
  Walker(result).Run(&out);
  return out;
}

}  // namespace truffld::merge
