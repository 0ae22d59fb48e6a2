// MedianInPlace (robust_stats.h) against the sort-based definition: the same value, bit for bit,
// for short arrays (the branch-free selection) and long ones (std::nth_element), with ties, signed
// zeros and NaN (which must not hang the selection).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "peer/robust_stats.h"

namespace truffld::diagnose {
namespace {

// The median by a full sort: the middle value, or the mean of the two middle ones.
double SortedMedian(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(MedianInPlace, MatchesSortedMedianBitForBit) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  for (size_t n = 1; n <= 130; ++n) {
    for (int rep = 0; rep < 40; ++rep) {
      std::vector<double> v(n);
      for (double& x : v) x = normal(rng);
      // Ties: some draws repeat an earlier value, and some arrays hold few distinct values.
      for (size_t i = 1; i < n; ++i)
        if (rng() % 4 == 0) v[i] = v[rng() % i];
      if (rep % 5 == 0)
        for (double& x : v) x = static_cast<double>(rng() % 3);
      std::vector<double> work = v;
      const double got = MedianInPlace(work.data(), work.size());
      ASSERT_TRUE(SameBits(got, SortedMedian(v))) << "n=" << n << " rep=" << rep;
      std::sort(work.begin(), work.end());
      std::sort(v.begin(), v.end());
      ASSERT_EQ(work, v) << "values lost or duplicated, n=" << n;  // only reordered
    }
  }
}

TEST(MedianInPlace, SignedZerosAndInfinities) {
  std::vector<double> v = {0.0, -0.0, 1.0, -1.0, 0.0};
  EXPECT_EQ(MedianInPlace(v.data(), v.size()), 0.0);
  v = {std::numeric_limits<double>::infinity(), 1, 2, -std::numeric_limits<double>::infinity()};
  EXPECT_EQ(MedianInPlace(v.data(), v.size()), 1.5);
}

TEST(MedianInPlace, NanDoesNotHang) {
  for (size_t n : {2, 5, 40, 100}) {
    std::vector<double> v(n, 1.0);
    v[n / 2] = std::numeric_limits<double>::quiet_NaN();
    v[0] = std::numeric_limits<double>::quiet_NaN();
    (void)MedianInPlace(v.data(), v.size());  // any value; it must return
  }
  std::vector<double> one = {2.0};
  EXPECT_EQ(MedianInPlace(one.data(), 1), 2.0);
}

}  // namespace
}  // namespace truffld::diagnose
