// Peer expectations (see peers.h): test rows, layer and tensor-parallel peers, and the
// similar-steps source for exact shapes. The fitted similar-steps source for shapes that never
// repeat lives in peer_fit.cc.
#include "truffld/diagnose/peers.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "peer_internal.h"

namespace truffld::diagnose {

const char* MetricName(Metric m) noexcept { return m == Metric::kHost ? "host" : "device"; }
const char* SourceName(Source s) noexcept {
  switch (s) {
    case Source::kLayer: return "layers";
    case Source::kTp: return "tp_peers";
    case Source::kTime: return "similar_steps";
  }
  return "unknown";
}

double MetricValue(const InstanceTable& t, const std::vector<CommTiming>& comm, uint32_t i, Metric m) {
  const InstanceDetail& d = t.detail[i];
  if (m == Metric::kHost) return (d.flags & kDetailReplay) ? -1.0 : static_cast<double>(d.host_ns);
  if (!(d.flags & kDetailHasDevice)) return -1.0;
  if (i < comm.size() && comm[i].participants > 1) return comm[i].transfer_ns;
  return d.device_ns;
}

std::vector<UnitWorkload> ComputeWorkloads(const InstanceTable& t) {
  std::map<std::pair<int64_t, int64_t>, uint32_t> vertical;
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    if (t.steps[u].view != "horizontal") vertical[{t.steps[u].rank.value_or(-1), t.steps[u].step_index}] = u;
  }
  std::vector<UnitWorkload> w(t.steps.size());
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    auto it = vertical.find({t.steps[u].rank.value_or(-1), t.steps[u].step_index});
    const StepInfo& s = t.steps[it == vertical.end() ? u : it->second];
    double named = 0;
    for (const auto& r : s.requests) named += r != "*";
    const double nan = std::numeric_limits<double>::quiet_NaN();
    w[u].v = {s.tokens >= 0 ? std::log1p(static_cast<double>(s.tokens)) : nan,
              s.context >= 0 ? std::log1p(static_cast<double>(s.context)) : nan,
              std::log1p(s.work_blocks), std::log1p(s.h2d_bytes), std::log1p(named)};
    w[u].step_index = s.step_index;
    w[u].regime = static_cast<uint32_t>(PhaseCode(s.phase)) * 4 + (s.regime == "graph" ? 2 : 0) +
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
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2) return hi;
  return 0.5 * (hi + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)));
}

void FillLayer(std::vector<TestRow>& rows, const std::vector<RowKeys>& keys, const PeerOptions& o) {
  std::unordered_map<uint64_t, std::vector<uint32_t>> by;
  for (uint32_t r = 0; r < rows.size(); ++r) {
    if (rows[r].instance != kFamilyRow) by[keys[r].layer].push_back(r);
  }
  std::vector<double> vals;
  for (auto& [k, list] : by) {
    if (static_cast<int>(list.size()) < o.min_layer_peers + 1) continue;
    std::vector<double> sorted;
    for (uint32_t r : list) sorted.push_back(rows[r].observed);
    std::sort(sorted.begin(), sorted.end());
    const size_t n = sorted.size();
    for (uint32_t r : list) {
      // Median of the others: remove one copy of this value from the sorted list.
      const size_t pos = static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(),
                                                              static_cast<double>(rows[r].observed)) - sorted.begin());
      auto at = [&](size_t j) { return sorted[j < pos ? j : j + 1]; };
      const size_t m = n - 1;
      const double med = m % 2 ? at(m / 2) : 0.5 * (at(m / 2 - 1) + at(m / 2));
      rows[r].expected[static_cast<int>(Source::kLayer)] = static_cast<float>(med);
      rows[r].peers[static_cast<int>(Source::kLayer)] = static_cast<uint16_t>(std::min<size_t>(m, 65535));
    }
  }
}

void FillTp(std::vector<TestRow>& rows, const std::vector<RowKeys>& keys) {
  std::unordered_map<uint64_t, std::vector<uint32_t>> by;
  for (uint32_t r = 0; r < rows.size(); ++r) {
    if (!rows[r].shared_tp) by[keys[r].tp].push_back(r);
  }
  std::vector<double> vals;
  for (auto& [k, list] : by) {
    if (list.size() < 2) continue;
    for (uint32_t r : list) {
      vals.clear();
      for (uint32_t q : list) {
        if (q != r && rows[q].unit != rows[r].unit) vals.push_back(rows[q].observed);
      }
      if (vals.empty()) continue;
      const int s = static_cast<int>(Source::kTp);
      rows[r].peers[s] = static_cast<uint16_t>(std::min<size_t>(vals.size(), 65535));
      rows[r].expected[s] = static_cast<float>(MedianOf(vals));
    }
  }
}

void FillTimeExact(std::vector<TestRow>& rows, const std::vector<RowKeys>& keys,
                   const std::vector<UnitWorkload>& w, const PeerOptions& o) {
  // key -> unit -> values; then one representative (median) per unit.
  std::unordered_map<uint64_t, std::map<uint32_t, std::vector<double>>> by;
  for (uint32_t r = 0; r < rows.size(); ++r) by[keys[r].time][rows[r].unit].push_back(rows[r].observed);
  std::unordered_map<uint64_t, std::vector<std::pair<uint32_t, double>>> reps;
  for (auto& [k, units] : by) {
    auto& v = reps[k];
    for (auto& [u, vals] : units) v.emplace_back(u, MedianOf(vals));
  }
  std::vector<std::pair<double, double>> near;  // (distance, value)
  std::vector<double> vals;
  for (uint32_t r = 0; r < rows.size(); ++r) {
    const auto& cand = reps[keys[r].time];
    if (static_cast<int>(cand.size()) <= o.min_time_neighbours) continue;
    near.clear();
    for (const auto& [u, v] : cand) {
      if (u == rows[r].unit) continue;
      const double d = WorkloadDistance(w[rows[r].unit], w[u]);
      if (d <= o.max_workload_distance) near.emplace_back(d, v);
    }
    if (static_cast<int>(near.size()) < o.min_time_neighbours) continue;
    const size_t k = std::min<size_t>(near.size(), static_cast<size_t>(o.time_neighbours));
    std::partial_sort(near.begin(), near.begin() + static_cast<std::ptrdiff_t>(k), near.end());
    vals.clear();
    for (size_t j = 0; j < k; ++j) vals.push_back(near[j].second);
    const int s = static_cast<int>(Source::kTime);
    rows[r].expected[s] = static_cast<float>(MedianOf(vals));
    rows[r].peers[s] = static_cast<uint16_t>(k);
    rows[r].time_exact = true;
  }
}

}  // namespace detail

std::vector<TestRow> BuildTests(const InstanceTable& t, const UnitGroups& groups,
                                const std::vector<CommTiming>& comm, const PeerOptions& o) {
  std::vector<TestRow> rows;
  std::vector<detail::RowKeys> keys;
  if (t.detail.size() != t.size() || t.size() == 0) return rows;
  const std::vector<UnitWorkload> w = ComputeWorkloads(t);
  detail::MakeInstanceRows(t, groups, comm, &rows, &keys);
  detail::MakeFamilyRows(t, groups, comm, &rows, &keys);
  detail::FillLayer(rows, keys, o);
  detail::FillTp(rows, keys);
  detail::FillTimeExact(rows, keys, w, o);
  detail::FillTimeFit(t, rows, keys, w, o);
  return rows;
}

}  // namespace truffld::diagnose
