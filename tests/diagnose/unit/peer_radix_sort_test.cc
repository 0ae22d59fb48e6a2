// RadixSortByKey (peer/internal.h) against std::sort: the table-wide peer groupings must come out
// in exactly std::sort's order, whatever the keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "peer/internal.h"

namespace truffld::diagnose::detail {
namespace {

std::vector<std::pair<uint64_t, uint32_t>> Pairs(size_t n, uint64_t distinct, uint64_t mask, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> keys(distinct);
  for (auto& k : keys) k = rng() & mask;
  std::vector<std::pair<uint64_t, uint32_t>> v;
  for (uint32_t i = 0; i < n; ++i) v.emplace_back(keys[rng() % distinct], i);  // indices ascend
  return v;
}

TEST(RadixSortByKey, MatchesStdSort) {
  // Full 64-bit hashes with runs of equal keys; keys differing in high bits only (low digits
  // equal: skipped passes); tiny and empty inputs.
  for (const auto& [n, distinct, mask] : {std::tuple<size_t, uint64_t, uint64_t>{100000, 25000, ~0ull},
                                          {50000, 50000, ~0ull},
                                          {20000, 300, 0xFFFF000000000000ull},
                                          {3000, 7, 0x7ull},
                                          {1, 1, ~0ull},
                                          {0, 1, ~0ull}}) {
    auto v = Pairs(n, distinct, mask, n + distinct);
    auto expected = v;
    std::sort(expected.begin(), expected.end());
    RadixSortByKey(&v);
    EXPECT_EQ(v, expected) << n << " pairs, " << distinct << " keys";
  }
}

}  // namespace
}  // namespace truffld::diagnose::detail
