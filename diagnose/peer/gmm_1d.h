// The one-dimensional EM loop (internal to gmm.cc): Stage I fits one residual per family, so
// nearly every fit is 1-D with a diagonal covariance. Eigen's general path builds n x k
// temporaries per iteration and takes two exponentials per sample and component; this loop
// keeps four running sums per component and one exponential, with the same updates (see
// gmm.h), so fits agree with the general path to rounding (tests compare the two).
// Thread-safety: reentrant.
#pragma once

#include <Eigen/Dense>

#include "peer/gmm.h"

namespace truffld::diagnose::detail {

// EM from `init` (1 column, diagonal) on x (n x 1); FitGmmFrom's contract.
Result<GmmModel> FitGmmFrom1D(const Eigen::MatrixXd& x, const GmmModel& init, const GmmOptions& o);

// k-means++ seeding then Lloyd on x (n x 1): hard labels, KMeansResp's draws and updates.
std::vector<int> KMeansLabels1D(const Eigen::MatrixXd& x, int k, int iters, uint64_t seed);

}  // namespace truffld::diagnose::detail
