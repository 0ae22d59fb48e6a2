// ApiStack: CUDA API enter/exit pairs on one thread, including the halves a window edge loses.
#include "api_stack.h"

#include <gtest/gtest.h>

namespace truffld::inject {
namespace {

TEST(ApiStack, NestedCallsPopInOrderAndNameTheOutermost) {
  ApiStack s{};
  s.Enter(10, /*is_detail=*/true, /*detail_on=*/true);  // cudaLaunchKernel
  s.Enter(11, true, true);                             // cuLaunchKernel inside it
  EXPECT_EQ(s.Outermost(), 10u);
  EXPECT_TRUE(s.Exit(11));
  EXPECT_TRUE(s.Exit(10));
  EXPECT_EQ(s.depth, 0u);
  EXPECT_EQ(s.Outermost(), 0u);
}

TEST(ApiStack, AnExitWithoutItsEnterIsUnpairedAndChangesNothing) {
  ApiStack s{};
  EXPECT_FALSE(s.Exit(5)) << "the tracer started inside call 5";
  s.Enter(6, false, true);
  EXPECT_FALSE(s.Exit(7)) << "the callback of 7 came on during the call";
  EXPECT_EQ(s.depth, 1u);
  EXPECT_TRUE(s.Exit(6));
}

TEST(ApiStack, AnEnterWhoseExitWillNotComeIsDroppedOnceTheTierIsOff) {
  ApiStack s{};
  s.Enter(20, /*is_detail=*/true, true);  // a launch; the window closes during it
  s.Enter(21, /*is_detail=*/false, /*detail_on=*/false);  // the next call: a synchronisation
  EXPECT_EQ(s.depth, 1u) << "the launch's entry is gone";
  EXPECT_EQ(s.Outermost(), 21u);
  EXPECT_TRUE(s.Exit(21));
  EXPECT_EQ(s.depth, 0u);
}

TEST(ApiStack, AnAlwaysOnCallOpenBelowAStaleOneStays) {
  ApiStack s{};
  s.Enter(30, /*is_detail=*/false, true);  // cudaMemcpy (always on)
  s.Enter(31, /*is_detail=*/true, true);   // a driver launch inside it; the tier goes off
  s.Enter(32, false, /*detail_on=*/false);
  EXPECT_EQ(s.depth, 2u);
  EXPECT_EQ(s.Outermost(), 30u);
  EXPECT_TRUE(s.Exit(32));
  EXPECT_TRUE(s.Exit(30));
  EXPECT_EQ(s.depth, 0u);
}

TEST(ApiStack, AnExitPopsTheStaleEntriesAboveItsOwn) {
  ApiStack s{};
  s.Enter(40, false, true);
  s.Enter(41, true, true);  // its exit is lost
  EXPECT_TRUE(s.Exit(40)) << "the outer call's exit closes what is left inside it";
  EXPECT_EQ(s.depth, 0u);
  EXPECT_EQ(s.detail, 0u);
}

TEST(ApiStack, DeeperThanItRemembersItTrustsTheNesting) {
  ApiStack s{};
  for (uint64_t id = 1; id <= ApiStack::kSlots + 2; ++id) s.Enter(id, false, true);
  EXPECT_EQ(s.depth, ApiStack::kSlots + 2);
  EXPECT_TRUE(s.Exit(999));  // not remembered: taken as the innermost
  EXPECT_TRUE(s.Exit(999));
  EXPECT_FALSE(s.Exit(999)) << "now every open call is remembered, and none is 999";
  EXPECT_TRUE(s.Exit(ApiStack::kSlots));
  EXPECT_EQ(s.Outermost(), 1u);
}

TEST(ApiStack, TheTierComingBackOnKeepsLiveEntries) {
  ApiStack s{};
  s.Enter(50, true, true);
  s.Enter(51, true, /*detail_on=*/true);  // the tier is on: 50 is a live outer call
  EXPECT_EQ(s.depth, 2u);
  EXPECT_TRUE(s.Exit(51));
  EXPECT_TRUE(s.Exit(50));
}

}  // namespace
}  // namespace truffld::inject
