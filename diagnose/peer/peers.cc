// Peer expectations (see peers.h): test rows, layer and tensor-parallel peers, and the
// similar-steps source for exact shapes. The fitted similar-steps source for shapes that never
// repeat lives in fit.cc.
#include "peer/peers.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>
#include <utility>

#include "peer/internal.h"
#include "peer/robust_stats.h"

namespace truffld::diagnose {

double MetricValue(const InstanceTable& t, const std::vector<CommTiming>& comm, uint32_t i, Metric m) {
  const InstanceDetail& d = t.detail[i];
  if (m == Metric::kHost) return (d.flags & kDetailReplay) ? -1.0 : static_cast<double>(d.host_ns);
  if (!(d.flags & kDetailHasDevice)) return -1.0;
  if (i < comm.size() && comm[i].participants > 1) return comm[i].transfer_ns;
  return d.device_ns;
}

std::vector<UnitWorkload> ComputeWorkloads(const InstanceTable& t) {
  const std::map<std::pair<int64_t, int64_t>, uint32_t> vertical = VerticalUnits(t);
  std::vector<UnitWorkload> w(t.steps.size());
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    auto it = vertical.find({t.steps[u].rank.value_or(-1), t.steps[u].step_index});
    const StepInfo& s = t.steps[it == vertical.end() ? u : it->second];
    double named = 0;
    for (const auto& r : s.requests) named += r != "*";
    if (named == 0 && s.batch > 0) named = static_cast<double>(s.batch);  // an engine profiler step
    const double nan = std::numeric_limits<double>::quiet_NaN();
    w[u].v = {s.tokens >= 0 ? std::log1p(static_cast<double>(s.tokens)) : nan,
              s.context >= 0 ? std::log1p(static_cast<double>(s.context)) : nan,
              std::log1p(s.work_blocks), std::log1p(s.h2d_bytes), std::log1p(named)};
    w[u].step_index = s.step_index;
    w[u].regime = static_cast<uint32_t>(PhaseCode(s.phase)) * 4 + (s.regime == Regime::kGraph ? 2 : 0) +
                  (s.device_detail ? 1 : 0);
  }
  return w;
}

double WorkloadDistance(const UnitWorkload& a, const UnitWorkload& b) {
  if (a.regime != b.regime) return std::numeric_limits<double>::infinity();
  double d = 0.01 * static_cast<double>(std::abs(a.step_index - b.step_index));
  for (size_t k = 0; k < a.v.size(); ++k) {
    if (!std::isnan(a.v[k]) && !std::isnan(b.v[k])) d += std::abs(a.v[k] - b.v[k]);
  }
  return d;
}

namespace detail {

double MedianOf(std::vector<double>& v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  return MedianInPlace(v.data(), v.size());
}

void RadixSortByKey(std::vector<std::pair<uint64_t, uint32_t>>* v) {
  constexpr int kBits = 11, kPasses = (64 + kBits - 1) / kBits;
  constexpr size_t kBuckets = size_t{1} << kBits;
  std::vector<size_t> count(kPasses * kBuckets, 0);
  for (const auto& e : *v)
    for (int p = 0; p < kPasses; ++p) ++count[p * kBuckets + ((e.first >> (p * kBits)) & (kBuckets - 1))];
  std::vector<std::pair<uint64_t, uint32_t>> tmp(v->size());
  for (int p = 0; p < kPasses; ++p) {
    size_t* c = &count[p * kBuckets];
    if (std::find(c, c + kBuckets, v->size()) != c + kBuckets) continue;  // one digit: order stays
    for (size_t b = 0, sum = 0; b < kBuckets; ++b) sum += std::exchange(c[b], sum);
    for (const auto& e : *v) tmp[c[(e.first >> (p * kBits)) & (kBuckets - 1)]++] = e;
    v->swap(tmp);
  }
}

// Row indices ordered by a key (runs of equal keys are the groups), without hash maps of vectors.
std::vector<std::pair<uint64_t, uint32_t>> SortedBy(const std::vector<RowKeys>& keys, uint64_t RowKeys::*field,
                                                   const std::vector<TestRow>& rows) {
  std::vector<std::pair<uint64_t, uint32_t>> order;
  order.reserve(rows.size());
  for (uint32_t r = 0; r < rows.size(); ++r) {
    if (rows[r].shared_tp || rows[r].group_cost) continue;  // no TP peers for these
    order.emplace_back(keys[r].*field, r);
  }
  RadixSortByKey(&order);  // the indices ascend
  return order;
}

namespace {

// Boundaries of the runs of equal keys in `order`: run i is [b[i], b[i + 1]).
std::vector<size_t> RunStarts(const std::vector<std::pair<uint64_t, uint32_t>>& order) {
  std::vector<size_t> b;
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || order[i].first != order[i - 1].first) b.push_back(i);
  }
  b.push_back(order.size());
  return b;
}

}  // namespace

