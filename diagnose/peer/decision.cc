// Step verdicts: Bonferroni within a unit, Benjamini-Hochberg across units (see decision.h).
#include "peer/decision.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "peer/blame.h"
#include "peer/scoring.h"

namespace truffld::diagnose {


double BenjaminiHochbergThreshold(std::vector<double> p, double alpha) {
  std::sort(p.begin(), p.end());
  const double n = static_cast<double>(p.size());
  double thr = 0;
  for (size_t k = 0; k < p.size(); ++k) {
    if (p[k] <= alpha * static_cast<double>(k + 1) / n) thr = p[k];
  }
  return thr;
}

double UpperTailP(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

double UpperTailZ(double p) {
  if (!(p < 0.5)) return 0;
  double lo = 0, hi = 38.5;  // UpperTailP(38.5) underflows past the smallest double
  for (int i = 0; i < 80; ++i) {
    const double mid = 0.5 * (lo + hi);
    (UpperTailP(mid) > p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

EmpiricalNull FitEmpiricalNull(const std::vector<double>& unit_p, int min_units) {
  EmpiricalNull n;
  if (unit_p.empty() || static_cast<int>(unit_p.size()) < min_units) return n;
  std::vector<double> z;
  z.reserve(unit_p.size());
  for (double p : unit_p) z.push_back(UpperTailZ(p));
  std::sort(z.begin(), z.end());
  auto quantile = [&](double q) {
    const double at = q * static_cast<double>(z.size() - 1);
    const size_t i = static_cast<size_t>(at);
    const double f = at - static_cast<double>(i);
    return i + 1 < z.size() ? z[i] * (1 - f) + z[i + 1] * f : z[i];
  };
  // Only when the bulk of the run is inflated: three quarters of its units more surprising than
  // the assumed null makes half of them. A run where a quarter or more of the units look as the
  // assumed null says is not judged against itself: its surprising units may be faults (a
  // stress run can have half of its units faulty). Inflation must also stand out of the
  // estimates' own sampling error (about 2 / sqrt(n) for these quantiles): three of them.
  const double median = quantile(0.5), q25 = quantile(0.25);
  const double noise = 3 * 2.0 / std::sqrt(static_cast<double>(z.size()));
  if (q25 <= noise) return n;
  n.centre = median;
  n.scale = std::max(1.0, (median - q25) / 0.6745);
  return n;
}

namespace {

std::string InsufficientReason(const InstanceTable& t, uint32_t u, const UnitVerdict& v) {
  const StepInfo& s = t.steps[u];
  if (s.instance_count == 0) return "no operator instances in this view";
  if (v.rows == 0) return "no operator with host or device timing to compare";
  if (s.step_name.rfind("<implicit step>", 0) == 0) {
    return "the trace has no step ranges and no top-level call repeated 3 times or more, so the whole run "
           "is one step with nothing to compare it with: wrap each iteration in truffld_hooks.step_range(...), "
           "or record with torch.profiler and call prof.step() once per iteration";
  }
  std::string r = "no peers that did the same work: no tensor-parallel rank ran this step's "
                  "operators, and fewer than 3 steps of similar workload on this rank ran them";
  if (v.with_source[static_cast<int>(PeerSource::kLayer)] > 0) {
    r += " (only its own layers can be compared, which cannot tell a slow step from a different one)";
  }
  return r;
}

}  // namespace

double CalibratedP(const EmpiricalNull& null, double p) {
  if (!null.Active()) return p;
  return p >= 0.5 ? 1.0 : UpperTailP((UpperTailZ(p) - null.centre) / null.scale);
}

bool DecisionResult::Passes(int view, double raw_p, bool assumed_null) const {
  const ViewDecision& v = views[view];
  return v.calibrated_threshold > 0 && (assumed_null ? raw_p : CalibratedP(v.Null(), raw_p)) <= v.calibrated_threshold;
}

double DecisionResult::UnitThreshold(int view, const UnitVerdict& v) const {
  return v.long_step ? views[view].calibrated_threshold : views[view].threshold;
}

double RowRatio(const TestRow& row) {
  const double e = BestExpected(row, nullptr);
  return std::isnan(e) ? 0.0 : (row.observed + 1.0) / (std::max(0.0, e) + 1.0);
}

namespace {

// Two smallest values seen (for "the best other one").
struct TwoSmallest {
  double a = 1, b = 1;
  void Add(double p) {
    if (p < a) { b = a; a = p; } else if (p < b) { b = p; }
  }
  double BestOther(double own) const { return own <= a ? b : a; }
};

// Evidence p-value of every row (see DecisionResult::support_p).
std::vector<double> SupportPValues(const InstanceTable& t, const std::vector<TestRow>& rows, const DecisionOptions& o) {
  std::vector<double> support(rows.size(), 1.0);
  std::vector<std::vector<uint32_t>> by_unit(t.steps.size()), device_rows(t.steps.size());
  for (uint32_t r = 0; r < rows.size(); ++r) {
    if (!Tested(rows[r])) continue;
    if (rows[r].instance != kFamilyRow && rows[r].metric == Metric::kDevice && !t.detail.empty()) {
      device_rows[rows[r].unit].push_back(r);
    }
    const StepInfo& st = t.steps[rows[r].unit];
    const double excess = rows[r].observed - BestExpected(rows[r], nullptr);
    const bool strong = RowRatio(rows[r]) >= o.SingleRatio(rows[r]) &&
                        (rows[r].shared_tp || excess >= o.lone_min_share * static_cast<double>(st.end_ns - st.start_ns));
    // A step without operator detail is judged as one piece: its whole duration sums everything
    // it did, as a family row sums its instances.
    const bool whole = !st.operator_detail && rows[r].instance != kFamilyRow &&
                       t.strings.Get(t.family[rows[r].instance]) == kWholeStepFamily;
    // The time no operator range covers (read/outside_time.h) is one pseudo-instance per step
    // that already sums its kind of time (every host gap, every direct call, all device idle):
    // a family sum, which stands on its own like one.
    const bool outside_sum = rows[r].instance != kFamilyRow && !t.detail.empty() &&
                             (t.detail[rows[r].instance].flags & kDetailOutside);
    if (rows[r].instance == kFamilyRow || strong || whole || outside_sum) {
      support[r] = rows[r].p_value;  // a family sum, or one instance strong enough on its own
    } else {
      by_unit[rows[r].unit].push_back(r);
    }
  }
  std::unordered_map<uint64_t, TwoSmallest> family;  // (family, metric) -> p-values of the unit
  std::vector<std::pair<int64_t, uint32_t>> device;  // (device start, row) of the unit
  std::vector<double> window;                        // p-values of the rows in a device window
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    family.clear();
    device.clear();
    for (uint32_t r : by_unit[u]) {
      family[uint64_t{rows[r].family} * 2 + static_cast<uint64_t>(rows[r].metric)].Add(rows[r].p_value);
    }
    // Every device instance of the unit can witness its neighbours, strong ones included: under
    // contention the slowest kernels are the strongest witnesses that the window was slow.
    for (uint32_t r : device_rows[u]) device.emplace_back(t.detail[rows[r].instance].device_start, r);
    for (uint32_t r : by_unit[u]) {
      const double own = rows[r].p_value;
      double other = family[uint64_t{rows[r].family} * 2 + static_cast<uint64_t>(rows[r].metric)].BestOther(own);
      support[r] = std::max(own, other);
    }
    // Device work slowed together in a window (contention): three rows within it must agree.
    std::sort(device.begin(), device.end());
    const int64_t w = std::max<int64_t>(o.cluster_min_ns, static_cast<int64_t>(
        o.cluster_window * static_cast<double>(t.steps[u].end_ns - t.steps[u].start_ns)));
    // Sliding window over device starts; the window's p-values kept sorted (a vector: no node
    // allocated per row, and a window holds tens of rows).
    window.clear();
    for (size_t i = 0, lo = 0, hi = 0; i < device.size(); ++i) {
      while (device[lo].first < device[i].first - w) {
        window.erase(std::lower_bound(window.begin(), window.end(), rows[device[lo++].second].p_value));
      }
      while (hi < device.size() && device[hi].first <= device[i].first + w) {
        const double p = rows[device[hi++].second].p_value;
        window.insert(std::upper_bound(window.begin(), window.end(), p), p);
      }
      const uint32_t r = device[i].second;
      if (support[r] == rows[r].p_value) continue;  // stands on its own (or no witness can help)
      // The second-smallest p-value among the others = the third smallest, or second when this
      // row is itself among the two smallest.
      auto it = window.begin();
      double others[2] = {1, 1};
      bool skipped = false;
      for (int k = 0; k < 2 && it != window.end(); ++it) {
        if (!skipped && *it == rows[r].p_value) { skipped = true; continue; }
        others[k++] = *it;
      }
      support[r] = std::min(support[r], std::max(rows[r].p_value, others[1]));
    }
  }
  return support;
}

// Unit u's cycle against its similar steps' (`expected_ns`; NaN or 0: unknown).
void MarkLongStep(const InstanceTable& t, uint32_t u, double cycle, double expected_ns, const DecisionOptions& o,
                  UnitVerdict* v) {
  if (!(expected_ns > 0)) return;
  v->step_ratio = cycle / expected_ns;
  v->step_extra_ns = cycle - expected_ns;
  v->gap_before_ns = cycle - static_cast<double>(t.steps[u].end_ns - t.steps[u].start_ns);
  v->long_step = o.long_step_ratio > 0 && v->step_ratio >= o.long_step_ratio;
}

}  // namespace

DecisionResult DecideUnits(const InstanceTable& t, const std::vector<TestRow>& rows, const DecisionOptions& o,
                           const StepCycles* cycles) {
  DecisionResult d;
  d.alpha = o.alpha;
  d.min_impact_share = o.min_impact_share;
  d.long_step_ratio = o.long_step_ratio;
  d.long_step_row_share = o.long_step_row_share;
  d.units.resize(t.steps.size());
  d.support_p = SupportPValues(t, rows, o);
  std::vector<double> min_p(t.steps.size(), 1.0);
  for (uint32_t r = 0; r < rows.size(); ++r) {
    UnitVerdict& v = d.units[rows[r].unit];
    ++v.rows;
    for (int s = 0; s < kPeerSourceCount; ++s) v.with_source[static_cast<size_t>(s)] += rows[r].Has(static_cast<PeerSource>(s));
    if (!Tested(rows[r])) continue;
    ++v.tests;
    min_p[rows[r].unit] = std::min(min_p[rows[r].unit], d.support_p[r]);
  }
  std::vector<double> per_view[2];
  std::vector<char> long_in_view[2];
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    UnitVerdict& v = d.units[u];
    const int view = ViewIndex(t.steps[u].view);
    if (cycles != nullptr && u < cycles->similar_ns.size()) MarkLongStep(t, u, cycles->ns[u], cycles->similar_ns[u], o, &v);
    if (v.tests == 0) {
      v.verdict = Verdict::kInsufficient;
      v.reason = InsufficientReason(t, u, v);
      ++d.views[view].insufficient;
      continue;
    }
    v.p_value = std::min(1.0, min_p[u] * static_cast<double>(v.tests));
    per_view[view].push_back(v.p_value);
    long_in_view[view].push_back(v.long_step);
    ++d.views[view].judged;
    d.views[view].long_steps += v.long_step;
  }
  for (int view = 0; view < 2; ++view) {
    const EmpiricalNull null = FitEmpiricalNull(per_view[view], o.min_null_units);
    d.views[view].null_centre = null.centre;
    d.views[view].null_scale = null.scale;
    // BH on the recalibrated p-values; the threshold mapped back to the raw scale.
    std::vector<double> calibrated;
    calibrated.reserve(per_view[view].size());
    for (size_t i = 0; i < per_view[view].size(); ++i) {
      const double p = per_view[view][i];
      calibrated.push_back(long_in_view[view][i] ? p : CalibratedP(null, p));
    }
    const double thr = BenjaminiHochbergThreshold(calibrated, o.alpha);
    d.views[view].calibrated_threshold = thr;
    const auto passed = std::count_if(calibrated.begin(), calibrated.end(), [&](double p) { return thr > 0 && p <= thr; });
    d.views[view].long_step_row_cut = calibrated.empty() ? 0 : o.alpha * static_cast<double>(passed) / static_cast<double>(calibrated.size());
    // Reported on the raw scale as the largest raw p-value that passes (exact: mapping the cut
    // back through the normal tail loses the last digits near underflow).
    d.views[view].threshold = thr;
    if (null.Active()) {
      d.views[view].threshold = 0;
      for (size_t i = 0; thr > 0 && i < calibrated.size(); ++i) {
        if (calibrated[i] <= thr && !long_in_view[view][i]) {
          d.views[view].threshold = std::max(d.views[view].threshold, per_view[view][i]);
        }
      }
      // Row p-values stop at 1e-300 (scoring.cc), so a unit's evidence cannot exceed it: a
      // null wide enough leaves no step that a single fault could get flagged.
      d.views[view].best_possible_p = CalibratedP(null, kSmallestRowP);
      d.views[view].single_step_blind = d.views[view].best_possible_p > o.alpha / static_cast<double>(calibrated.size());
    }
  }
  for (uint32_t u = 0; u < t.steps.size(); ++u) {
    UnitVerdict& v = d.units[u];
    if (v.tests == 0) continue;
    const int view = ViewIndex(t.steps[u].view);
    const bool flagged = d.Passes(view, v.p_value, v.long_step);
    v.verdict = flagged ? Verdict::kAbnormal : Verdict::kNormal;
    d.views[view].flagged += flagged;
  }
  return d;
}

bool Significant(const DecisionResult& d, const InstanceTable& t, const std::vector<TestRow>& rows, uint32_t r) {
  const UnitVerdict& v = d.units[rows[r].unit];
  if (v.verdict != Verdict::kAbnormal) return false;
  const int view = ViewIndex(t.steps[rows[r].unit].view);
  const double p = d.support_p[r] * static_cast<double>(v.tests);
  if (d.Passes(view, p, v.long_step)) return true;
  if (!v.long_step) return false;
  if (p <= d.views[view].long_step_row_cut) return true;
  // Which of its rows made a long step long is a question of where, not whether: a row that
  // explains at least a quarter of its extra time is named when its own test passes alpha (a
  // heavy-tailed family, such as the time between steps on a loaded host, gives a 3,600x gap a
  // p-value of only 1e-3).
  const double excess = rows[r].observed - BestExpected(rows[r], nullptr);
  return d.support_p[r] <= d.alpha && excess >= d.long_step_row_share * v.step_extra_ns;
}

}  // namespace truffld::diagnose
