// Run comparison at equal workload (compare.h).
#include "compare/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "peer/robust_stats.h"

namespace truffld::diagnose {
namespace {

struct Point {
  double w = 0, c = 0, x = 0, y = 0;  // workload (tokens), cost, context, batch (requests)
};
using FamKey = std::tuple<int, std::string, std::string>;  // view, phase, family
using StepKeyT = std::pair<int, std::string>;               // view, phase

struct Collected {
  std::map<FamKey, std::vector<Point>> device, host;  // per unit sums
  std::map<StepKeyT, std::vector<Point>> step;
  std::set<std::string> kernels;
  std::set<std::pair<std::string, std::string>> parent_of;  // (child family, parent family)
};

double Workload(const StepInfo& s) { return s.tokens > 0 ? double(s.tokens) : s.batch > 0 ? double(s.batch) : 1.0; }
double Context(const StepInfo& s) { return s.context > 0 ? double(s.context) : 0.0; }
double Batch(const StepInfo& s) { return s.batch > 0 ? double(s.batch) : double(std::max<size_t>(1, s.requests.size())); }

Collected Collect(const InstanceTable& t) {
  Collected out;
  std::map<std::pair<uint32_t, uint32_t>, std::pair<double, double>> sums;  // (unit, family) -> (device, host)
  for (size_t i = 0; i < t.step.size(); ++i) {
    // The device idle time moves whenever device work or the host's pace does (a slower kernel
    // shortens it): a consequence, never a family that changed (read/outside_time.h).
    if (i < t.detail.size() && (t.detail[i].flags & kDetailIdle)) continue;
    auto& s = sums[{t.step[i], t.family[i]}];
    s.first += t.features[i][kKernelTimeNs];
    // Host cost: own host time without the time blocked on the device queue (a copy waiting for
    // slower kernels is not slower itself); the range's span when the detail is absent.
    s.second += i < t.detail.size() ? double(t.detail[i].host_ns) : t.features[i][kDurationNs];
    if (t.parent[i] != kNoString) out.parent_of.insert({t.strings.Get(t.family[i]), t.strings.Get(t.parent[i])});
    if (i < t.kernels.size())
      for (const NameCount& k : t.kernels[i]) out.kernels.insert(t.strings.Get(k.name));
  }
  for (const auto& [key, v] : sums) {
    const StepInfo& s = t.steps[key.first];
    const FamKey k{int(s.view), s.phase, t.strings.Get(key.second)};
    out.device[k].push_back({Workload(s), v.first, Context(s), Batch(s)});
    out.host[k].push_back({Workload(s), v.second, Context(s), Batch(s)});
  }
  for (const StepInfo& s : t.steps)
    out.step[{int(s.view), s.phase}].push_back({Workload(s), double(s.end_ns - s.start_ns), Context(s), Batch(s)});
  return out;
}

// Workload distance: relative difference of tokens plus that of context.
double Distance(const Point& p, const Point& q) {
  return std::fabs(std::log(p.w / q.w)) + std::fabs(std::log((p.x + 1) / (q.x + 1)));
}

// Expected cost of `q` at its workload: the median cost of the kNeighbours baseline steps of
// most similar workload among those of equal workload: tokens and requests within kTokenTolerance (exact
// below 50 tokens: engines pad batches to CUDA-graph sizes, so a step of 21 tokens says nothing
// about one of 22) and context within kContextTolerance. `skip`: a baseline index left out, for
// the baseline's own scatter. Sets *far when no baseline step has an equal workload.
constexpr size_t kNeighbours = 5;
constexpr double kTokenTolerance = 0.02, kContextTolerance = 0.25;
double Expected(const Point& q, const std::vector<Point>& base, size_t skip, bool* far) {
  std::vector<std::pair<double, double>> d;  // distance, cost
  d.reserve(base.size());
  for (size_t i = 0; i < base.size(); ++i) {
    const Point& b = base[i];
    if (i == skip || std::fabs(std::log(q.w / b.w)) > kTokenTolerance || std::fabs(std::log(q.y / b.y)) > kTokenTolerance ||
        std::fabs(std::log((q.x + 1) / (b.x + 1))) > kContextTolerance)
      continue;
    d.push_back({Distance(q, b), b.c});
  }
  const size_t k = std::min(kNeighbours, d.size());
  std::partial_sort(d.begin(), d.begin() + k, d.end());
  *far = k == 0;
  std::vector<double> c;
  for (size_t i = 0; i < k; ++i) c.push_back(d[i].second);
  return Median(c);
}

struct Shift {
  size_t n = 0, nb = 0, outside = 0;
  double ratio = 1, lo = 1, hi = 1, delta = 0;
  double p = 1;  // two-sided Mann-Whitney p-value of the two runs' log-ratios
  bool ok = false;
};

// Two-sided Mann-Whitney U test (normal approximation with tie correction).
double MannWhitneyP(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<std::pair<double, int>> v;
  for (double x : a) v.push_back({x, 0});
  for (double x : b) v.push_back({x, 1});
  std::sort(v.begin(), v.end());
  const double n1 = double(a.size()), n2 = double(b.size()), n = n1 + n2;
  double r1 = 0, ties = 0;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j < v.size() && v[j].first == v[i].first) ++j;
    const double rank = (double(i) + double(j) + 1) / 2, t = double(j - i);
    ties += t * t * t - t;
    for (size_t k = i; k < j; ++k) r1 += v[k].second == 0 ? rank : 0;
    i = j;
  }
  const double u = r1 - n1 * (n1 + 1) / 2;
  const double var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)));
  if (var <= 0) return 1;
  const double z = (std::fabs(u - n1 * n2 / 2) - 0.5) / std::sqrt(var);
  return std::erfc(std::max(0.0, z) / std::sqrt(2.0));
}