namespace {

// Layer-peer expectations of one group, order[b, e): each row's median of the others.
void LayerMedians(const std::vector<std::pair<uint64_t, uint32_t>>& order, size_t b, size_t e,
                  std::vector<double>* sorted_buf, std::vector<TestRow>& rows) {
  std::vector<double>& sorted = *sorted_buf;
  const size_t n = e - b;
  sorted.clear();
  for (size_t i = b; i < e; ++i) sorted.push_back(rows[order[i].second].observed);
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = b; i < e; ++i) {
    TestRow& row = rows[order[i].second];
    // Median of the others: one copy of this value removed from the sorted list.
    const size_t pos = static_cast<size_t>(
        std::lower_bound(sorted.begin(), sorted.end(), static_cast<double>(row.observed)) - sorted.begin());
    auto at = [&](size_t j) { return sorted[j < pos ? j : j + 1]; };
    const size_t m = n - 1;
    const double med = m % 2 ? at(m / 2) : 0.5 * (at(m / 2 - 1) + at(m / 2));
    row.expected[static_cast<int>(PeerSource::kLayer)] = static_cast<float>(med);
    row.peers[static_cast<int>(PeerSource::kLayer)] = static_cast<uint16_t>(std::min<size_t>(m, 65535));
  }
}

}  // namespace

void FillLayer(std::vector<TestRow>& rows, const std::vector<RowKeys>& keys, const PeerOptions& o) {
  // The layer key holds the unit, and instance rows come unit by unit ahead of the family rows
  // (BuildTests): each unit's groups are found by sorting that unit's rows alone.
  std::vector<size_t> units;  // starts of the units' runs of instance rows, then their end
  size_t end = 0;
  for (; end < rows.size() && rows[end].instance != kFamilyRow; ++end) {
    if (end == 0 || rows[end].unit != rows[end - 1].unit) units.push_back(end);
  }
  units.push_back(end);
  ForChunks(units.size() - 1, o.threads, [&](size_t first, size_t last) {
    std::vector<std::pair<uint64_t, uint32_t>> order;
    std::vector<double> sorted;
    for (size_t u = first; u < last; ++u) {
      order.clear();
      for (size_t r = units[u]; r < units[u + 1]; ++r) order.emplace_back(keys[r].layer, static_cast<uint32_t>(r));
      std::sort(order.begin(), order.end());
      for (size_t b = 0, e = 0; b < order.size(); b = e) {
        while (e < order.size() && order[e].first == order[b].first) ++e;
        if (static_cast<int>(e - b) >= o.min_layer_peers + 1) LayerMedians(order, b, e, &sorted, rows);
      }
    }
  });
}

void FillTp(std::vector<TestRow>& rows, const std::vector<RowKeys>& keys, int threads) {
  const auto order = SortedBy(keys, &RowKeys::tp, rows);
  const std::vector<size_t> runs = RunStarts(order);
  const int s = static_cast<int>(PeerSource::kTp);
  ForChunks(runs.size() - 1, threads, [&](size_t first, size_t last) {
    std::vector<double> vals;
    std::vector<std::pair<uint32_t, float>> group;  // (unit, observed) of the group's rows, read once
    for (size_t g = first; g < last; ++g) {
      const size_t b = runs[g], e = runs[g + 1];
      if (e - b < 2) continue;
      group.clear();
      for (size_t j = b; j < e; ++j) group.emplace_back(rows[order[j].second].unit, rows[order[j].second].observed);
      for (size_t i = 0; i < group.size(); ++i) {
        TestRow& row = rows[order[b + i].second];
        vals.clear();
        for (size_t j = 0; j < group.size(); ++j) {
          if (j != i && group[j].first != group[i].first) vals.push_back(group[j].second);
        }
        if (vals.empty()) continue;
        row.peers[s] = static_cast<uint16_t>(std::min<size_t>(vals.size(), 65535));
        row.expected[s] = static_cast<float>(MedianOf(vals));
      }
    }
  });
}

