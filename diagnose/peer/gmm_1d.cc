// One-dimensional EM and k-means (see gmm_1d.h).
#include "peer/gmm_1d.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace truffld::diagnose::detail {
namespace {

constexpr double kLog2Pi = 1.8378770664093453;
// exp(x) for x below this is below half the smallest subnormal double (exp(-745.1332...)) and
// rounds to exactly 0 (and exp(-inf) is 0).
constexpr double kExpUnderflow = -746.0;

// The log-likelihood sums log(s) over points, each s in [1, k]: a running product of up to
// kLogBlock of them, folded early past kFoldAbove so it cannot overflow, takes one logarithm
// per block instead of one per point. The mean log-likelihood only decides convergence and the
// best start, and the product agrees with the sum of logarithms to rounding.
constexpr int kLogBlock = 128;
constexpr double kFoldAbove = 1e280;

void FoldProduct(double* prod, int* count, double* sum) {
  if (*prod != 1.0) *sum += std::log(*prod);
  *prod = 1;
  *count = 0;
}

// Per component: weight, mean, variance.
struct Params1D {
  std::vector<double> w, mu, var;
};

// One E-step over x with the running sums of the M-step; returns the mean log-likelihood.
double EStep(const double* x, Eigen::Index n, const Params1D& p, std::vector<double>* sr, std::vector<double>* sx,
             std::vector<double>* sx2) {
  const size_t k = p.w.size();
  std::vector<double> c(k), inv(k), e(k);
  for (size_t j = 0; j < k; ++j) {
    c[j] = -0.5 * (kLog2Pi + std::log(p.var[j])) + std::log(p.w[j]);
    inv[j] = 1 / p.var[j];
  }
  sr->assign(k, 0);
  sx->assign(k, 0);
  sx2->assign(k, 0);
  double lp_sum = 0, prod = 1;
  int in_prod = 0;
  for (Eigen::Index i = 0; i < n; ++i) {
    const double xi = x[i];
    double mx = -std::numeric_limits<double>::infinity();
    for (size_t j = 0; j < k; ++j) {
      const double d = xi - p.mu[j];
      e[j] = c[j] - 0.5 * d * d * inv[j];
      mx = std::max(mx, e[j]);
    }
    // exp(0) is exactly 1: the largest term (every term when k = 1) costs no call into libm. Nor does a term below
    // kExpUnderflow, whose exp rounds to exactly 0 (a point far out in a narrow component's tail).
    double s = 0;
    for (size_t j = 0; j < k; ++j) {
      const double d = e[j] - mx;
      s += (e[j] = d == 0.0 ? 1.0 : d < kExpUnderflow ? 0.0 : std::exp(d));
    }
    lp_sum += mx;
    prod *= s;
    if (++in_prod == kLogBlock || prod > kFoldAbove) FoldProduct(&prod, &in_prod, &lp_sum);
    const double inv_s = 1 / s;
    for (size_t j = 0; j < k; ++j) {
      const double r = e[j] * inv_s;
      (*sr)[j] += r;
      (*sx)[j] += r * xi;
      (*sx2)[j] += r * xi * xi;
    }
  }
  FoldProduct(&prod, &in_prod, &lp_sum);
  return lp_sum / double(n);
}

Result<GmmModel> ToModel(const Params1D& p) {
  const Eigen::Index k = Eigen::Index(p.w.size());
  Eigen::VectorXd w(k);
  Eigen::MatrixXd means(k, 1);
  std::vector<Eigen::MatrixXd> covs(size_t(k), Eigen::MatrixXd(1, 1));
  for (Eigen::Index j = 0; j < k; ++j) {
    w(j) = p.w[size_t(j)];
    means(j, 0) = p.mu[size_t(j)];
    covs[size_t(j)](0, 0) = p.var[size_t(j)];
  }
  return GmmModel::FromParameters(CovarianceType::kDiagonal, std::move(w), std::move(means), std::move(covs));
}

}  // namespace

