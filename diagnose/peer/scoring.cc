// Residual mixtures and source combination (see scoring.h).
#include "peer/scoring.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <tuple>

#include "truffld/parallel_for.h"
#include "read/hash_mix.h"
#include "peer/robust_stats.h"
#include "peer/decision.h"
#include "peer/slow_regimes.h"

namespace truffld::diagnose {
namespace {

// One residual population. Expectations of different kinds err differently (a fit over steps of
// other sizes is looser than steps of the same shape), and replayed graphs differ from eager
// steps, so each gets its own null model.
struct GroupKey {
  bool horizontal;
  uint32_t family;
  uint64_t position;  // layer peers only: TestRow::slot (0 for the other sources)
  int metric, source;
  bool family_row;
  bool fitted;   // similar steps: a log-log fit rather than steps of the same shape
  bool graph;    // the unit replays CUDA graphs
  auto Tie() const { return std::tie(horizontal, family, position, metric, source, family_row, fitted, graph); }
  bool operator<(const GroupKey& o) const { return Tie() < o.Tie(); }
  bool operator==(const GroupKey& o) const { return Tie() == o.Tie(); }
};

struct GroupKeyHash {
  size_t operator()(const GroupKey& k) const {
    using detail::Mix;
    const uint64_t flags = (k.horizontal ? 1u : 0u) | (k.family_row ? 2u : 0u) | (k.fitted ? 4u : 0u) |
                           (k.graph ? 8u : 0u) | static_cast<uint64_t>(k.metric) << 8 |
                           static_cast<uint64_t>(k.source) << 16;
    return static_cast<size_t>(Mix(Mix(Mix(flags, k.family), k.position), 0x5C));
  }
};

// One residual population: its rows in row order with their residuals, and for the
// similar-steps source the tensor-parallel peers' own residual against similar steps (NaN for a
// row without TP peers). Gathered in one pass over the rows, so that fitting and scoring a
// population reads no row again.
struct ResidualGroup {
  GroupKey key;
  std::vector<uint32_t> rows;
  std::vector<double> r, group_r;
};

// The residual populations in key order (the order of the models in stats.json). Hashed, then
// only the distinct keys sorted.
std::vector<ResidualGroup> GroupResiduals(const InstanceTable& t, const std::vector<TestRow>& rows, double floor_ns) {
  std::unordered_map<GroupKey, uint32_t, GroupKeyHash> index;
  std::vector<ResidualGroup> groups;
  for (uint32_t r = 0; r < rows.size(); ++r) {
    const TestRow& row = rows[r];
    if (row.warmup) continue;  // first-use costs would widen the null of every later step
    const StepInfo& st = t.steps[row.unit];
    for (int s = 0; s < kPeerSourceCount; ++s) {
      if (!row.Has(static_cast<PeerSource>(s))) continue;
      // Layer peers are modelled per slot (position in a layer, and which layer): in a
      // heterogeneous model (training graphs, mixtures of experts) one slot may always differ
      // from its "siblings", which is structure, not an anomaly: a residual every step repeats.
      const uint64_t position = s == static_cast<int>(PeerSource::kLayer) ? row.slot : 0;
      GroupKey k{st.view == View::kHorizontal, row.family, position, static_cast<int>(row.metric), s,
                 row.instance == kFamilyRow,
                 s == static_cast<int>(PeerSource::kTime) && !row.time_exact, st.regime == Regime::kGraph};
      const auto [it, fresh] = index.try_emplace(k, static_cast<uint32_t>(groups.size()));
      if (fresh) groups.push_back({k, {}, {}, {}});
      ResidualGroup& g = groups[it->second];
      g.rows.push_back(r);
      g.r.push_back(Residual(row, static_cast<PeerSource>(s), floor_ns));
      if (s != static_cast<int>(PeerSource::kTime)) continue;
      double group_r = std::numeric_limits<double>::quiet_NaN();
      if (row.Has(PeerSource::kTp)) {
        const double e_tp = row.expected[static_cast<int>(PeerSource::kTp)];
        const double e_tm = row.expected[static_cast<int>(PeerSource::kTime)];
        group_r = std::log((e_tp + floor_ns) / (std::max(0.0, e_tm) + floor_ns));
      }
      g.group_r.push_back(group_r);
    }
  }
  std::sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return groups;
}

// The components that describe normal behaviour for a one-sided (slowness) test: the heaviest;
// every component centred near it (its mean within max(half its own sigma, 0.05) of the
// heaviest's: the heavy tails of ordinary jitter); and every component holding at least
// `regime_weight` of the mass that is not faster than the heaviest (a common slower regime).
// Shifted components are left out: a slow one is what faults look like, and a fast one would make
// slow points look plausible through its width (with two tensor-parallel ranks, the healthy
// partner of a slowed rank forms exactly such a mirror of the slowed one).
std::vector<int> NullComponents(const GmmModel& m, double regime_weight) {
  int top = 0;
  for (int k = 1; k < m.k(); ++k) {
    if (m.weights()(k) > m.weights()(top)) top = k;
  }
  const double mu0 = m.means()(top, 0);
  std::vector<int> out = {top};
  for (int k = 0; k < m.k(); ++k) {
    if (k == top) continue;
    const double mu = m.means()(k, 0), sigma = std::sqrt(m.covariances()[static_cast<size_t>(k)](0, 0));
    const bool tail = m.weights()(k) >= 0.02 && std::abs(mu - mu0) <= std::max(0.5 * sigma, 0.05);
    const bool regime = m.weights()(k) >= regime_weight && mu >= mu0;
    if (tail || regime) out.push_back(k);
  }
  return out;
}

// The smallest residual sigma a fitted similar-steps expectation allows (ScoringOptions).
double FittedFloor(const TestRow& row, const ScoringOptions& o) {
  if (std::isnan(row.fit_scatter)) return std::max(o.min_scale, o.fitted_min_scale);
  return std::clamp(o.fitted_scatter_factor * static_cast<double>(row.fit_scatter), o.min_scale,
                    std::max(o.min_scale, o.fitted_min_scale));
}

// Central components of a fitted residual model: (mean, sigma) pairs.
struct Fitted {
  std::vector<std::pair<double, double>> central;  // (mean, sigma) of the null components
  std::vector<double> weight;                      // their weights, summing to 1
  double guard_mu = 0, guard_sigma = 0;            // median and 1.4826 MAD of the group
  ResidualModel info;
};

// Fits a group's residuals. Besides the mixture, a single robust Gaussian (median, 1.4826 MAD;
// faults are a minority, so they barely move it) guards the far tail: BIC happily splits a broad
// flat-topped distribution (host jitter) into narrow components whose Gaussian tails are far
// thinner than the data's, and a p-value is only as good as its tail.
Fitted FitGroup(const std::vector<double>& r, const ScoringOptions& o) {
  Fitted f;
  std::vector<double> sample;
  const size_t cap = std::max<size_t>(o.max_fit_samples, 1);
  const double stride = r.size() > cap ? static_cast<double>(r.size()) / static_cast<double>(cap) : 1.0;
  for (double i = 0; i < static_cast<double>(r.size()) && sample.size() < cap; i += stride) {
    sample.push_back(r[static_cast<size_t>(i)]);
  }
  f.info.samples = static_cast<int>(r.size());
  const double med = Median(sample);
  const double mad = 1.4826 * Mad(sample, med);
  f.guard_mu = med;
  f.guard_sigma = std::max(mad, o.min_scale);
  auto fallback = [&]() {
    f.central = {{med, std::max({mad, o.small_group_scale, o.min_scale})}};
    f.weight = {1.0};
    f.info.method = "median-mad";
    f.info.k = 1;
    f.info.central = 1;
    f.info.weights = {1.0};
    f.info.means = {med};
    f.info.sigmas = {f.central[0].second};
    return f;
  };
  if (static_cast<int>(sample.size()) < o.min_fit) return fallback();
  Eigen::MatrixXd x(static_cast<Eigen::Index>(sample.size()), 1);
  for (size_t i = 0; i < sample.size(); ++i) x(static_cast<Eigen::Index>(i), 0) = sample[i];
  GmmOptions g;
  g.covariance = CovarianceType::kDiagonal;
  g.reg_covar = 1e-5;
  g.n_init = 2;
  g.max_iter = 60;
  auto sel = FitGmmBic(x, 1, o.k_max, g);
  if (sel.ok() && o.trim > 0) {
    Eigen::VectorXd lp;
    sel->model.Estimate(x, &lp, nullptr);
    std::vector<double> sorted(lp.data(), lp.data() + lp.size());
    const size_t cut_at = static_cast<size_t>(o.trim * static_cast<double>(sorted.size()));
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(cut_at), sorted.end());
    Eigen::MatrixXd kept(x.rows(), 1);
    Eigen::Index n = 0;
    for (Eigen::Index i = 0; i < lp.size(); ++i) {
      if (lp(i) >= sorted[cut_at]) kept(n++, 0) = x(i, 0);
    }
    kept.conservativeResize(n, 1);
    auto refit = FitGmmBic(kept, 1, o.k_max, g);
    if (refit.ok()) sel = std::move(refit);
  }
  if (!sel.ok()) return fallback();
  const GmmModel& m = sel->model;
  std::vector<int> central = NullComponents(m, o.regime_weight);
  f.info.method = "gmm";
  f.info.k = m.k();
  f.info.central = static_cast<int>(central.size());
  std::vector<int> order = central;
  for (int k = 0; k < m.k(); ++k) {
    if (std::find(central.begin(), central.end(), k) == central.end()) order.push_back(k);
  }
  for (int k : order) {
    const double sigma = std::max(std::sqrt(m.covariances()[static_cast<size_t>(k)](0, 0)), o.min_scale);
    f.info.weights.push_back(m.weights()(k));
    f.info.means.push_back(m.means()(k, 0));
    f.info.sigmas.push_back(sigma);
  }
  double total = 0;
  for (int k : central) total += m.weights()(k);
  for (int k : central) {
    f.central.emplace_back(m.means()(k, 0),
                           std::max(std::sqrt(m.covariances()[static_cast<size_t>(k)](0, 0)), o.min_scale));
    f.weight.push_back(m.weights()(k) / total);
  }
  return f;
}

}  // namespace

