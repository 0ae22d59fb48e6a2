// Robust location and spread: the median and the median absolute deviation. Both detectors
// measure noise with them (the peer residual models' guards, the legacy selector's threshold)
// so that the anomalies they look for do not widen the yardstick meant to expose them.
// Pure functions over caller-owned data; thread-safe.
#pragma once

#include <cstddef>
#include <vector>

namespace truffld::diagnose {

// Median of v[0, n) (average of the two middle values for even n; n >= 1), reordering v: a
// selection without branches on the data for short arrays (the peer expectations take millions
// of medians of at most a few dozen values), std::nth_element otherwise.
double MedianInPlace(double* v, size_t n);
// Median of a copy (average of the two middle values for even sizes); 0 for empty input.
double Median(std::vector<double> v);
// Median absolute deviation around `median` (unscaled); 0 for empty input.
double Mad(const std::vector<double>& v, double median);

}  // namespace truffld::diagnose
