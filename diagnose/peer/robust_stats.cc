// Median and MAD for the detectors' robust yardsticks (robust_stats.h).
#include "peer/robust_stats.h"

#include <algorithm>
#include <cmath>

namespace truffld::diagnose {

double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  double lo = *std::max_element(v.begin(), v.begin() + mid);
  return 0.5 * (lo + hi);
}

double Mad(const std::vector<double>& v, double median) {
  std::vector<double> dev(v.size());
  for (size_t i = 0; i < v.size(); ++i) dev[i] = std::abs(v[i] - median);
  return Median(std::move(dev));
}

}  // namespace truffld::diagnose
