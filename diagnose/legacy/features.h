// Feature transform for Stage I: phi'(x) = (log1p(phi(x)) - median) / scale, per family.
//
// Robust statistics (median, MAD) are used instead of mean and standard deviation so that the
// anomalies we look for do not widen the yardstick that should expose them. The scale of each
// feature is max(1.4826 * MAD, min_scale) in log1p units: a constant feature (MAD 0) still gets
// a finite yardstick, so a change of min_scale in log units counts as one standard unit.
// Also holds the chi-square tail the mixture scores use (median and MAD: peer/robust_stats.h).
// Thread-safety: pure functions over caller-owned data.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <vector>

#include "peer/robust_stats.h"
#include "read/instances.h"

namespace truffld::diagnose {

// P[X >= x] for X ~ chi-square with `df` degrees of freedom (regularised upper gamma).
double Chi2Survival(double x, int df);

struct FamilyScaler {
  FeatureVector median{};  // of log1p(phi)
  FeatureVector scale{};   // max(1.4826 * MAD, min_scale)
};

// Robust scaler over the given instances (indices into table.features).
FamilyScaler FitScaler(const InstanceTable& table, const std::vector<uint32_t>& rows,
                       double min_scale = 0.05);
// Rows of phi'(x) for the given instances (n x kNumFeatures).
Eigen::MatrixXd TransformRows(const InstanceTable& table, const std::vector<uint32_t>& rows,
                              const FamilyScaler& scaler);

}  // namespace truffld::diagnose
