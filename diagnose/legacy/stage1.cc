// Stage I fitting: groups instances per (view, family) [and step], standardises them, fits a
// BIC-selected mixture (or falls back to robust z-scores) and writes rho(x) for every instance.
#include "legacy/stage1.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "read/graph_replay.h"
#include "truffld/parallel_for.h"
#include "legacy/features.h"
#include "truffld/parallel_for.h"

namespace truffld::diagnose {
namespace {

enum Method : uint8_t { kGmm = 0, kGmmPooled, kGmmReference, kRobustZ };
const std::vector<std::string>& MethodNames() {
  static const std::vector<std::string> names = {"gmm", "gmm-pooled", "gmm-reference", "robust-z"};
  return names;
}

// Outcome of one group's work; merged into StageOneResult after the parallel loop.
struct GroupOutcome {
  FamilyModelInfo info;
  bool fitted = false, robust_z = false, failed = false, keep_info = false;
  bool missing_in_reference = false;  // (failed) the family is absent from the reference run
  std::string note;
};

// p-value gate: 1 when plausible, shrinking linearly below alpha.
double Gate(double p, double alpha) { return alpha > 0 ? std::min(1.0, p / alpha) : 1.0; }

// Two-sided normal tail of the largest |z - center| over `cols`, Bonferroni-corrected over
// their count. `center` (one value per column) is null for 0.
double MaxZTail(const Eigen::MatrixXd& x, Eigen::Index row, const std::vector<int>& cols,
                const Eigen::RowVectorXd* center = nullptr) {
  if (cols.empty()) return 1.0;
  double zmax = 0;
  for (int c : cols) zmax = std::max(zmax, std::abs(x(row, c) - (center ? (*center)(c) : 0.0)));
  return std::min(1.0, static_cast<double>(cols.size()) * std::erfc(zmax / std::sqrt(2.0)));
}

Eigen::MatrixXd Columns(const Eigen::MatrixXd& x, const std::vector<int>& cols) {
  Eigen::MatrixXd out(x.rows(), static_cast<Eigen::Index>(cols.size()));
  for (size_t j = 0; j < cols.size(); ++j) out.col(static_cast<Eigen::Index>(j)) = x.col(cols[j]);
  return out;
}

// Columns that vary in the fitting data (`active`) and those constant in it (`inactive`); a
// column identical to an earlier active one (self time == duration for a leaf operator) is
// dropped, since a diagonal model would count it twice and BIC would then split clusters to
// mimic the correlation.
void SplitColumns(const Eigen::MatrixXd& xf, std::vector<int>* active, std::vector<int>* inactive) {
  for (int c = 0; c < kNumFeatures; ++c) {
    bool varies = xf.rows() > 0 && xf.col(c).maxCoeff() - xf.col(c).minCoeff() > 1e-9;
    bool duplicate = false;
    for (int a : *active) duplicate = duplicate || (xf.col(c) - xf.col(a)).cwiseAbs().maxCoeff() < 1e-9;
    if (duplicate) continue;
    (varies ? active : inactive)->push_back(c);
  }
}

// The BIC-selected mixture over `fa`; with `trim`, refitted without the least likely share
// o.trim of the rows (pooled mode, where faulty instances are part of the fitting data).
Result<BicSelection> FitMixture(const Eigen::MatrixXd& fa, bool trim, const StageOneOptions& o) {
  GmmOptions gmm = o.gmm;
  if (o.auto_covariance) {  // full covariance only with enough samples per parameter
    const Eigen::Index da = fa.cols();
    gmm.covariance = fa.rows() >= 10 * da * (da + 1) / 2 ? CovarianceType::kFull : CovarianceType::kDiagonal;
  }
  auto sel = FitGmmBic(fa, o.k_min, o.k_max, gmm);
  if (!sel.ok() || !trim || o.trim <= 0 || fa.rows() < 2 * o.min_instances) return sel;
  Eigen::VectorXd lp;
  sel->model.Estimate(fa, &lp, nullptr);
  std::vector<double> sorted(lp.data(), lp.data() + lp.size());
  size_t cut_at = static_cast<size_t>(o.trim * static_cast<double>(sorted.size()));
  std::nth_element(sorted.begin(), sorted.begin() + cut_at, sorted.end());
  double cut = sorted[cut_at];
  std::vector<int> keep;
  for (Eigen::Index i = 0; i < lp.size(); ++i) if (lp(i) >= cut) keep.push_back(static_cast<int>(i));
  Eigen::MatrixXd kept(static_cast<Eigen::Index>(keep.size()), fa.cols());
  for (size_t i = 0; i < keep.size(); ++i) kept.row(static_cast<Eigen::Index>(i)) = fa.row(keep[i]);
  auto refit = FitGmmBic(kept, o.k_min, o.k_max, gmm);
  return refit.ok() ? std::move(refit) : std::move(sel);
}

// rho of row i of xt under model m: `resp`/`m2` are its responsibilities and squared
// Mahalanobis distances per component over the active columns, `central` the central
// components, `constant` the fitting data's values of the inactive (constant) columns.
double RhoOf(const Eigen::MatrixXd& xt, Eigen::Index i, const Eigen::MatrixXd& resp, const Eigen::MatrixXd& m2,
             const std::vector<int>& central, int df, const std::vector<int>& inactive,
             const Eigen::RowVectorXd& constant, const StageOneOptions& o) {
  if (o.rho == RhoRule::kCalibrated) {
    // Membership of the central set times how plausible the point is under the nearest
    // central component; both are probabilities, so their product can reach 1e-6 and below.
    double mass = 0, tail = 0;
    for (int k : central) {
      mass += resp(i, k);
      tail = std::max(tail, Chi2Survival(m2(i, k), df));
    }
    return std::clamp(mass * tail * MaxZTail(xt, i, inactive, &constant), 0.0, 1.0);
  }
  double r = 0;
  for (int k : central) {
    double g = resp(i, k);
    if (o.rho == RhoRule::kGated) g *= Gate(Chi2Survival(m2(i, k), df), o.tail_alpha);
    r += g;
  }
  // Columns constant in the fitting data: deviation from that constant, in scale units.
  if (o.rho == RhoRule::kGated) r *= Gate(MaxZTail(xt, i, inactive, &constant), o.tail_alpha);
  return std::clamp(r, 0.0, 1.0);
}

// Robust z-scores for every row of xt (the fallback when no mixture can be fitted).
void RobustZ(const Eigen::MatrixXd& xt, const StageOneOptions& o, std::vector<double>* rho_out, GroupOutcome* out) {
  std::vector<int> all(kNumFeatures);
  for (int c = 0; c < kNumFeatures; ++c) all[c] = c;
  for (Eigen::Index i = 0; i < xt.rows(); ++i) {
    const double tail = MaxZTail(xt, i, all);
    (*rho_out)[static_cast<size_t>(i)] = o.rho == RhoRule::kCalibrated ? tail : Gate(tail, o.tail_alpha);
  }
  out->robust_z = true;  // (ScoreItem names the method)
}

// Scores target rows `xt` against a model fitted on `xf` (both standardised). Writes rho into
// rho_out (one per row of xt). Returns false when it had to fall back to robust z-scores.
bool ScoreGroup(const Eigen::MatrixXd& xf, const Eigen::MatrixXd& xt, bool trim,
                const StageOneOptions& o, std::vector<double>* rho_out, GroupOutcome* out) {
  std::vector<int> active, inactive;
  SplitColumns(xf, &active, &inactive);
  rho_out->assign(static_cast<size_t>(xt.rows()), 1.0);
  if (xf.rows() < std::max(2, o.min_instances) || active.empty()) {
    RobustZ(xt, o, rho_out, out);
    return false;
  }
  Eigen::MatrixXd fa = Columns(xf, active);
  auto sel = FitMixture(fa, trim, o);
  if (!sel.ok()) {
    out->failed = true;
    out->note = sel.status().message();
    RobustZ(xt, o, rho_out, out);
    return false;
  }
  const GmmModel& m = sel->model;
  out->fitted = true;
  out->info.k = m.k();
  out->info.bics = sel->bics;
  out->info.fit_samples = static_cast<int>(fa.rows());
  out->info.covariance = CovarianceTypeName(m.covariance_type());
  out->info.dims = static_cast<int>(active.size());
  std::vector<int> central = CentralComponents(m, o.central_mass, o.top1);
  Eigen::MatrixXd ta = Columns(xt, active), resp, m2;
  m.Estimate(ta, nullptr, &resp, &m2);
  const Eigen::RowVectorXd constant = xf.row(0);
  for (Eigen::Index i = 0; i < xt.rows(); ++i)
    (*rho_out)[static_cast<size_t>(i)] =
        RhoOf(xt, i, resp, m2, central, static_cast<int>(active.size()), inactive, constant, o);
  return true;
}

// Deterministic stride subsample of at most `cap` rows.
std::vector<uint32_t> Subsample(const std::vector<uint32_t>& rows, size_t cap) {
  if (rows.size() <= cap || cap == 0) return rows;
  std::vector<uint32_t> out;
  out.reserve(cap);
  double stride = static_cast<double>(rows.size()) / static_cast<double>(cap);
  for (size_t i = 0; i < cap; ++i) out.push_back(rows[static_cast<size_t>(i * stride)]);
  return out;
}

// One population of instances modelled together: a family in one view, optionally split by
// rank (hosts differ) and by regime (CUDA-graph replay steps differ from eager ones).
struct GroupKey {
  bool horizontal = false;
  std::string family;
  int64_t rank = -1;         // -1: all ranks pooled
  std::string regime;        // "": all regimes pooled
  bool operator<(const GroupKey& o) const {
    return std::tie(horizontal, family, rank, regime) < std::tie(o.horizontal, o.family, o.rank, o.regime);
  }
};

std::map<GroupKey, std::vector<uint32_t>> GroupByFamily(const InstanceTable& t, const StageOneOptions& o) {
  std::map<GroupKey, std::vector<uint32_t>> g;
  for (uint32_t i = 0; i < t.size(); ++i) {
    // The device idle time is no operator's feature vector: only the peer detector judges it,
    // whose replay tells whether it was a cost of its own (read/outside_time.h).
    if (i < t.detail.size() && (t.detail[i].flags & kDetailIdle)) continue;
    const StepInfo& st = t.steps[t.step[i]];
    const bool horizontal = st.view == View::kHorizontal;
    const bool by_regime = o.split_regime || (horizontal && o.split_regime_horizontal);
    std::string regime = by_regime ? RegimeName(st.regime) : "";
    // A replayed graph node group and a traced host range of the same family measure different
    // things (no host time, no API calls, latency from the graph launch): never one population.
    if (o.split_graph_replay && IsGraphReplayInstance(t, i)) regime += "/replay";
    GroupKey k{horizontal, t.strings.Get(t.family[i]),
               o.split_rank ? st.rank.value_or(-1) : -1, std::move(regime)};
    g[k].push_back(i);
  }
  return g;
}

}  // namespace

bool IsGraphReplayInstance(const InstanceTable& t, uint32_t i) {
  // Rebuilt from a replay (tree_reader's EmitGraphGroup): no runtime/driver call of its own in
  // the subtree, and the launching cudaGraphLaunch/cuGraphLaunch tallied as its only API name.
  if (i >= t.api_calls.size() || t.features[i][kRuntimeCount] + t.features[i][kDriverCount] != 0) return false;
  for (const NameCount& a : t.api_calls[i]) {
    if (detail::IsGraphLaunchName(t.strings.Get(a.name))) return true;
  }
  return false;
}

const char* ScoringModeName(ScoringMode m) noexcept {
  switch (m) {
    case ScoringMode::kWithinStep: return "within-step";
    case ScoringMode::kPooled: return "pooled";
    case ScoringMode::kReference: return "reference";
    case ScoringMode::kPeer: return "peer";
  }
  return "unknown";
}

namespace {

// One work item: a (view, family) group, or its rows in one step (within-step mode).
struct Item {
  const GroupKey* key;
  const std::vector<uint32_t>* family_rows;
  std::vector<uint32_t> rows;
};

std::vector<Item> MakeItems(const InstanceTable& t, const std::map<GroupKey, std::vector<uint32_t>>& groups,
                            const StageOneOptions& o) {
  std::vector<Item> items;
  for (auto& [key, rows] : groups) {
    if (o.mode != ScoringMode::kWithinStep) { items.push_back({&key, &rows, rows}); continue; }
    size_t b = 0;
    while (b < rows.size()) {  // rows are in step order: split into runs of one step
      size_t e = b;
      while (e < rows.size() && t.step[rows[e]] == t.step[rows[b]]) ++e;
      items.push_back({&key, &rows, std::vector<uint32_t>(rows.begin() + b, rows.begin() + e)});
      b = e;
    }
  }
  return items;
}

// Fits and scores one item; writes its rows' rho and method.
void ScoreItem(const Item& it, const InstanceTable& t, const InstanceTable* reference,
               const std::map<GroupKey, std::vector<uint32_t>>& ref_groups, const StageOneOptions& o,
               GroupOutcome* out, std::vector<double>* rho_all, std::vector<uint8_t>* method) {
  out->info.family = it.key->family;
  out->info.view = it.key->horizontal ? "horizontal" : "vertical";
  const InstanceTable* fit_table = &t;
  std::vector<uint32_t> fit_rows;
  uint8_t m = kGmmPooled;
  FamilyScaler scaler;
  if (o.mode == ScoringMode::kReference) {
    auto ref = ref_groups.find(*it.key);
    if (ref != ref_groups.end()) {
      fit_table = reference;
      fit_rows = Subsample(ref->second, o.max_fit_samples);
      m = kGmmReference;
    } else {
      out->note = out->info.view + " family '" + it.key->family +
                  "' is absent from the reference run: robust z-scores against this run";
      fit_rows = Subsample(it.rows, o.max_fit_samples);
      out->failed = out->missing_in_reference = true;
    }
    scaler = FitScaler(*fit_table, fit_rows, o.min_scale);
    out->keep_info = true;
  } else if (o.mode == ScoringMode::kPooled) {
    fit_rows = Subsample(it.rows, o.max_fit_samples);
    scaler = FitScaler(t, fit_rows, o.min_scale);
    out->keep_info = true;
  } else {
    fit_rows = it.rows;
    scaler = FitScaler(t, Subsample(*it.family_rows, o.max_fit_samples), o.min_scale);
    m = kGmm;
  }
  Eigen::MatrixXd xf = TransformRows(*fit_table, fit_rows, scaler);
  Eigen::MatrixXd xt = fit_table == &t && fit_rows.size() == it.rows.size() ? xf : TransformRows(t, it.rows, scaler);
  if (o.mode == ScoringMode::kReference && m != kGmmReference) xf.resize(0, kNumFeatures);
  std::vector<double> rho;
  if (!ScoreGroup(xf, xt, o.mode == ScoringMode::kPooled, o, &rho, out)) m = kRobustZ;
  out->info.method = MethodNames()[m];
  for (size_t i = 0; i < it.rows.size(); ++i) {
    (*rho_all)[it.rows[i]] = rho[i];
    (*method)[it.rows[i]] = m;
  }
}

}  // namespace

Result<StageOneResult> RunStageOne(const InstanceTable& t, const InstanceTable* reference,
                                   const StageOneOptions& o) {
  if (o.mode == ScoringMode::kReference && reference == nullptr) {
    return InvalidArgument("reference mode needs a reference run (--reference DIR)");
  }
  if (o.mode == ScoringMode::kPeer) return InvalidArgument("peer mode runs through RunPeerStage");
  if (!(o.q > 0 && o.q <= 1)) return InvalidArgument("--q must be in (0, 1]");
  if (o.k_min < 1 || o.k_max < o.k_min) return InvalidArgument("--k-max must be >= 1");
  StageOneResult r;
  r.rho.assign(t.size(), 1.0);
  std::vector<uint8_t> method(t.size(), kGmm);
  auto groups = GroupByFamily(t, o);
  std::map<GroupKey, std::vector<uint32_t>> ref_groups;
  if (o.mode == ScoringMode::kReference) ref_groups = GroupByFamily(*reference, o);
  const std::vector<Item> items = MakeItems(t, groups, o);
  std::vector<GroupOutcome> outcomes(items.size());
  ParallelFor(items.size(), o.threads, [&](size_t idx) {
    ScoreItem(items[idx], t, reference, ref_groups, o, &outcomes[idx], &r.rho, &method);
  });
  for (auto& out : outcomes) {
    r.gmm_fits += out.fitted;
    r.robust_z_groups += out.robust_z;
    if (out.failed) {
      ++(out.missing_in_reference ? r.missing_in_reference : r.fit_failures);
      if (r.notes.size() < 50) r.notes.push_back(out.note);
    }
    if (out.keep_info) r.models.push_back(std::move(out.info));
  }
  r.steps = SelectCandidates(t, r.rho, method, MethodNames(), o);
  return r;
}

}  // namespace truffld::diagnose
