// Gaussian mixture models fitted by EM (Eigen), with BIC model selection.
//
// Stage I's density model. The EM step follows the textbook updates exactly as scikit-learn's
// GaussianMixture computes them (same M-step formulas, variance floor `reg_covar` added to each
// covariance diagonal, convergence when the mean log-likelihood changes by less than `tol`), so
// the two agree to rounding when started from the same parameters; tests check this against
// scikit-learn itself. Initialisation is deterministic: k-means++ seeding from a fixed seed
// followed by a few Lloyd iterations, repeated `n_init` times, best log-likelihood kept.
// Inputs are samples in rows (n x d), already transformed and standardised by the caller.
// Thread-safety: models are immutable values after fitting; the free functions are reentrant.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <vector>

#include "truffld/status.h"

namespace truffld::diagnose {

enum class CovarianceType { kFull, kDiagonal };
const char* CovarianceTypeName(CovarianceType c) noexcept;  // "full" | "diag"

struct GmmOptions {
  int k = 1;                                  // components (FitGmm); grid bounds in FitGmmBic
  CovarianceType covariance = CovarianceType::kDiagonal;
  double reg_covar = 1e-2;                    // variance floor added to every covariance diagonal
  int max_iter = 100;                         // EM iterations per start
  double tol = 1e-3;                          // stop when mean log-likelihood moves less
  int n_init = 2;                             // restarts (different k-means++ seeds)
  int kmeans_iter = 10;                       // Lloyd iterations after k-means++ seeding
  uint64_t seed = 0x7472756666ull;            // fixed: reruns give identical fits
  int min_samples_per_component = 5;          // FitGmmBic skips K with fewer samples per component
  bool general_em = false;                    // 1-D diagonal fits too take the general Eigen path (tests)
};

class GmmModel {
 public:
  GmmModel() = default;
  // Builds a model from explicit parameters (covariances: d x d each; diagonal models keep
  // only the diagonal). Fails if a covariance is not positive definite.
  static Result<GmmModel> FromParameters(CovarianceType type, Eigen::VectorXd weights,
                                         Eigen::MatrixXd means,
                                         std::vector<Eigen::MatrixXd> covariances);

  int k() const { return static_cast<int>(weights_.size()); }
  int dim() const { return static_cast<int>(means_.cols()); }
  CovarianceType covariance_type() const { return type_; }
  const Eigen::VectorXd& weights() const { return weights_; }
  const Eigen::MatrixXd& means() const { return means_; }           // k x d
  const std::vector<Eigen::MatrixXd>& covariances() const { return covs_; }  // d x d each
  int NumParameters() const;

  // Per sample: log p(x) (n), responsibilities gamma (n x k), and optionally the squared
  // Mahalanobis distance of each sample to each component (n x k).
  void Estimate(const Eigen::MatrixXd& x, Eigen::VectorXd* log_prob, Eigen::MatrixXd* resp,
                Eigen::MatrixXd* mahalanobis2 = nullptr) const;
  // BIC = -2 * sum log p(x) + parameters * ln(n); lower is better.
  double Bic(const Eigen::MatrixXd& x) const;

  // Fit diagnostics.
  int iterations = 0;
  bool converged = false;
  double lower_bound = 0;  // mean log-likelihood at the last E-step

 private:
  Status Prepare();  // Cholesky factors of the covariances
  CovarianceType type_ = CovarianceType::kDiagonal;
  Eigen::VectorXd weights_;
  Eigen::MatrixXd means_;
  std::vector<Eigen::MatrixXd> covs_;
  std::vector<Eigen::MatrixXd> chol_;  // lower Cholesky factor of each covariance (full)
  std::vector<double> log_det_;        // log |Sigma_k|
};

// EM from explicit starting parameters; runs until `tol` or `max_iter` (n_init is ignored).
Result<GmmModel> FitGmmFrom(const Eigen::MatrixXd& x, const GmmModel& init,
                            const GmmOptions& options);
// EM with options.k components from n_init deterministic k-means++ starts.
Result<GmmModel> FitGmm(const Eigen::MatrixXd& x, const GmmOptions& options);

struct BicSelection {
  GmmModel model;            // the lowest-BIC model
  std::vector<int> ks;       // K values tried
  std::vector<double> bics;  // BIC of each
};
// Tries K = k_min..k_max (skipping K with fewer than min_samples_per_component * K samples, K=1
// always tried) and keeps the lowest BIC.
Result<BicSelection> FitGmmBic(const Eigen::MatrixXd& x, int k_min, int k_max,
                               const GmmOptions& options);

// Indices of the central components: the largest weights whose cumulative mass first reaches
// `central_mass` (top1 = true keeps only the largest).
std::vector<int> CentralComponents(const GmmModel& m, double central_mass, bool top1);

}  // namespace truffld::diagnose
