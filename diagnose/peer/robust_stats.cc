// Median and MAD for the detectors' robust yardsticks (robust_stats.h).
#include "peer/robust_stats.h"

#include <algorithm>
#include <cmath>

namespace truffld::diagnose {

namespace {

// The k-th smallest of v[0, n), leaving v[0, k) holding the k smallest (quickselect, median of
// three pivots, each pass a branch-free three-way partition). Needs a v without NaN: a NaN
// pivot would partition nothing. Quadratic at worst: for short arrays only.
double SelectShort(double* v, size_t n, size_t k) {
  size_t lo = 0, hi = n;
  while (hi - lo > 1) {
    const double a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi - 1];
    const double pivot = std::max(std::min(a, b), std::min(std::max(a, b), c));
    size_t less = lo;  // [lo, less) < pivot
    for (size_t i = lo; i < hi; ++i) {
      const double t = v[i];
      const bool in = t < pivot;
      v[i] = v[less];
      v[less] = t;
      less += in;
    }
    size_t equal = less;  // [less, equal) == pivot, [equal, hi) > pivot
    for (size_t i = less; i < hi; ++i) {
      const double t = v[i];
      const bool in = t == pivot;
      v[i] = v[equal];
      v[equal] = t;
      equal += in;
    }
    if (k < less) {
      hi = less;
    } else if (k < equal) {
      return pivot;
    } else {
      lo = equal;
    }
  }
  return v[lo];
}

constexpr size_t kShortMedian = 64;  // SelectShort up to this size

}  // namespace

double MedianInPlace(double* v, size_t n) {
  const size_t mid = n / 2;
  bool nan = false;
  for (size_t i = 0; i < n; ++i) nan |= std::isnan(v[i]);
  double hi;
  if (n <= kShortMedian && !nan) {
    hi = SelectShort(v, n, mid);
  } else {
    std::nth_element(v, v + mid, v + n);
    hi = v[mid];
  }
  if (n % 2 == 1) return hi;
  return 0.5 * (*std::max_element(v, v + mid) + hi);  // v[0, mid): the mid smallest
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  return MedianInPlace(v.data(), v.size());
}

double Mad(const std::vector<double>& v, double median) {
  std::vector<double> dev(v.size());
  for (size_t i = 0; i < v.size(); ++i) dev[i] = std::abs(v[i] - median);
  return Median(std::move(dev));
}

}  // namespace truffld::diagnose