std::vector<std::vector<uint32_t>> NearestUnits(const InstanceTable& t, const std::vector<UnitWorkload>& w,
                                                const PeerOptions& o) {
  // Units of one rank and view, by regime then step: the nearest in workload are found within a
  // window of steps around each unit (workloads that far apart in a long run are matched by
  // other units closer by), then sorted by distance.
  std::unordered_map<uint64_t, std::vector<uint32_t>> lanes;
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    const StepInfo& s = t.steps[u];
    lanes[Mix(Mix(static_cast<uint64_t>(s.rank.value_or(-1)), s.view == View::kHorizontal), w[u].regime)].push_back(u);
  }
  const size_t keep = static_cast<size_t>(std::max(12 * o.time_neighbours, 96));
  const size_t window = 4096;
  std::vector<std::vector<uint32_t>> near(t.steps.size());
  std::vector<std::pair<double, uint32_t>> cand;
  for (auto& [key, units] : lanes) {
    std::sort(units.begin(), units.end(), [&](uint32_t a, uint32_t b) { return t.steps[a].step_index < t.steps[b].step_index; });
    // A short trace (a profiler's five active steps) cannot spare steps on each side: the
    // exclusion shrinks until a unit in the middle keeps min_time_neighbours candidates.
    const long long n = static_cast<long long>(units.size());
    const long long exclusion = std::clamp<long long>((n - 1 - o.min_time_neighbours) / 2, 0, o.time_exclusion);
    for (size_t i = 0; i < units.size(); ++i) {
      cand.clear();
      const size_t lo = i > window ? i - window : 0, hi = std::min(units.size(), i + window + 1);
      for (size_t j = lo; j < hi; ++j) {
        // The steps right next to it are left out: a fault that lasts two steps would otherwise
        // be its own reference (longer ones are outvoted in the median of the nearest).
        if (std::abs(static_cast<long long>(j) - static_cast<long long>(i)) <= exclusion) continue;
        const double d = WorkloadDistance(w[units[i]], w[units[j]]);
        if (d <= o.max_workload_distance) cand.emplace_back(d, units[j]);
      }
      const size_t k = std::min(cand.size(), keep);
      std::partial_sort(cand.begin(), cand.begin() + static_cast<std::ptrdiff_t>(k), cand.end());
      for (size_t j = 0; j < k; ++j) near[units[i]].push_back(cand[j].second);
    }
  }
  return near;
}

namespace {

// One unit's similar-steps expectations of the same shape: its neighbours walked nearest first,
// their sorted keys merged with the unit's own (`list`, sorted by time key). Row i's values go
// to found[i * want, i * want + count[i]).
void ExactFromNeighbours(const std::vector<uint32_t>& list, const std::vector<uint32_t>& near,
                         const std::vector<std::vector<std::pair<uint64_t, double>>>& reps,
                         const std::vector<RowKeys>& keys, const PeerOptions& o, std::vector<float>* found_buf,
                         std::vector<uint32_t>* count_buf, std::vector<double>* vals, std::vector<TestRow>& rows) {
  const int s = static_cast<int>(PeerSource::kTime);
  const size_t want = static_cast<size_t>(std::max(o.time_neighbours, 0));
  std::vector<float>& found = *found_buf;
  std::vector<uint32_t>& count = *count_buf;
  found.resize(list.size() * want);
  count.assign(list.size(), 0);
  // Rows still short of `want` neighbours: once none is, the farther neighbours add nothing.
  size_t open = want > 0 ? list.size() : 0;
  for (size_t n = 0; n < near.size() && open > 0; ++n) {
    const auto& rv = reps[near[n]];
    size_t k = 0;
    for (size_t i = 0; i < list.size() && k < rv.size(); ++i) {
      const uint64_t key = keys[list[i]].time;
      while (k < rv.size() && rv[k].first < key) ++k;
      if (k < rv.size() && rv[k].first == key && count[i] < want) {
        found[i * want + count[i]++] = static_cast<float>(rv[k].second);
        open -= count[i] == want;
      }
    }
  }
  for (size_t i = 0; i < list.size(); ++i) {
    if (static_cast<int>(count[i]) < o.min_time_neighbours) continue;
    vals->assign(found.begin() + static_cast<std::ptrdiff_t>(i * want),
                 found.begin() + static_cast<std::ptrdiff_t>(i * want + count[i]));
    TestRow& row = rows[list[i]];
    row.peers[s] = static_cast<uint16_t>(vals->size());
    row.expected[s] = static_cast<float>(MedianOf(*vals));
    row.time_exact = true;
  }
}

}  // namespace

