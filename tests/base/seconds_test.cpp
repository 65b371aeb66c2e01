// Seconds: fractional, converts implicitly from every std::chrono duration and keeps its unit.
#include "wavepool/base/seconds.h"

#include <chrono>
#include <type_traits>

#include "gtest/gtest.h"

namespace wavepool {
namespace {

TEST(Seconds, HoldsFractionsOfASecond) {
  const Seconds half(0.5);
  EXPECT_DOUBLE_EQ(half.count(), 0.5);
  EXPECT_DOUBLE_EQ((half * 3).count(), 1.5);
}

TEST(Seconds, ConvertsImplicitlyFromIntegerDurations) {
  const Seconds from_ms = std::chrono::milliseconds(250);
  const Seconds from_ns = std::chrono::nanoseconds(1'500'000'000);
  EXPECT_DOUBLE_EQ(from_ms.count(), 0.25);
  EXPECT_DOUBLE_EQ(from_ns.count(), 1.5);
}

TEST(Seconds, BackToIntegerDurationsOnlyThroughACast) {
  static_assert(!std::is_convertible_v<Seconds, std::chrono::milliseconds>,
                "rounding must be explicit");
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(Seconds(1.2345)).count(), 1234);
}

TEST(Seconds, IsTheStandardDoubleDuration) {
  static_assert(std::is_same_v<Seconds, std::chrono::duration<double>>,
                "every component's fractional seconds are this one type");
  SUCCEED();
}

}  // namespace
}  // namespace wavepool
