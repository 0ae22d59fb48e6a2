// EventRank must give, for every event, whether it is a member and how many members precede it,
// exactly as counting one by one does: at word edges (63, 64, 65 events), with members at bit 0
// and bit 63 of a word, all members, none, and no events at all.
#include "core/event_rank.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace truffld::merge {
namespace {

bool IsApi(const Event& e) { return e.kind == EventKind::kRuntime; }

std::vector<Event> Events(const std::vector<bool>& api) {
  std::vector<Event> ev(api.size());
  for (size_t i = 0; i < api.size(); ++i) ev[i].kind = api[i] ? EventKind::kRuntime : EventKind::kKernel;
  return ev;
}

// Checks every event against a running count.
void ExpectCounts(const std::vector<bool>& api) {
  EventRank rank;
  rank.Build(Events(api), IsApi);
  uint32_t before = 0;
  for (uint32_t i = 0; i < api.size(); ++i) {
    ASSERT_EQ(rank.Has(i), api[i]) << "event " << i << " of " << api.size();
    ASSERT_EQ(rank.Rank(i), before) << "event " << i << " of " << api.size();
    before += api[i];
  }
  EXPECT_EQ(rank.size(), before);
}

TEST(EventRank, NoEvents) {
  EventRank rank;
  rank.Build(std::vector<Event>{}, IsApi);
  EXPECT_EQ(rank.size(), 0u);
}

TEST(EventRank, WordEdges) {
  for (size_t n : {1, 2, 63, 64, 65, 127, 128, 129, 200}) {
    ExpectCounts(std::vector<bool>(n, true));
    ExpectCounts(std::vector<bool>(n, false));
    std::vector<bool> edges(n, false);  // members at the first and last bit of every word
    for (size_t i = 0; i < n; ++i) edges[i] = i % 64 == 0 || i % 64 == 63;
    ExpectCounts(edges);
    std::vector<bool> alternate(n);
    for (size_t i = 0; i < n; ++i) alternate[i] = i % 2 == 1;
    ExpectCounts(alternate);
  }
}

TEST(EventRank, RandomMembership) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    const size_t n = rng() % 3000;
    const unsigned percent = rng() % 101;
    std::vector<bool> api(n);
    for (size_t i = 0; i < n; ++i) api[i] = rng() % 100 < percent;
    ExpectCounts(api);
  }
}

// A rebuild forgets the previous events.
TEST(EventRank, RebuildReplaces) {
  EventRank rank;
  rank.Build(Events(std::vector<bool>(300, true)), IsApi);
  rank.Build(Events({false, true, false}), IsApi);
  EXPECT_EQ(rank.size(), 1u);
  EXPECT_FALSE(rank.Has(0));
  EXPECT_TRUE(rank.Has(1));
  EXPECT_EQ(rank.Rank(2), 1u);
}

}  // namespace
}  // namespace truffld::merge