// The target's shift against the baseline at equal workload, with a bootstrap interval.
Shift Measure(const std::vector<Point>& tgt, const std::vector<Point>& base, const CompareOptions& o, uint64_t salt) {
  Shift s;
  std::vector<Point> b(base);
  if (b.size() > 2000) {  // a deterministic sample bounds the neighbour search
    std::vector<Point> t;
    for (size_t i = 0; i < 2000; ++i) t.push_back(b[i * b.size() / 2000]);
    b.swap(t);
  }
  auto lr = [](double c, double e) { return std::log(std::max(c, 1.0) / std::max(e, 1.0)); };
  std::vector<double> rt, rb;
  bool far = false;
  for (size_t i = 0; i < b.size(); ++i) {
    const double e = Expected(b[i], b, i, &far);
    if (!far) rb.push_back(lr(b[i].c, e));
  }
  const double bias = std::exp(Median(rb));
  for (const Point& q : tgt) {
    const double e = Expected(q, b, SIZE_MAX, &far);
    if (far) { ++s.outside; continue; }
    rt.push_back(lr(q.c, e));
    s.delta += q.c - std::max(e, 1.0) * bias;
  }
  s.n = rt.size(), s.nb = rb.size();
  if (s.n < kMinCompareSteps || s.nb < kMinCompareSteps) {
    s.delta = 0;
    return s;
  }
  s.delta /= double(s.n);
  s.ratio = std::exp(Median(rt) - Median(rb));
  s.p = MannWhitneyP(rt, rb);
  std::mt19937_64 rng(o.seed ^ salt);
  std::vector<double> diffs, xt(rt.size()), xb(rb.size());
  for (int i = 0; i < o.bootstrap; ++i) {
    for (double& x : xt) x = rt[rng() % rt.size()];
    for (double& x : xb) x = rb[rng() % rb.size()];
    diffs.push_back(Median(xt) - Median(xb));
  }
  std::sort(diffs.begin(), diffs.end());
  s.lo = std::exp(diffs[size_t(0.025 * double(diffs.size() - 1))]);
  s.hi = std::exp(diffs[size_t(0.975 * double(diffs.size() - 1))]);
  s.ok = true;
  return s;
}

