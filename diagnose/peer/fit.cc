// Test-row construction and the fitted similar-steps expectation (see peers.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

#include "peer/internal.h"

namespace truffld::diagnose::detail {
namespace {

uint64_t RankKey(const InstanceTable& t, uint32_t unit) {
  const StepInfo& s = t.steps[unit];
  return Mix(static_cast<uint64_t>(s.rank.value_or(-1)), s.view == View::kHorizontal ? 7 : 3);
}

// Size of an instance's work, a quantity faults do not change: message bytes for a collective
// (its kernel grid is fixed), launched grid blocks for kernels, copied bytes otherwise.
double SizeOf(const InstanceTable& t, uint32_t i) {
  const InstanceDetail& d = t.detail[i];
  if (t.features[i][kCommBytes] > 0) return t.features[i][kCommBytes];
  if (d.blocks > 0) return d.blocks;
  return t.features[i][kBytesMoved];
}

}  // namespace

void MakeInstanceRows(const InstanceTable& t, const UnitGroups& g, const std::vector<CommTiming>& comm,
                      std::vector<TestRow>* rows, std::vector<RowKeys>* keys) {
  std::unordered_map<uint64_t, uint32_t> occurrence, position_occurrence;
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    const StepInfo& st = t.steps[u];
    occurrence.clear();
    position_occurrence.clear();
    const uint64_t rank = RankKey(t, u);
    for (uint32_t i = st.first_instance; i < st.first_instance + st.instance_count; ++i) {
      const InstanceDetail& d = t.detail[i];
      const uint32_t occ = occurrence[d.signature]++;
      // The k-th operator at this position of a layer: layer k's, whatever the step's size.
      const uint32_t pocc = position_occurrence[d.position]++;
      const uint64_t op = Mix(Mix(d.position, pocc), (d.flags & kDetailHasDevice) ? 1 : 0);
      for (int m = 0; m < kMetricCount; ++m) {
        const double v = MetricValue(t, comm, i, static_cast<Metric>(m));
        if (v < 0) continue;
        TestRow row;
        row.unit = u;
        row.instance = i;
        row.family = t.family[i];
        row.slot = Mix(d.position, pocc);
        row.metric = static_cast<Metric>(m);
        row.observed = static_cast<float>(v);
        row.shared_tp = m == static_cast<int>(Metric::kDevice) && i < comm.size() && comm[i].participants > 1;
        row.group_cost = d.flags & kDetailGroupCost;
        row.context_known = st.context >= 0;
        RowKeys k;
        k.layer = Mix(Mix(Mix(u, d.signature), static_cast<uint64_t>(m)), 11);
        k.tp = Mix(Mix(Mix(Mix(Mix(g.group[u], d.signature), occ), static_cast<uint64_t>(m)), 13), st.device_detail);
        k.time = Mix(Mix(Mix(Mix(rank, d.signature), occ), static_cast<uint64_t>(m)), 17);
        k.fit = Mix(Mix(Mix(rank, op), static_cast<uint64_t>(m)), 19);
        // A step without operator detail has no kernels to size it: its scheduled tokens do.
        const double host_size = st.operator_detail ? st.work_blocks : static_cast<double>(std::max<int64_t>(0, st.tokens));
        k.x = m == static_cast<int>(Metric::kDevice) ? std::log1p(SizeOf(t, i)) : std::log1p(host_size);
        rows->push_back(row);
        keys->push_back(k);
      }
    }
  }
}

void MakeFamilyRows(const InstanceTable& t, const UnitGroups& g, const std::vector<CommTiming>& comm,
                    std::vector<TestRow>* rows, std::vector<RowKeys>* keys) {
  struct Agg {
    double sum[kMetricCount] = {0, 0}, size = 0;
    int n[kMetricCount] = {0, 0};
    bool shared = false;  // holds a matched collective: its transfer is shared with TP peers
    std::vector<uint64_t> sigs;
  };
  std::map<std::pair<uint32_t, uint32_t>, Agg> by;  // (layer, family) -> aggregate
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    const StepInfo& st = t.steps[u];
    by.clear();
    for (uint32_t i = st.first_instance; i < st.first_instance + st.instance_count; ++i) {
      Agg& a = by[{t.layer[i], t.family[i]}];
      a.sigs.push_back(t.detail[i].signature);
      a.size += SizeOf(t, i);
      a.shared = a.shared || (i < comm.size() && comm[i].participants > 1);
      for (int m = 0; m < kMetricCount; ++m) {
        const double v = MetricValue(t, comm, i, static_cast<Metric>(m));
        if (v < 0) continue;
        a.sum[m] += v;
        ++a.n[m];
      }
    }
    const uint64_t rank = RankKey(t, u);
    for (auto& [lf, a] : by) {
      std::sort(a.sigs.begin(), a.sigs.end());
      uint64_t sig = 0xFA;
      for (uint64_t s : a.sigs) sig = Mix(sig, s);
      for (int m = 0; m < kMetricCount; ++m) {
        if (a.n[m] < 2) continue;
        TestRow row;
        row.unit = u;
        row.instance = kFamilyRow;
        row.family = lf.second;
        row.metric = static_cast<Metric>(m);
        row.observed = static_cast<float>(a.sum[m]);
        row.shared_tp = m == static_cast<int>(Metric::kDevice) && a.shared;
        row.context_known = st.context >= 0;
        RowKeys k;
        k.tp = Mix(Mix(Mix(Mix(g.group[u], sig), static_cast<uint64_t>(m)), 23), st.device_detail);
        k.time = Mix(Mix(Mix(rank, sig), static_cast<uint64_t>(m)), 29);
        k.fit = Mix(Mix(Mix(Mix(rank, lf.first), lf.second), static_cast<uint64_t>(m)), 31);
        k.x = m == static_cast<int>(Metric::kDevice) ? std::log1p(a.size) : std::log(static_cast<double>(a.n[m]));
        rows->push_back(row);
        keys->push_back(k);
      }
    }
  }
}

