// Robust feature standardisation and the numeric helpers Stage I uses.
#include "legacy/features.h"

#include <algorithm>
#include <cmath>

namespace truffld::diagnose {

namespace {
// Regularised lower incomplete gamma P(a, x) by series (x < a + 1).
double GammaPSeries(double a, double x) {
  double sum = 1.0 / a, term = sum;
  for (int n = 1; n < 500; ++n) {
    term *= x / (a + n);
    sum += term;
    if (std::abs(term) < std::abs(sum) * 1e-15) break;
  }
  return sum * std::exp(-x + a * std::log(x) - std::lgamma(a));
}
// Regularised upper incomplete gamma Q(a, x) by Lentz's continued fraction (x >= a + 1).
double GammaQFraction(double a, double x) {
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 500; ++i) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::abs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::abs(c) < tiny) c = tiny;
    d = 1 / d;
    double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < 1e-15) break;
  }
  return std::exp(-x + a * std::log(x) - std::lgamma(a)) * h;
}
}  // namespace

double Chi2Survival(double x, int df) {
  if (!(x > 0)) return 1.0;
  if (!std::isfinite(x)) return 0.0;
  double a = 0.5 * std::max(1, df), z = 0.5 * x;
  double q = z < a + 1 ? 1.0 - GammaPSeries(a, z) : GammaQFraction(a, z);
  return std::clamp(q, 0.0, 1.0);
}

FamilyScaler FitScaler(const InstanceTable& table, const std::vector<uint32_t>& rows,
                       double min_scale) {
  FamilyScaler s;
  std::vector<double> col(rows.size());
  for (int f = 0; f < kNumFeatures; ++f) {
    for (size_t i = 0; i < rows.size(); ++i) col[i] = std::log1p(std::max(0.0, table.features[rows[i]][f]));
    double med = Median(col);
    s.median[f] = med;
    s.scale[f] = std::max(1.4826 * Mad(col, med), min_scale);
  }
  return s;
}

Eigen::MatrixXd TransformRows(const InstanceTable& table, const std::vector<uint32_t>& rows,
                              const FamilyScaler& scaler) {
  Eigen::MatrixXd x(static_cast<Eigen::Index>(rows.size()), kNumFeatures);
  for (size_t i = 0; i < rows.size(); ++i) {
    const FeatureVector& f = table.features[rows[i]];
    for (int j = 0; j < kNumFeatures; ++j) {
      x(static_cast<Eigen::Index>(i), j) = (std::log1p(std::max(0.0, f[j])) - scaler.median[j]) / scaler.scale[j];
    }
  }
  return x;
}

}  // namespace truffld::diagnose