// Significant: the interval excludes no change, the change is at least min_change, and its
// p-value passes Benjamini-Hochberg at o.false_discovery over every comparison made (`p_cut`).
bool Significant(const Shift& s, const CompareOptions& o, double p_cut) {
  return s.ok && (s.lo > 1 || s.hi < 1) && std::fabs(s.ratio - 1) >= o.min_change && s.p <= p_cut;
}

// The Benjamini-Hochberg p-value cut at level q over `ps`.
double BhCut(std::vector<double> ps, double q) {
  std::sort(ps.begin(), ps.end());
  double cut = 0;
  for (size_t i = 0; i < ps.size(); ++i)
    if (ps[i] <= q * double(i + 1) / double(ps.size())) cut = ps[i];
  return cut;
}

uint64_t Salt(const std::string& s) { return std::hash<std::string>{}(s); }

std::string Ratio(double r) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2fx", r);
  return b;
}

// The significant family that best explains the change: in the view and phase of the largest
// significant step time change when there is one, the largest change that is not merely the
// parent of another significant family changing by nearly as much (aten::linear around aten::mm).
const FamilyChange* Explaining(const CompareResult& r, const StepTimeChange* st,
                               const std::set<std::pair<std::string, std::string>>& parent_of) {
  const FamilyChange* best = nullptr;
  for (const FamilyChange& f : r.families) {
    if (!f.significant || (st && (f.view != st->view || f.phase != st->phase))) continue;
    bool wrapper = false;
    for (const FamilyChange& c : r.families)
      wrapper = wrapper || (c.significant && c.view == f.view && c.phase == f.phase && &c != &f &&
                            parent_of.count({c.family, f.family}) && std::fabs(c.delta_ns_per_step) >= 0.9 * std::fabs(f.delta_ns_per_step));
    if (!wrapper && (!best || std::fabs(f.delta_ns_per_step) > std::fabs(best->delta_ns_per_step))) best = &f;
  }
  return best || !st ? best : Explaining(r, nullptr, parent_of);
}

std::string Sentence(const CompareResult& r, const CompareOptions& o,
                     const std::set<std::pair<std::string, std::string>>& parent_of) {
  const StepTimeChange* st = nullptr;
  for (const StepTimeChange& s : r.step_time)
    if (s.significant && (!st || std::fabs(s.delta_ns_per_step) > std::fabs(st->delta_ns_per_step))) st = &s;
  size_t sig = 0;
  for (const FamilyChange& f : r.families) sig += f.significant;
  std::string out;
  if (st)
    out = "step time (" + std::string(ViewName(st->view)) + ", " + st->phase + ") " + Ratio(st->ratio) + " [" +
          Ratio(st->ci_low) + ", " + Ratio(st->ci_high) + "] of the baseline's at equal workload";
  if (sig) {
    const FamilyChange& f = *Explaining(r, st, parent_of);
    out += (out.empty() ? "" : "; ") + f.family + " (" + f.metric + ", " + ViewName(f.view) + ", " + f.phase + ") " +
           Ratio(f.ratio) + " [" + Ratio(f.ci_low) + ", " + Ratio(f.ci_high) + "]";
    if (st && f.view == st->view && f.phase == st->phase && f.share_of_step_change > 0)
      out += ", " + std::to_string(int(std::lround(100 * f.share_of_step_change))) + "% of the step time's change";
    out += "; " + std::to_string(sig) + " famil" + (sig == 1 ? "y" : "ies") + " changed significantly";
  }
  size_t judged = 0;
  for (const FamilyChange& f : r.families) judged += !f.insufficient;
  for (const StepTimeChange& s : r.step_time) judged += !s.insufficient;
  if (out.empty() && judged == 0)
    out = "insufficient evidence: no family or step time had " + std::to_string(kMinCompareSteps) +
          " steps of equal workload (tokens, requests, context) in both runs";
  else if (out.empty())
    out = "no significant change at equal workload (at least " + std::to_string(int(std::lround(100 * o.min_change))) +
          "%) in " + std::to_string(judged) + " family costs and step times judged (" +
          std::to_string(r.families.size() + r.step_time.size() - judged) + " with too few steps of equal workload)";
  return out;
}

}  // namespace