namespace {

struct FitPoint { double x, y; uint32_t unit; };

// Row r's expectation from its nearest points of the same fit key (x ascending): a Theil-Sen
// line through up to `want` neighbours of other units in its regime, interpolated at x0.
void FitRow(const std::vector<FitPoint>& pts, uint32_t unit, double x0, const std::vector<UnitWorkload>& w,
            size_t want, const PeerOptions& o, std::vector<const FitPoint*>* near_buf, std::vector<double>* slopes,
            std::vector<double>* resid, TestRow* row) {
  const int s = static_cast<int>(PeerSource::kTime);
  std::vector<const FitPoint*>& near = *near_buf;
  const uint32_t regime = w[unit].regime;
  size_t hi = static_cast<size_t>(std::lower_bound(pts.begin(), pts.end(), x0,
                                  [](const FitPoint& p, double x) { return p.x < x; }) - pts.begin());
  size_t lo = hi;  // expand outward: [lo, hi) examined
  near.clear();
  while (near.size() < want && (lo > 0 || hi < pts.size())) {
    const bool take_hi = lo == 0 || (hi < pts.size() && pts[hi].x - x0 <= x0 - pts[lo - 1].x);
    const FitPoint& p = take_hi ? pts[hi++] : pts[--lo];
    if (std::abs(p.x - x0) > 1.5) break;
    if (p.unit == unit || w[p.unit].regime != regime) continue;
    near.push_back(&p);
  }
  if (static_cast<int>(near.size()) < o.min_fit_neighbours) return;
  // Interpolate only: a step larger (or smaller) than every neighbour would need the fit to
  // extrapolate, and costs change regime with size (latency- vs bandwidth-bound transfers).
  double lo_x = near[0]->x, hi_x = near[0]->x;
  for (const FitPoint* p : near) {
    lo_x = std::min(lo_x, p->x);
    hi_x = std::max(hi_x, p->x);
  }
  if (x0 > hi_x + 0.1 || x0 < lo_x - 0.1) return;
  slopes->clear();
  for (size_t a = 0; a < near.size(); ++a) {
    for (size_t b = a + 1; b < near.size(); ++b) {
      const double dx = near[b]->x - near[a]->x;
      if (std::abs(dx) > 0.05) slopes->push_back((near[b]->y - near[a]->y) / dx);
    }
  }
  const double slope = slopes->empty() ? 0.0 : std::clamp(MedianOf(*slopes), 0.0, 1.5);
  resid->clear();
  for (const FitPoint* p : near) resid->push_back(p->y - slope * p->x);
  const double intercept = MedianOf(*resid);
  const double pred = intercept + slope * x0;
  row->expected[s] = static_cast<float>(std::max(0.0, std::exp(pred) - o.floor_ns));
  row->peers[s] = static_cast<uint16_t>(near.size());
  // How closely the steps it was fitted on follow the line: the scoring trusts the expectation
  // no better than this (a cost the step sizes do not determine scatters widely).
  for (double& v : *resid) v = std::abs(v - intercept);
  row->fit_scatter = static_cast<float>(1.4826 * MedianOf(*resid));
}

}  // namespace

void FillTimeFit(const InstanceTable& t, std::vector<TestRow>& rows, const std::vector<RowKeys>& keys,
                 const std::vector<UnitWorkload>& w, const PeerOptions& o) {
  (void)t;
  // Points and the rows still without a time expectation, per fit key, each gathered in row
  // order in one sequential pass (a row to fit carries its unit and x, so the fits read no row
  // or key again); each group is sorted once and its rows fitted together (a row writes only its
  // own expectation: any group order). Groups without a row to fit take no logarithms.
  struct Todo { uint32_t row, unit; double x; };
  struct Group { std::vector<FitPoint> pts; std::vector<Todo> todo; };  // pts' y: observed ns until fitted
  std::unordered_map<uint64_t, uint32_t> index;
  std::vector<Group> groups;
  for (uint32_t r = 0; r < rows.size(); ++r) {
    const auto [it, fresh] = index.try_emplace(keys[r].fit, static_cast<uint32_t>(groups.size()));
    if (fresh) groups.emplace_back();
    Group& g = groups[it->second];
    g.pts.push_back({keys[r].x, rows[r].observed, rows[r].unit});
    if (!rows[r].Has(PeerSource::kTime)) g.todo.push_back({r, rows[r].unit, keys[r].x});
  }
  const size_t want = static_cast<size_t>(std::max(o.min_fit_neighbours, o.time_neighbours));
  ForChunks(groups.size(), o.threads, [&](size_t first, size_t last) {
    std::vector<const FitPoint*> near;
    std::vector<double> slopes, resid;
    for (size_t i = first; i < last; ++i) {
      Group& g = groups[i];
      if (g.todo.empty()) continue;
      for (FitPoint& p : g.pts) p.y = std::log(p.y + o.floor_ns);
      std::sort(g.pts.begin(), g.pts.end(), [](const FitPoint& a, const FitPoint& b) { return a.x < b.x; });
      for (const Todo& d : g.todo) FitRow(g.pts, d.unit, d.x, w, want, o, &near, &slopes, &resid, &rows[d.row]);
    }
  });
}

}  // namespace truffld::diagnose::detail
