#include "truffld/time.h"

#include <gtest/gtest.h>

namespace truffld {
namespace {

TEST(Time, ParsesMicrosExactly) {
  EXPECT_EQ(ParseMicrosToNs("0"), 0);
  EXPECT_EQ(ParseMicrosToNs("12.5"), 12500);
  EXPECT_EQ(ParseMicrosToNs("-3"), -3000);
  EXPECT_EQ(ParseMicrosToNs(".25"), 250);
  // A 16-digit epoch timestamp: a double would lose the last ns digit.
  EXPECT_EQ(ParseMicrosToNs("1718228880623147.251"), 1718228880623147251LL);
  EXPECT_EQ(ParseMicrosToNs("1718228880623147.2516"), 1718228880623147252LL);  // rounds
  EXPECT_EQ(ParseMicrosToNs("1718228880623147.2514"), 1718228880623147251LL);
  EXPECT_EQ(ParseMicrosToNs("1e3"), 1000000);
}

TEST(Time, RejectsMalformed) {
  for (const char* bad : {"", "-", ".", "1.2.3", "abc", "12us", "1e", "99999999999999999999"})
    EXPECT_FALSE(ParseMicrosToNs(bad).has_value()) << bad;
}

TEST(Time, NoDriftOverManyAdditions) {
  // Summing converted durations equals converting the sum: integer ns cannot drift.
  TimeNs sum = 0;
  for (int i = 0; i < 100000; ++i) sum += *ParseMicrosToNs("0.001");
  EXPECT_EQ(sum, 100000);
}

TEST(Time, DoubleConversionRounds) {
  EXPECT_EQ(MicrosToNs(1.25), 1250);
  EXPECT_EQ(MicrosToNs(2.5), 2500);
}

TEST(Time, ClockNames) {
  EXPECT_EQ(ParseClockName("realtime"), ClockId::kRealtime);
  EXPECT_EQ(ParseClockName("monotonic_raw"), ClockId::kMonotonicRaw);
  EXPECT_FALSE(ParseClockName("tsc").has_value());
  EXPECT_STREQ(ClockName(ClockId::kMonotonicRaw), "monotonic_raw");
  EXPECT_GT(NowNs(ClockId::kRealtime), 1'600'000'000'000'000'000LL);
}

TEST(Time, FormatsDurations) {
  EXPECT_EQ(FormatDurationNs(812), "812 ns");
  EXPECT_EQ(FormatDurationNs(3250), "3.250 us");
  EXPECT_EQ(FormatDurationNs(2'500'000'000), "2.500 s");
}

}  // namespace
}  // namespace truffld
