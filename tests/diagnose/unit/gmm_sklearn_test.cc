// EM agrees with scikit-learn's GaussianMixture from the same start (1e-6 relative).
// Runs tests/diagnose/gmm_sklearn_reference.py with the system python (Debian python3-sklearn).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "peer/gmm.h"

namespace truffld::diagnose {
namespace {

Eigen::MatrixXd ToMatrix(const nlohmann::json& rows) {
  Eigen::MatrixXd m(rows.size(), rows.at(0).size());
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < rows[i].size(); ++j) m(i, j) = rows[i][j].get<double>();
  return m;
}

void ExpectRelClose(double got, double want, const std::string& what) {
  double tol = 1e-6 * std::max(std::abs(want), 1e-12);
  EXPECT_NEAR(got, want, tol) << what;
}

TEST(GmmSklearn, MatchesScikitLearnFromSameStart) {
  const char* src = std::getenv("TRUFFLD_SOURCE_DIR");
  std::string root = src ? src : TRUFFLD_TEST_SOURCE_DIR;
  std::string out = (std::filesystem::temp_directory_path() /
                     ("truffld_gmm_ref_" + std::to_string(::getpid()) + ".json")).string();
  std::string cmd = "/usr/bin/python3 " + root + "/tests/diagnose/gmm_sklearn_reference.py " + out;
  if (std::system(cmd.c_str()) != 0) {
    if (std::system("/usr/bin/python3 -c 'import sklearn' 2>/dev/null") != 0) {
      GTEST_SKIP() << "/usr/bin/python3 with scikit-learn (Debian python3-sklearn) is not installed";
    }
    FAIL() << "reference script failed: " << cmd;
  }
  nlohmann::json cases = nlohmann::json::parse(std::ifstream(out));
  std::filesystem::remove(out);
  ASSERT_EQ(cases.size(), 4u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c["name"].get<std::string>());
    CovarianceType type = c["covariance"] == "full" ? CovarianceType::kFull : CovarianceType::kDiagonal;
    Eigen::MatrixXd x = ToMatrix(c["x"]);
    const int k = c["k"], d = static_cast<int>(x.cols());
    std::vector<Eigen::MatrixXd> covs0;
    for (const auto& cv : c["covs0"]) covs0.push_back(ToMatrix(cv));
    Eigen::VectorXd w0 = Eigen::Map<const Eigen::VectorXd>(c["weights0"].get<std::vector<double>>().data(), k);
    auto init = GmmModel::FromParameters(type, w0, ToMatrix(c["means0"]), covs0);
    ASSERT_TRUE(init.ok()) << init.status().ToString();
    GmmOptions o;
    o.max_iter = c["iterations"];
    o.tol = 0;
    o.reg_covar = c["reg_covar"];
    auto fit = FitGmmFrom(x, *init, o);
    ASSERT_TRUE(fit.ok()) << fit.status().ToString();
    EXPECT_EQ(fit->iterations, o.max_iter);
    ExpectRelClose(fit->lower_bound, c["lower_bound"], "lower bound");
    for (int j = 0; j < k; ++j) {
      ExpectRelClose(fit->weights()(j), c["weights"][j], "weight");
      for (int a = 0; a < d; ++a) {
        ExpectRelClose(fit->means()(j, a), c["means"][j][a], "mean");
        if (type == CovarianceType::kDiagonal) {
          ExpectRelClose(fit->covariances()[j](a, a), c["covs"][j][a], "variance");
        } else {
          for (int b = 0; b < d; ++b) ExpectRelClose(fit->covariances()[j](a, b), c["covs"][j][a][b], "covariance");
        }
      }
    }
    Eigen::VectorXd lp;
    Eigen::MatrixXd resp;
    fit->Estimate(x, &lp, &resp);
    for (Eigen::Index i = 0; i < x.rows(); ++i) {
      ExpectRelClose(lp(i), c["log_prob"][i], "log p(x) row " + std::to_string(i));
      for (int j = 0; j < k; ++j) {
        double want = c["resp"][i][j];
        EXPECT_NEAR(resp(i, j), want, 1e-6 * std::max(want, 1e-12) + 1e-15) << "gamma row " << i;
      }
    }
  }
}

}  // namespace
}  // namespace truffld::diagnose
