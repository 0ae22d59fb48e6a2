// EM parameter recovery, BIC model choice, determinism, central components, numeric helpers.
#include <gtest/gtest.h>

#include <optional>
#include <random>

#include "legacy/features.h"
#include "peer/gmm.h"

namespace truffld::diagnose {
namespace {

// n samples from K well separated 2-D Gaussians with the given weights.
Eigen::MatrixXd Sample(const std::vector<double>& weights, const Eigen::MatrixXd& means,
                       const std::vector<double>& sd, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::discrete_distribution<int> pick(weights.begin(), weights.end());
  std::normal_distribution<double> z(0, 1);
  Eigen::MatrixXd x(n, means.cols());
  for (int i = 0; i < n; ++i) {
    int k = pick(rng);
    for (int j = 0; j < means.cols(); ++j) x(i, j) = means(k, j) + sd[k] * z(rng);
  }
  return x;
}

TEST(Gmm, RecoversKnownMixture) {
  Eigen::MatrixXd means(2, 2);
  means << 0, 0, 8, 5;
  Eigen::MatrixXd x = Sample({0.7, 0.3}, means, {1.0, 0.5}, 4000, 7);
  for (CovarianceType type : {CovarianceType::kDiagonal, CovarianceType::kFull}) {
    GmmOptions o;
    o.k = 2;
    o.covariance = type;
    o.reg_covar = 1e-6;
    auto fit = FitGmm(x, o);
    ASSERT_TRUE(fit.ok()) << fit.status().ToString();
    int big = fit->weights()(0) > fit->weights()(1) ? 0 : 1, small = 1 - big;
    EXPECT_NEAR(fit->weights()(big), 0.7, 0.03);
    EXPECT_NEAR(fit->means()(big, 0), 0.0, 0.1);
    EXPECT_NEAR(fit->means()(small, 0), 8.0, 0.1);
    EXPECT_NEAR(fit->means()(small, 1), 5.0, 0.1);
    EXPECT_NEAR(fit->covariances()[big](0, 0), 1.0, 0.1);
    EXPECT_NEAR(fit->covariances()[small](1, 1), 0.25, 0.03);
    EXPECT_TRUE(fit->converged);
  }
}

TEST(Gmm, BicPicksTrueK) {
  Eigen::MatrixXd means(3, 2);
  means << 0, 0, 10, 0, 0, 10;
  for (int true_k : {1, 2, 3}) {
    std::vector<double> w(true_k, 1.0 / true_k), sd(true_k, 1.0);
    Eigen::MatrixXd x = Sample(w, means.topRows(true_k), sd, 900, 100 + true_k);
    GmmOptions o;
    auto sel = FitGmmBic(x, 1, 4, o);
    ASSERT_TRUE(sel.ok());
    EXPECT_EQ(sel->model.k(), true_k);
    EXPECT_EQ(sel->ks.size(), 4u);
  }
}

TEST(Gmm, DeterministicAcrossRuns) {
  Eigen::MatrixXd means(2, 2);
  means << 0, 0, 3, 3;
  Eigen::MatrixXd x = Sample({0.5, 0.5}, means, {1.0, 1.0}, 500, 3);
  GmmOptions o;
  o.k = 2;
  auto a = FitGmm(x, o), b = FitGmm(x, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->means(), b->means());
  EXPECT_EQ(a->weights(), b->weights());
}

TEST(Gmm, ResponsibilitiesSumToOneAndLogProbFinite) {
  Eigen::MatrixXd means(2, 1);
  means << 0, 100;
  Eigen::MatrixXd x = Sample({0.5, 0.5}, means, {1.0, 1.0}, 200, 5);
  GmmOptions o;
  o.k = 2;
  auto fit = FitGmm(x, o);
  ASSERT_TRUE(fit.ok());
  Eigen::MatrixXd far(1, 1);
  far << 1e6;  // far from both components: still a distribution, no NaN
  Eigen::VectorXd lp;
  Eigen::MatrixXd resp;
  fit->Estimate(far, &lp, &resp);
  EXPECT_TRUE(std::isfinite(lp(0)));
  EXPECT_NEAR(resp.row(0).sum(), 1.0, 1e-12);
}

// Stage I's 1-D fits take their own loop (gmm_1d.h): it must agree with the general Eigen
// path to rounding, model by model, on the BIC grid and its choice.
TEST(Gmm, OneDimensionalLoopAgreesWithTheGeneralPath) {
  Eigen::MatrixXd means(3, 1);
  means << 0, 4, 30;
  const Eigen::MatrixXd x = Sample({0.6, 0.3, 0.1}, means, {1.0, 0.7, 5.0}, 2500, 11);
  for (double reg : {1e-5, 1e-2}) {
    GmmOptions fast;
    fast.reg_covar = reg;
    fast.max_iter = 60;
    GmmOptions general = fast;
    general.general_em = true;
    auto a = FitGmmBic(x, 1, 5, fast);
    auto b = FitGmmBic(x, 1, 5, general);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->ks, b->ks);
    for (size_t i = 0; i < a->bics.size(); ++i) EXPECT_NEAR(a->bics[i], b->bics[i], 1e-8 * std::abs(b->bics[i]));
    const GmmModel &m = a->model, &g = b->model;
    ASSERT_EQ(m.k(), g.k());
    EXPECT_EQ(m.iterations, g.iterations);
    EXPECT_EQ(m.converged, g.converged);
    for (int j = 0; j < m.k(); ++j) {
      EXPECT_NEAR(m.weights()(j), g.weights()(j), 1e-9);
      EXPECT_NEAR(m.means()(j, 0), g.means()(j, 0), 1e-9 * (1 + std::abs(g.means()(j, 0))));
      EXPECT_NEAR(m.covariances()[size_t(j)](0, 0), g.covariances()[size_t(j)](0, 0),
                  1e-9 * g.covariances()[size_t(j)](0, 0));
    }
  }
}

// FitGmm keeps the best of its starts; a start that seeds the partition of the one before is
// not refitted. The result must be, bit for bit, the first best of the starts fitted one by one
// (well separated 1-D data: the starts' k-means partitions mostly coincide).
TEST(Gmm, RepeatedStartsGiveTheBestSingleStart) {
  for (int k : {2, 3}) {
    Eigen::MatrixXd means(3, 1);
    means << 0, 10, 25;
    const Eigen::MatrixXd x = Sample({0.5, 0.3, 0.2}, means, {1.0, 1.5, 2.0}, 1500, 5 + k);
    GmmOptions all;
    all.k = k;
    all.n_init = 4;
    auto fit = FitGmm(x, all);
    ASSERT_TRUE(fit.ok());
    std::optional<GmmModel> best;
    for (int r = 0; r < all.n_init; ++r) {
      GmmOptions one = all;
      one.n_init = 1;
      one.seed = all.seed + 7919ull * static_cast<uint64_t>(r);
      auto f = FitGmm(x, one);
      ASSERT_TRUE(f.ok());
      if (!best || f->lower_bound > best->lower_bound) best = std::move(f).value();
    }
    EXPECT_EQ(fit->lower_bound, best->lower_bound);
    EXPECT_EQ(fit->iterations, best->iterations);
    EXPECT_EQ(fit->weights(), best->weights());
    EXPECT_EQ(fit->means(), best->means());
    for (int j = 0; j < k; ++j) EXPECT_EQ(fit->covariances()[size_t(j)], best->covariances()[size_t(j)]);
  }
}

TEST(Gmm, RejectsBadInput) {
  GmmOptions o;
  o.k = 3;
  EXPECT_FALSE(FitGmm(Eigen::MatrixXd(2, 2), o).ok());
  std::vector<Eigen::MatrixXd> covs = {Eigen::MatrixXd::Zero(2, 2)};
  EXPECT_FALSE(GmmModel::FromParameters(CovarianceType::kFull, Eigen::VectorXd::Ones(1),
                                        Eigen::MatrixXd::Zero(1, 2), covs).ok());
  auto sel = FitGmmBic(Eigen::MatrixXd::Zero(0, 2), 1, 4, GmmOptions{});
  EXPECT_FALSE(sel.ok());
}

TEST(Gmm, CentralComponentsByCumulativeWeight) {
  std::vector<Eigen::MatrixXd> covs(3, Eigen::MatrixXd::Identity(1, 1));
  Eigen::VectorXd w(3);
  w << 0.15, 0.6, 0.25;
  auto m = GmmModel::FromParameters(CovarianceType::kDiagonal, w, Eigen::MatrixXd::Zero(3, 1), covs);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(CentralComponents(*m, 0.8, false), (std::vector<int>{1, 2}));
  EXPECT_EQ(CentralComponents(*m, 0.9, false), (std::vector<int>{1, 2, 0}));
  EXPECT_EQ(CentralComponents(*m, 0.8, true), (std::vector<int>{1}));
  EXPECT_EQ(m->NumParameters(), 2 + 3 + 3);
}

TEST(RobustStats, MedianMadChi2) {
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(Median({}), 0);
  EXPECT_DOUBLE_EQ(Mad({1, 2, 3, 4, 100}, 3), 1);
  // Reference values: scipy.stats.chi2.sf.
  EXPECT_NEAR(Chi2Survival(3.841458820694124, 1), 0.05, 1e-9);
  EXPECT_NEAR(Chi2Survival(9.487729036781154, 4), 0.05, 1e-9);
  EXPECT_NEAR(Chi2Survival(2.0, 2), std::exp(-1.0), 1e-12);
  EXPECT_NEAR(Chi2Survival(100.0, 3), 1.554e-21, 1e-23);
  EXPECT_EQ(Chi2Survival(0.0, 3), 1.0);
}

}  // namespace
}  // namespace truffld::diagnose