double Residual(const TestRow& row, PeerSource s, double floor_ns) {
  const double e = row.expected[static_cast<int>(s)];
  return std::log((row.observed + floor_ns) / (std::max(0.0, e) + floor_ns));
}

bool Judged(const TestRow& row) { return !row.warmup && (row.Has(PeerSource::kTp) || row.Has(PeerSource::kTime)); }
bool Tested(const TestRow& row) {
  return Judged(row) || (!row.warmup && row.unit_judged && row.Has(PeerSource::kLayer));
}

namespace {

struct Combined {
  double p = 1;
  double expected = std::numeric_limits<double>::quiet_NaN();
  PeerSource basis = PeerSource::kTp;
};

// The larger of two expectations (the more conservative ratio), with its source.
void Conservative(const TestRow& row, PeerSource a, PeerSource b, Combined* c) {
  const double ea = row.expected[static_cast<int>(a)], eb = row.expected[static_cast<int>(b)];
  if (eb > ea) {
    c->expected = eb;
    c->basis = b;
  } else {
    c->expected = ea;
    c->basis = a;
  }
}

Combined Combine(const TestRow& row) {
  Combined c;
  if (row.warmup) return c;  // loading GPU code: reported, never judged (warmup.h)
  if (!Judged(row)) {
    // Within its step only: slower than the same work at the step's other layers. Used when the
    // unit is judged through its other rows (ScoreRows sets unit_judged), never alone.
    if (row.unit_judged && row.Has(PeerSource::kLayer)) {
      c.p = std::min(1.0, 4.0 * row.p[static_cast<int>(PeerSource::kLayer)]);
      c.expected = row.expected[static_cast<int>(PeerSource::kLayer)];
      c.basis = PeerSource::kLayer;
    }
    return c;
  }
  const double tp = row.p[static_cast<int>(PeerSource::kTp)], tm = row.p[static_cast<int>(PeerSource::kTime)];
  const bool has_tp = row.Has(PeerSource::kTp), has_tm = row.Has(PeerSource::kTime);
  // Uniform: every unit-level witness agrees.
  PeerSource w1 = has_tp ? PeerSource::kTp : PeerSource::kTime, w2 = has_tm ? PeerSource::kTime : PeerSource::kTp;
  c.p = std::max(has_tp ? tp : 1.0, has_tm ? tm : 1.0);
  if (!(has_tp && has_tm)) c.p = has_tp ? tp : tm;
  Conservative(row, w1, w2, &c);
  // Partial: slower than its layer siblings and than the more surprised witness.
  if (row.Has(PeerSource::kLayer)) {
    const PeerSource witness = has_tp && has_tm ? (tp <= tm ? PeerSource::kTp : PeerSource::kTime) : w1;
    const double q2 = std::max(row.p[static_cast<int>(PeerSource::kLayer)], row.p[static_cast<int>(witness)]);
    if (q2 < c.p) {
      c.p = q2;
      Conservative(row, PeerSource::kLayer, witness, &c);
    }
  }
  // Group-wide: the tensor-parallel peers were just as slow, and they and this rank are slower
  // than steps of the same shape (a slowdown of the whole group, or two ranks faulty at once).
  if (has_tp && has_tm && row.time_exact && row.context_known) {
    const double q3 = std::max(tm, row.p_group);
    if (q3 < c.p) {
      c.p = q3;
      c.expected = row.expected[static_cast<int>(PeerSource::kTime)];
      c.basis = PeerSource::kTime;
    }
  }
  // Layers alone (the row has no unit-level witness, e.g. a collective's transfer in a step of a
  // size never seen before): allowed when the unit is judged through its other rows.
  if (row.unit_judged && row.Has(PeerSource::kLayer) && row.p[static_cast<int>(PeerSource::kLayer)] < c.p) {
    c.p = row.p[static_cast<int>(PeerSource::kLayer)];
    c.expected = row.expected[static_cast<int>(PeerSource::kLayer)];
    c.basis = PeerSource::kLayer;
  }
  c.p = std::min(1.0, 4.0 * c.p);
  return c;
}

}  // namespace

