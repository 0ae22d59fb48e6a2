// SortRuns must give std::sort's result for any input: already sorted, a few appended sorted
// blocks (merged), many blocks (the std::sort fallback), duplicates under a tie-broken order.
#include "core/sorted_runs.h"

#include <gtest/gtest.h>

#include <random>
#include <tuple>
#include <vector>

namespace truffld::merge {
namespace {

struct Item {
  long key;
  unsigned id;  // tie-break: the order is total
  bool operator==(const Item& o) const { return key == o.key && id == o.id; }
};
bool Less(const Item& a, const Item& b) { return std::tie(a.key, a.id) < std::tie(b.key, b.id); }

// `runs` sorted blocks of random lengths, appended: the shape the merge produces.
std::vector<Item> Blocks(std::mt19937* rng, size_t runs, size_t n) {
  std::vector<Item> v;
  std::uniform_int_distribution<long> key(0, 50);  // few keys: many ties on key
  for (size_t r = 0; r < runs; ++r) {
    std::vector<Item> block;
    const size_t len = runs == 0 ? 0 : n / runs + (*rng)() % 5;
    for (size_t i = 0; i < len; ++i) block.push_back({key(*rng), static_cast<unsigned>(v.size() + i)});
    std::sort(block.begin(), block.end(), Less);
    v.insert(v.end(), block.begin(), block.end());
  }
  return v;
}

TEST(SortRuns, MatchesStdSortForAnyNumberOfRuns) {
  std::mt19937 rng(7);
  for (size_t runs : {0, 1, 2, 3, 5, 8, 17, 63, 64, 65, 200}) {
    for (size_t n : {0, 1, 2, 10, 1000}) {
      std::vector<Item> v = Blocks(&rng, runs, n);
      std::vector<Item> want = v;
      std::sort(want.begin(), want.end(), Less);
      SortRuns(&v, Less);
      EXPECT_EQ(v, want) << runs << " runs, n " << n;
    }
  }
}

TEST(SortRuns, ReversedAndShuffledInputsFallBackCorrectly) {
  std::mt19937 rng(11);
  std::vector<Item> v;
  for (unsigned i = 0; i < 5000; ++i) v.push_back({long(5000 - i), i});  // 5000 runs of one
  std::vector<Item> want = v;
  std::sort(want.begin(), want.end(), Less);
  SortRuns(&v, Less);
  EXPECT_EQ(v, want);
  std::shuffle(v.begin(), v.end(), rng);
  SortRuns(&v, Less, 3);  // few runs allowed: the fallback
  EXPECT_EQ(v, want);
}

TEST(SortRuns, SortsASubrangeAndLeavesTheRestAlone) {
  std::mt19937 rng(5);
  std::vector<Item> v = Blocks(&rng, 6, 300);
  const std::vector<Item> before = v;
  const auto first = v.begin() + 10, last = v.end() - 10;
  std::vector<Item> want(first, last);
  std::sort(want.begin(), want.end(), Less);
  SortRuns(first, last, Less);
  EXPECT_EQ(std::vector<Item>(first, last), want);
  EXPECT_TRUE(std::equal(v.begin(), first, before.begin()));
  EXPECT_TRUE(std::equal(last, v.end(), before.end() - 10));
}

}  // namespace
}  // namespace truffld::merge