void FillTimeExact(std::vector<TestRow>& rows, const std::vector<RowKeys>& keys,
                   const std::vector<std::vector<uint32_t>>& near, const PeerOptions& o, const InstanceTable& t) {
  // Per unit: its rows sorted by time key, and (time key, median observed) per distinct key.
  std::vector<std::vector<uint32_t>> by_unit(t.steps.size());
  for (uint32_t r = 0; r < rows.size(); ++r) by_unit[rows[r].unit].push_back(r);
  std::vector<std::vector<std::pair<uint64_t, double>>> reps(t.steps.size());
  ForChunks(t.steps.size(), o.threads, [&](size_t first, size_t last) {
    std::vector<double> vals;
    for (size_t u = first; u < last; ++u) {
      auto& list = by_unit[u];
      std::sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) { return keys[a].time < keys[b].time; });
      for (size_t i = 0; i < list.size();) {
        size_t j = i;
        vals.clear();
        while (j < list.size() && keys[list[j]].time == keys[list[i]].time) vals.push_back(rows[list[j++]].observed);
        reps[u].emplace_back(keys[list[i]].time, MedianOf(vals));
        i = j;
      }
    }
  });
  ForChunks(t.steps.size(), o.threads, [&](size_t first, size_t last) {
    std::vector<double> vals;
    std::vector<float> found;
    std::vector<uint32_t> count;
    for (size_t u = first; u < last; ++u) {
      ExactFromNeighbours(by_unit[u], near[u], reps, keys, o, &found, &count, &vals, rows);
    }
  });
}

std::vector<double> SimilarCycles(const std::vector<double>& cycle_ns, const std::vector<std::vector<uint32_t>>& near,
                                  const PeerOptions& o) {
  std::vector<double> expected(cycle_ns.size(), std::nan(""));
  std::vector<double> vals;
  const size_t want = static_cast<size_t>(std::max(o.time_neighbours, 1));
  for (size_t u = 0; u < cycle_ns.size() && u < near.size(); ++u) {
    vals.clear();
    for (size_t k = 0; k < near[u].size() && vals.size() < want; ++k) vals.push_back(cycle_ns[near[u][k]]);
    if (static_cast<int>(vals.size()) >= std::max(o.min_time_neighbours, 1)) expected[u] = MedianOf(vals);
  }
  return expected;
}

}  // namespace detail

double StepCycleNs(const InstanceTable& t, uint32_t u) {
  const StepInfo& s = t.steps[u];
  const double duration = static_cast<double>(s.end_ns - s.start_ns);
  const int64_t gap = BetweenStepsInstance(t, u);
  return gap < 0 ? duration : duration + std::max(0.0f, t.detail[static_cast<size_t>(gap)].host_ns);
}

std::vector<TestRow> BuildTests(const InstanceTable& t, const UnitGroups& groups,
                                const std::vector<CommTiming>& comm, const PeerOptions& o,
                                StepCycles* cycles) {
  std::vector<TestRow> rows;
  std::vector<detail::RowKeys> keys;
  if (cycles != nullptr) {
    cycles->ns.resize(t.steps.size());
    for (uint32_t u = 0; u < t.steps.size(); ++u) cycles->ns[u] = StepCycleNs(t, u);
    cycles->similar_ns.assign(t.steps.size(), std::nan(""));
  }
  if (t.detail.size() != t.size() || t.size() == 0) return rows;
  const std::vector<UnitWorkload> w = ComputeWorkloads(t);
  // Family rows first into their own vectors, so the rows (instance rows, then family rows) are
  // allocated once at their final size.
  std::vector<TestRow> family_rows;
  std::vector<detail::RowKeys> family_keys;
  detail::MakeFamilyRows(t, groups, comm, &family_rows, &family_keys);
  size_t instance_rows = 0;
  for (uint32_t i = 0; i < t.size(); ++i) {
    for (int m = 0; m < kMetricCount; ++m) instance_rows += MetricValue(t, comm, i, static_cast<Metric>(m)) >= 0;
  }
  rows.reserve(instance_rows + family_rows.size());
  keys.reserve(instance_rows + family_rows.size());
  detail::MakeInstanceRows(t, groups, comm, &rows, &keys);
  rows.insert(rows.end(), family_rows.begin(), family_rows.end());
  keys.insert(keys.end(), family_keys.begin(), family_keys.end());
  detail::FillLayer(rows, keys, o);
  detail::FillTp(rows, keys, o.threads);
  const std::vector<std::vector<uint32_t>> near = detail::NearestUnits(t, w, o);
  detail::FillTimeExact(rows, keys, near, o, t);
  if (cycles != nullptr) cycles->similar_ns = detail::SimilarCycles(cycles->ns, near, o);
  detail::FillTimeFit(t, rows, keys, w, o);
  return rows;
}

}  // namespace truffld::diagnose
