// Unit tests of TickClock: tick -> ns conversion between anchors.
#include <gtest/gtest.h>

#include "tick_clock.h"

namespace truffld::inject {
namespace {

TEST(TickClock, IdentityWithoutACounter) {
  TickClock c;
  c.Anchor(100, 100);
  EXPECT_EQ(c.ToNs(12345), 12345);
}

TEST(TickClock, InterpolatesBetweenAnchorsAtTheMeasuredRate) {
  TickClock c;
  c.set_identity(false);
  // A 3 GHz counter: 3 ticks per ns; ns clock starts at 1e9.
  c.Anchor(3'000'000'000ull, 1'000'000'000);
  c.Anchor(3'000'000'000ull + 1'500'000'000ull, 1'500'000'000);  // 0.5 s later
  EXPECT_NEAR(c.slope(), 1.0 / 3.0, 1e-12);
  EXPECT_EQ(c.ToNs(3'000'000'000ull + 300), 1'000'000'100);
  EXPECT_EQ(c.ToNs(3'000'000'000ull + 1'500'000'000ull), 1'500'000'000);
  // Slightly after the latest anchor (stamped between anchor and drain): extrapolated.
  EXPECT_EQ(c.ToNs(3'000'000'000ull + 1'500'000'030ull), 1'500'000'010);
}

TEST(TickClock, LatestAnchorIsTheOrigin) {
  TickClock c;
  c.set_identity(false);
  c.Anchor(0, 0);
  c.Anchor(2'000'000, 1'000'000);  // 2 ticks per ns
  c.Anchor(4'000'000, 2'000'500);  // the clock stepped by 500 ns (e.g. realtime adjusted)
  EXPECT_EQ(c.ToNs(4'000'000), 2'000'500);
  EXPECT_EQ(c.ToNs(4'000'002), 2'000'501);
}

}  // namespace
}  // namespace truffld::inject