Result<GmmModel> FitGmmFrom1D(const Eigen::MatrixXd& x, const GmmModel& init, const GmmOptions& o) {
  const Eigen::Index n = x.rows();
  const size_t k = size_t(init.k());
  Params1D p;
  for (size_t j = 0; j < k; ++j) {
    p.w.push_back(init.weights()(Eigen::Index(j)));
    p.mu.push_back(init.means()(Eigen::Index(j), 0));
    p.var.push_back(init.covariances()[j](0, 0));
  }
  std::vector<double> sr, sx, sx2;
  double lower = -std::numeric_limits<double>::infinity();
  int iterations = 0;
  bool converged = false;
  for (int it = 1; it <= o.max_iter; ++it) {
    const double prev = lower;
    lower = EStep(x.data(), n, p, &sr, &sx, &sx2);
    double total = 0;
    for (size_t j = 0; j < k; ++j) {
      const double nk = sr[j] + 10 * std::numeric_limits<double>::epsilon();
      const double mu = sx[j] / nk;
      p.var[j] = sx2[j] / nk - 2 * (mu * (sx[j] / nk)) + mu * mu + o.reg_covar;
      if (!(p.var[j] > 0) || !std::isfinite(p.var[j]))
        return InvalidArgument("GMM component " + std::to_string(j) + " has a non-positive variance; raise reg_covar");
      p.mu[j] = mu;
      p.w[j] = nk;
      total += nk;
    }
    for (double& w : p.w) w /= total;
    iterations = it;
    if (std::abs(lower - prev) < o.tol) {
      converged = true;
      break;
    }
  }
  auto model = ToModel(p);
  if (!model.ok()) return model.status();
  model->iterations = iterations;
  model->converged = converged;
  model->lower_bound = lower;
  return model;
}

std::vector<int> KMeansLabels1D(const Eigen::MatrixXd& x, int k, int iters, uint64_t seed) {
  const int n = static_cast<int>(x.rows());
  const double* v = x.data();
  std::mt19937_64 rng(seed);
  auto uniform = [&rng]() { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  std::vector<double> centers(static_cast<size_t>(k)), d2(static_cast<size_t>(n));
  centers[0] = v[static_cast<int>(uniform() * n) % n];
  for (int i = 0; i < n; ++i) d2[size_t(i)] = (v[i] - centers[0]) * (v[i] - centers[0]);
  for (int c = 1; c < k; ++c) {
    double total = 0;
    for (double d : d2) total += d;
    int pick = 0;
    if (total > 0) {
      double r = uniform() * total, acc = 0;
      for (pick = 0; pick < n - 1; ++pick) {
        acc += d2[size_t(pick)];
        if (acc >= r) break;
      }
    } else {
      pick = static_cast<int>(uniform() * n) % n;
    }
    centers[size_t(c)] = v[pick];
    for (int i = 0; i < n; ++i) d2[size_t(i)] = std::min(d2[size_t(i)], (v[i] - v[pick]) * (v[i] - v[pick]));
  }
  std::vector<int> label(size_t(n), 0);
  for (int it = 0; it <= iters; ++it) {
    bool changed = false;
    for (int i = 0; i < n; ++i) {
      int best = 0;
      double bd = std::numeric_limits<double>::infinity();
      for (int c = 0; c < k; ++c) {
        const double dd = (v[i] - centers[size_t(c)]) * (v[i] - centers[size_t(c)]);
        if (dd < bd) { bd = dd; best = c; }
      }
      changed = changed || label[size_t(i)] != best;
      label[size_t(i)] = best;
    }
    if (it == iters || (!changed && it > 0)) break;
    std::vector<double> sum(size_t(k), 0);
    std::vector<int> cnt(size_t(k), 0);
    for (int i = 0; i < n; ++i) { sum[size_t(label[size_t(i)])] += v[i]; ++cnt[size_t(label[size_t(i)])]; }
    for (int c = 0; c < k; ++c) if (cnt[size_t(c)] > 0) centers[size_t(c)] = sum[size_t(c)] / cnt[size_t(c)];
  }
  return label;
}

}  // namespace truffld::diagnose::detail
