// Slower regimes (see slow_regimes.h).
#include "peer/slow_regimes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdio>
#include <map>
#include <tuple>

#include "peer/format_ns.h"
#include "peer/impact.h"
#include "peer/robust_stats.h"

namespace truffld::diagnose {
namespace {

// "steps 3, 6, 9, ..." with at most five indices.
std::string StepList(const std::vector<int64_t>& steps) {
  std::string s = steps.size() == 1 ? "step " : "steps ";
  for (size_t k = 0; k < steps.size() && k < 5; ++k) s += (k ? ", " : "") + std::to_string(steps[k]);
  if (steps.size() > 5) s += ", ...";
  return s;
}

std::string Sentence(const InstanceTable& t, const SlowRegime& r) {
  char b[896];
  const std::string absorbed = AbsorbedWorthSaying(r.total_ns, r.absorbed_ns)
                                   ? " (the steps did not pay " + FormatNs(r.absorbed_ns) + " more of it)"
                                   : "";
  std::snprintf(b, sizeof b,
                "%s%s view: %s took +%s more (typically; +%s to +%s) in %d of %d judged steps (%s) than in the "
                "run's other steps like them, costing those steps %.1f%% of their time (typically), %s over the "
                "run%s: a slower mode that a quarter or more of the similar steps share, reported once as how "
                "the run behaves rather than as a fault of each step; see what those steps have in common",
                r.rank >= 0 ? ("rank " + std::to_string(r.rank) + ", ").c_str() : "", ViewName(r.view),
                t.strings.Get(r.family).c_str(), FormatNs(r.typical_excess_ns).c_str(),
                FormatNs(r.min_excess_ns).c_str(), FormatNs(r.max_excess_ns).c_str(), r.units(), r.judged,
                StepList(r.steps).c_str(), 100 * r.typical_share, FormatNs(r.total_ns).c_str(), absorbed.c_str());
  return b;
}

}  // namespace

// The mixture's components are first gathered into modes (components whose means lie within
// kModeGap of the next, in log units: BIC often splits one broad mode in two); the main mode is
// the heaviest; a slower one counts when it holds at least regime_weight of the mass and lies at
// least kRegimeShift above it: the scoring's null takes such a mode for a normal regime (or for
// the main one, when BIC split the true main mode). A row belongs to it past halfway.
std::vector<RegimeRow> SlowerRegimeRows(const ResidualModel& m, const ScoringOptions& o, const std::vector<uint32_t>& list,
                                        const std::vector<double>& r, const std::vector<TestRow>& rows) {
  constexpr double kModeGap = 0.1;
  std::vector<RegimeRow> out;
  if (m.method != "gmm" || m.means.size() < 2) return out;
  std::vector<std::pair<double, double>> comps;  // (mean, weight) by mean
  for (size_t c = 0; c < m.means.size(); ++c) comps.emplace_back(m.means[c], m.weights[c]);
  std::sort(comps.begin(), comps.end());
  std::vector<std::pair<double, double>> modes;  // (weighted mean, weight)
  for (size_t c = 0; c < comps.size(); ++c) {
    if (c == 0 || comps[c].first - comps[c - 1].first > kModeGap) modes.emplace_back(0.0, 0.0);
    modes.back().first += comps[c].first * comps[c].second;
    modes.back().second += comps[c].second;
  }
  for (auto& [mean, w] : modes) mean = w > 0 ? mean / w : mean;
  size_t main = 0;
  for (size_t k = 1; k < modes.size(); ++k) if (modes[k].second > modes[main].second) main = k;
  const double mu0 = modes[main].first;
  double slow = std::numeric_limits<double>::infinity();
  for (const auto& [mean, w] : modes)
    if (w >= o.regime_weight && mean >= mu0 + kRegimeShift) slow = std::min(slow, mean);
  if (!std::isfinite(slow)) return out;
  const double cut = 0.5 * (mu0 + slow);
  const int s = static_cast<int>(PeerSource::kTime);
  for (size_t i = 0; i < list.size(); ++i) {
    if (r[i] < cut) continue;
    const TestRow& row = rows[list[i]];
    const double base = (std::max(0.0, static_cast<double>(row.expected[s])) + o.floor_ns) * std::exp(mu0) - o.floor_ns;
    const double excess = static_cast<double>(row.observed) - base;
    if (excess > 0) out.push_back({list[i], static_cast<float>(excess)});
  }
  return out;
}

std::vector<SlowRegime> FindSlowRegimes(const InstanceTable& t, const std::vector<TestRow>& rows,
                                        const ScoringResult& scoring, const DecisionResult& d,
                                        const SlowRegimeOptions& o, const StepCycles* cycles) {
  // (view, rank, family, metric) -> unit -> summed regime excess
  using Key = std::tuple<int, int64_t, uint32_t, int>;
  std::map<Key, std::map<uint32_t, double>> by;
  for (const RegimeRow& rr : scoring.regime_rows) {
    const TestRow& row = rows[rr.row];
    if (row.instance >= t.detail.size() || !(t.detail[row.instance].flags & kDetailOutside)) continue;
    const StepInfo& st = t.steps[row.unit];
    by[{ViewIndex(st.view), st.rank.value_or(-1), row.family, static_cast<int>(row.metric)}][row.unit] += rr.excess_ns;
  }
  std::map<std::pair<int, int64_t>, int> judged;  // (view, rank) -> judged units
  for (uint32_t u = 0; u < t.steps.size() && u < d.units.size(); ++u)
    judged[{ViewIndex(t.steps[u].view), t.steps[u].rank.value_or(-1)}] += d.units[u].verdict != Verdict::kInsufficient;
  std::map<std::pair<int, int64_t>, std::vector<SlowRegime>> lanes;
  for (const auto& [key, units] : by) {
    std::vector<double> excess, share;
    std::vector<int64_t> steps;
    double paid_sum = 0, excess_sum = 0;
    for (const auto& [u, ns] : units) {
      const double dur = std::max(1.0, static_cast<double>(t.steps[u].end_ns - t.steps[u].start_ns));
      double paid = ns;
      if (cycles && u < cycles->ns.size() && u < cycles->similar_ns.size() && !std::isnan(cycles->similar_ns[u]))
        paid = std::clamp(cycles->ns[u] - cycles->similar_ns[u], 0.0, ns);
      if (paid < o.min_share * dur) continue;  // a regime that costs this step too little to act on
      excess.push_back(ns);
      share.push_back(paid / dur);
      steps.push_back(t.steps[u].step_index);
      paid_sum += paid;
      excess_sum += ns;
    }
    const int lane_judged = judged[{std::get<0>(key), std::get<1>(key)}];
    if (static_cast<int>(excess.size()) < std::max(o.min_units, 1) ||
        static_cast<double>(excess.size()) < o.min_lane_share * lane_judged)
      continue;
    SlowRegime r;
    r.view = std::get<0>(key) == ViewIndex(View::kHorizontal) ? View::kHorizontal : View::kVertical;
    r.rank = std::get<1>(key);
    r.family = std::get<2>(key);
    r.metric = static_cast<Metric>(std::get<3>(key));
    r.judged = lane_judged;
    r.total_ns = paid_sum;
    r.absorbed_ns = excess_sum - paid_sum;
    const auto [lo, hi] = std::minmax_element(excess.begin(), excess.end());
    r.min_excess_ns = *lo;
    r.max_excess_ns = *hi;
    r.typical_excess_ns = MedianInPlace(excess.data(), excess.size());
    r.typical_share = MedianInPlace(share.data(), share.size());
    std::sort(steps.begin(), steps.end());
    r.steps = std::move(steps);
    r.sentence = Sentence(t, r);
    lanes[{std::get<0>(key), r.rank}].push_back(std::move(r));
  }
  std::vector<SlowRegime> out;
  for (auto& [lane, found] : lanes) {
    std::stable_sort(found.begin(), found.end(), [](const SlowRegime& a, const SlowRegime& b) { return a.total_ns > b.total_ns; });
    for (size_t k = 0; k < found.size() && k < o.max_per_lane; ++k) out.push_back(std::move(found[k]));
  }
  return out;
}

}  // namespace truffld::diagnose
