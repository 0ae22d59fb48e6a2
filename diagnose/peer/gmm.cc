// EM for Gaussian mixtures: E-step in log space, M-step with the variance floor, k-means++
// starts, BIC grid. Formulas mirror scikit-learn's GaussianMixture so results agree to rounding.
#include "peer/gmm.h"

#include "peer/gmm_1d.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <random>

namespace truffld::diagnose {
namespace {

constexpr double kLog2Pi = 1.8378770664093453;

// M-step from log-responsibilities (n x k).
Result<GmmModel> MStep(const Eigen::MatrixXd& x, const Eigen::MatrixXd& resp, CovarianceType type,
                       double reg) {
  const int k = static_cast<int>(resp.cols());
  Eigen::VectorXd nk = resp.colwise().sum().transpose().array() +
                       10 * std::numeric_limits<double>::epsilon();
  Eigen::MatrixXd means = (resp.transpose() * x).array().colwise() / nk.array();
  std::vector<Eigen::MatrixXd> covs(k);
  for (int j = 0; j < k; ++j) {
    if (type == CovarianceType::kFull) {
      Eigen::MatrixXd diff = x.rowwise() - means.row(j);
      Eigen::MatrixXd weighted = diff.array().colwise() * resp.col(j).array();
      covs[j] = (weighted.transpose() * diff) / nk(j);
      covs[j].diagonal().array() += reg;
    } else {
      Eigen::VectorXd avg_x2 = (resp.col(j).transpose() * x.array().square().matrix()).transpose() / nk(j);
      Eigen::VectorXd mu = means.row(j).transpose();
      Eigen::VectorXd avg_x_mu = mu.array() * ((resp.col(j).transpose() * x).transpose().array() / nk(j));
      Eigen::VectorXd var = avg_x2.array() - 2 * avg_x_mu.array() + mu.array().square() + reg;
      covs[j] = var.asDiagonal();
    }
  }
  Eigen::VectorXd w = nk / nk.sum();
  return GmmModel::FromParameters(type, std::move(w), std::move(means), std::move(covs));
}

// Deterministic k-means++ then Lloyd; returns hard responsibilities (n x k).
Eigen::MatrixXd KMeansResp(const Eigen::MatrixXd& x, int k, int iters, uint64_t seed) {
  const int n = static_cast<int>(x.rows());
  if (x.cols() == 1) {  // Stage I's case: the same draws and updates without Eigen rows
    const std::vector<int> label = detail::KMeansLabels1D(x, k, iters, seed);
    Eigen::MatrixXd resp = Eigen::MatrixXd::Zero(n, k);
    for (int i = 0; i < n; ++i) resp(i, label[size_t(i)]) = 1.0;
    return resp;
  }
  std::mt19937_64 rng(seed);
  auto uniform = [&rng]() { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  Eigen::MatrixXd centers(k, x.cols());
  centers.row(0) = x.row(static_cast<int>(uniform() * n) % n);
  Eigen::VectorXd d2 = (x.rowwise() - centers.row(0)).rowwise().squaredNorm();
  for (int c = 1; c < k; ++c) {
    double total = d2.sum();
    int pick = 0;
    if (total > 0) {
      double r = uniform() * total, acc = 0;
      for (pick = 0; pick < n - 1; ++pick) {
        acc += d2(pick);
        if (acc >= r) break;
      }
    } else {
      pick = static_cast<int>(uniform() * n) % n;
    }
    centers.row(c) = x.row(pick);
    d2 = d2.cwiseMin((x.rowwise() - centers.row(c)).rowwise().squaredNorm());
  }
  std::vector<int> label(n, 0);
  for (int it = 0; it <= iters; ++it) {
    bool changed = false;
    for (int i = 0; i < n; ++i) {
      int best = 0;
      double bd = std::numeric_limits<double>::infinity();
      for (int c = 0; c < k; ++c) {
        double dd = (x.row(i) - centers.row(c)).squaredNorm();
        if (dd < bd) { bd = dd; best = c; }
      }
      if (label[i] != best || it == 0) changed = changed || label[i] != best;
      label[i] = best;
    }
    if (it == iters || (!changed && it > 0)) break;
    Eigen::MatrixXd sum = Eigen::MatrixXd::Zero(k, x.cols());
    std::vector<int> cnt(k, 0);
    for (int i = 0; i < n; ++i) { sum.row(label[i]) += x.row(i); ++cnt[label[i]]; }
    for (int c = 0; c < k; ++c) if (cnt[c] > 0) centers.row(c) = sum.row(c) / cnt[c];
  }
  Eigen::MatrixXd resp = Eigen::MatrixXd::Zero(n, k);
  for (int i = 0; i < n; ++i) resp(i, label[i]) = 1.0;
  return resp;
}

}  // namespace

const char* CovarianceTypeName(CovarianceType c) noexcept {
  return c == CovarianceType::kFull ? "full" : "diag";
}

Result<GmmModel> GmmModel::FromParameters(CovarianceType type, Eigen::VectorXd weights,
                                          Eigen::MatrixXd means,
                                          std::vector<Eigen::MatrixXd> covariances) {
  if (weights.size() == 0 || means.rows() != weights.size() ||
      static_cast<Eigen::Index>(covariances.size()) != weights.size()) {
    return InvalidArgument("GMM parameters: weights, means and covariances disagree on K");
  }
  GmmModel m;
  m.type_ = type;
  m.weights_ = std::move(weights);
  m.means_ = std::move(means);
  m.covs_ = std::move(covariances);
  TRUFFLD_RETURN_IF_ERROR(m.Prepare());
  return m;
}

Status GmmModel::Prepare() {
  const int d = dim();
  chol_.assign(k(), Eigen::MatrixXd());
  log_det_.assign(k(), 0.0);
  for (int j = 0; j < k(); ++j) {
    if (covs_[j].rows() != d || covs_[j].cols() != d) {
      return InvalidArgument("GMM covariance " + std::to_string(j) + " is not d x d");
    }
    if (type_ == CovarianceType::kDiagonal) {
      Eigen::VectorXd var = covs_[j].diagonal();
      if ((var.array() <= 0).any() || !var.allFinite()) {
        return InvalidArgument("GMM component " + std::to_string(j) +
                               " has a non-positive variance; raise reg_covar");
      }
      log_det_[j] = var.array().log().sum();
    } else {
      Eigen::LLT<Eigen::MatrixXd> llt(covs_[j]);
      if (llt.info() != Eigen::Success || !covs_[j].allFinite()) {
        return InvalidArgument("GMM component " + std::to_string(j) +
                               " covariance is not positive definite; raise reg_covar");
      }
      chol_[j] = llt.matrixL();
      log_det_[j] = 2 * chol_[j].diagonal().array().log().sum();
    }
  }
  return Status::Ok();
}

int GmmModel::NumParameters() const {
  const int d = dim(), kk = k();
  int cov = type_ == CovarianceType::kFull ? kk * d * (d + 1) / 2 : kk * d;
  return cov + kk * d + kk - 1;
}

void GmmModel::Estimate(const Eigen::MatrixXd& x, Eigen::VectorXd* log_prob, Eigen::MatrixXd* resp,
                        Eigen::MatrixXd* mahalanobis2) const {
  const Eigen::Index n = x.rows();
  const int d = dim();
  Eigen::MatrixXd wlp(n, k());
  if (mahalanobis2) mahalanobis2->resize(n, k());
  for (int j = 0; j < k(); ++j) {
    Eigen::VectorXd m2;
    if (type_ == CovarianceType::kDiagonal) {
      Eigen::RowVectorXd inv = covs_[j].diagonal().cwiseInverse().transpose();
      m2 = ((x.rowwise() - means_.row(j)).array().square().rowwise() * inv.array()).rowwise().sum();
    } else {
      Eigen::MatrixXd diff_t = (x.rowwise() - means_.row(j)).transpose();  // d x n
      chol_[j].triangularView<Eigen::Lower>().solveInPlace(diff_t);
      m2 = diff_t.colwise().squaredNorm().transpose();
    }
    if (mahalanobis2) mahalanobis2->col(j) = m2;
    wlp.col(j) = (-0.5 * (d * kLog2Pi + log_det_[j]) + std::log(weights_(j))) - 0.5 * m2.array();
  }
  Eigen::VectorXd mx = wlp.rowwise().maxCoeff();
  Eigen::VectorXd lse =
      mx.array() + (wlp.colwise() - mx).array().exp().rowwise().sum().log();
  if (log_prob) *log_prob = lse;
  if (resp) *resp = (wlp.colwise() - lse).array().exp();
}

double GmmModel::Bic(const Eigen::MatrixXd& x) const {
  Eigen::VectorXd lp;
  Estimate(x, &lp, nullptr);
  return -2.0 * lp.sum() + NumParameters() * std::log(static_cast<double>(x.rows()));
}

Result<GmmModel> FitGmmFrom(const Eigen::MatrixXd& x, const GmmModel& init, const GmmOptions& o) {
  if (x.rows() == 0) return InvalidArgument("GMM fit: no samples");
  if (init.dim() != x.cols()) return InvalidArgument("GMM fit: dimension mismatch");
  if (init.dim() == 1 && init.covariance_type() == CovarianceType::kDiagonal && !o.general_em)
    return detail::FitGmmFrom1D(x, init, o);
  GmmModel model = init;
  double lower = -std::numeric_limits<double>::infinity();
  model.converged = false;
  for (int it = 1; it <= o.max_iter; ++it) {
    double prev = lower;
    Eigen::VectorXd lp;
    Eigen::MatrixXd resp;
    model.Estimate(x, &lp, &resp);
    auto next = MStep(x, resp, model.covariance_type(), o.reg_covar);
    if (!next.ok()) return next.status();
    lower = lp.mean();
    model = std::move(next).value();
    model.iterations = it;
    model.lower_bound = lower;
    if (std::abs(lower - prev) < o.tol) { model.converged = true; break; }
  }
  return model;
}

Result<GmmModel> FitGmm(const Eigen::MatrixXd& x, const GmmOptions& o) {
  if (x.rows() < o.k) return InvalidArgument("GMM fit: fewer samples than components");
  std::optional<GmmModel> best;
  Status last;
  Eigen::MatrixXd last_resp;
  for (int r = 0; r < std::max(1, o.n_init); ++r) {
    Eigen::MatrixXd resp = KMeansResp(x, o.k, o.kmeans_iter, o.seed + 7919ull * r);
    // A start that seeds the same partition as the one before runs the same EM to the same fit,
    // which cannot beat it (nor fail differently).
    if (r > 0 && resp == last_resp) continue;
    last_resp = resp;
    auto init = MStep(x, resp, o.covariance, o.reg_covar);
    if (!init.ok()) { last = init.status(); continue; }
    auto fit = FitGmmFrom(x, *init, o);
    if (!fit.ok()) { last = fit.status(); continue; }
    if (!best || fit->lower_bound > best->lower_bound) best = std::move(fit).value();
    if (o.k == 1) break;  // one component: every start gives the same fit
  }
  if (!best) return last.ok() ? Internal("GMM fit produced no model") : last;
  return std::move(*best);
}

Result<BicSelection> FitGmmBic(const Eigen::MatrixXd& x, int k_min, int k_max, const GmmOptions& o) {
  BicSelection sel;
  double best_bic = std::numeric_limits<double>::infinity();
  Status last;
  for (int kk = std::max(1, k_min); kk <= k_max; ++kk) {
    if (kk > 1 && x.rows() < static_cast<Eigen::Index>(std::max(2, o.min_samples_per_component)) * kk) break;
    GmmOptions ok = o;
    ok.k = kk;
    auto fit = FitGmm(x, ok);
    if (!fit.ok()) { last = fit.status(); continue; }
    double bic = fit->Bic(x);
    sel.ks.push_back(kk);
    sel.bics.push_back(bic);
    if (bic < best_bic) { best_bic = bic; sel.model = std::move(fit).value(); }
  }
  if (sel.ks.empty()) return last.ok() ? InvalidArgument("GMM BIC: too few samples") : last;
  return sel;
}

std::vector<int> CentralComponents(const GmmModel& m, double central_mass, bool top1) {
  std::vector<int> order(m.k());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return m.weights()(a) > m.weights()(b); });
  std::vector<int> out;
  double mass = 0;
  for (int j : order) {
    out.push_back(j);
    mass += m.weights()(j);
    if (top1 || mass >= central_mass - 1e-12) break;
  }
  return out;
}

}  // namespace truffld::diagnose