double CombineSources(const TestRow& row) { return Combine(row).p; }

ScoringResult ScoreRows(const InstanceTable& t, std::vector<TestRow>& rows, const ScoringOptions& o) {
  const std::vector<ResidualGroup> groups = GroupResiduals(t, rows, o.floor_ns);
  std::vector<ResidualModel> models(groups.size());
  // Row p-values per source, and p_group, in dense columns while the populations are scored
  // (each row is written by one population per source), then copied into the rows in order.
  std::vector<double> p_of[kPeerSourceCount], p_group(rows.size());
  for (int s = 0; s < kPeerSourceCount; ++s) p_of[s].resize(rows.size());
  for (uint32_t r = 0; r < rows.size(); ++r) {
    for (int s = 0; s < kPeerSourceCount; ++s) p_of[s][r] = rows[r].p[static_cast<size_t>(s)];
    p_group[r] = rows[r].p_group;
  }
  std::vector<std::vector<RegimeRow>> regimes(groups.size());
  ParallelFor(groups.size(), o.threads, [&](size_t idx) {
    const GroupKey& k = groups[idx].key;
    const std::vector<uint32_t>& list = groups[idx].rows;
    const std::vector<double>& r = groups[idx].r;
    ScoringOptions go = o;
    // Per-slot layer residuals (one value per step and slot) get the robust Gaussian: there are
    // thousands of such small groups, and a slot has no regimes of its own to model.
    if (k.position != 0) go.min_fit = std::numeric_limits<int>::max();
    Fitted f = FitGroup(r, go);
    // Upper tail of the null mixture, guarded (see FitGroup), no sigma below `floor`.
    // A lone central component equal to the guard (a robust Gaussian whose MAD is above
    // small_group_scale, or any sigma once both are floored) has the guard's tail: one erfc.
    const bool guard_only = f.central.size() == 1 && f.weight[0] == 1.0 && f.central[0].first == f.guard_mu;
    auto tail = [&](double x, double floor) {
      if (guard_only && std::max(f.central[0].second, floor) == std::max(f.guard_sigma, floor))
        return std::clamp(UpperTailP((x - f.guard_mu) / std::max(f.guard_sigma, floor)), kSmallestRowP, 1.0);
      double p = 0;
      for (size_t c = 0; c < f.central.size(); ++c) {
        p += f.weight[c] * UpperTailP((x - f.central[c].first) / std::max(f.central[c].second, floor));
      }
      p = std::max(p, UpperTailP((x - f.guard_mu) / std::max(f.guard_sigma, floor)));
      return std::clamp(p, kSmallestRowP, 1.0);
    };
    std::vector<double>& p_source = p_of[k.source];
    for (size_t i = 0; i < list.size(); ++i) {
      const double floor = k.fitted ? FittedFloor(rows[list[i]], o) : 0.0;
      p_source[list[i]] = tail(r[i], floor);
      if (k.source == static_cast<int>(PeerSource::kTime) && !std::isnan(groups[idx].group_r[i]))
        p_group[list[i]] = tail(groups[idx].group_r[i], floor);
    }
    if (k.source == static_cast<int>(PeerSource::kTime) && !k.family_row)
      regimes[idx] = SlowerRegimeRows(f.info, o, list, r, rows);
    f.info.view = k.horizontal ? "horizontal" : "vertical";
    f.info.family = t.strings.Get(k.family);
    f.info.metric = MetricName(static_cast<Metric>(k.metric));
    f.info.source = PeerSourceName(static_cast<PeerSource>(k.source));
    f.info.level = k.family_row ? "family" : "instance";
    f.info.fitted = k.fitted;
    f.info.regime = k.graph ? "graph" : "eager";
    models[idx] = std::move(f.info);
  });
  // A unit with any unit-level witness is judged; then its rows with only layer peers count too.
  // Two passes over the rows: p-values in and units judged, then the combination.
  std::vector<uint8_t> judged_units(t.steps.size(), 0);
  for (uint32_t r = 0; r < rows.size(); ++r) {
    for (int s = 0; s < kPeerSourceCount; ++s) rows[r].p[static_cast<size_t>(s)] = p_of[s][r];
    rows[r].p_group = p_group[r];
    judged_units[rows[r].unit] |= Judged(rows[r]);
  }
  ScoringResult out;
  for (auto& g : regimes) out.regime_rows.insert(out.regime_rows.end(), g.begin(), g.end());
  for (auto& m : models) {
    (m.method == "gmm" ? out.fits : out.fallbacks) += 1;
    out.models.push_back(std::move(m));
  }
  for (auto& row : rows) {
    row.unit_judged = judged_units[row.unit] != 0;
    const Combined c = Combine(row);
    row.p_value = c.p;
    row.effective_expected = static_cast<float>(c.expected);
    row.basis = c.basis;
  }
  return out;
}

}  // namespace truffld::diagnose