CompareResult CompareRuns(const InstanceTable& target, const InstanceTable& baseline, const CompareOptions& o) {
  const Collected t = Collect(target), b = Collect(baseline);
  CompareResult r;
  std::map<StepKeyT, double> step_delta;
  std::vector<Shift> step_shifts, fam_shifts;
  std::vector<double> ps;
  for (const auto& [k, base] : b.step) {
    auto it = t.step.find(k);
    if (it == t.step.end()) continue;
    const Shift s = Measure(it->second, base, o, Salt(k.second));
    r.step_time.push_back({View(k.first), k.second, s.n, s.nb, s.ratio, s.lo, s.hi, s.delta, false, !s.ok});
    step_shifts.push_back(s);
    step_delta[k] = s.delta;
    if (s.ok) ps.push_back(s.p);
  }
  for (const auto& [k, bdev] : b.device) {
    auto it = t.device.find(k);
    if (it == t.device.end()) continue;
    double dev = 0;
    for (const Point& q : bdev) dev += q.c;
    const bool device = dev > 0;
    const Shift s = Measure(device ? it->second : t.host.at(k), device ? bdev : b.host.at(k), o,
                            Salt(std::get<2>(k) + std::get<1>(k)));
    FamilyChange f{View(std::get<0>(k)), std::get<1>(k), std::get<2>(k), device ? "device" : "host", s.n, s.nb,
                   s.outside, s.ratio, s.lo, s.hi, s.delta, 0, false, !s.ok};
    const double sd = step_delta[{std::get<0>(k), std::get<1>(k)}];
    if (std::fabs(sd) > 0) f.share_of_step_change = s.delta / sd;
    r.families.push_back(std::move(f));
    fam_shifts.push_back(s);
    if (s.ok) ps.push_back(s.p);
  }
  const double cut = BhCut(ps, o.false_discovery);
  for (size_t i = 0; i < r.step_time.size(); ++i) r.step_time[i].significant = Significant(step_shifts[i], o, cut);
  std::map<StepKeyT, double> step_mean;  // the baseline's mean step time per view and phase
  for (const auto& [k, pts] : b.step) {
    double sum = 0;
    for (const Point& q : pts) sum += q.c;
    step_mean[k] = pts.empty() ? 0 : sum / double(pts.size());
  }
  for (size_t i = 0; i < r.families.size(); ++i) {
    FamilyChange& f = r.families[i];
    f.significant = Significant(fam_shifts[i], o, cut) &&
                    std::fabs(f.delta_ns_per_step) >= o.min_step_share * step_mean[{int(f.view), f.phase}];
  }
  std::stable_sort(r.families.begin(), r.families.end(), [](const FamilyChange& x, const FamilyChange& y) {
    if (x.significant != y.significant) return x.significant;
    return std::fabs(x.delta_ns_per_step) > std::fabs(y.delta_ns_per_step);
  });
  std::set_difference(t.kernels.begin(), t.kernels.end(), b.kernels.begin(), b.kernels.end(),
                      std::back_inserter(r.kernels_appeared));
  std::set_difference(b.kernels.begin(), b.kernels.end(), t.kernels.begin(), t.kernels.end(),
                      std::back_inserter(r.kernels_disappeared));
  r.sentence = Sentence(r, o, t.parent_of);
  return r;
}

}  // namespace truffld::diagnose
