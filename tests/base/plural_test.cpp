// Counted nouns: singular for exactly one, plural for every other count and integer type.
#include "wavepool/base/plural.h"

#include <cstddef>
#include <cstdint>
#include <string>

#include "gtest/gtest.h"

namespace wavepool {
namespace {

TEST(Plural, OneIsSingular) {
  EXPECT_EQ(Plural(1, "job"), "1 job");
  EXPECT_EQ(Plural(std::size_t{1}, "GPU"), "1 GPU");
}

TEST(Plural, ZeroManyAndNegativeArePlural) {
  EXPECT_EQ(Plural(0, "job"), "0 jobs");
  EXPECT_EQ(Plural(3, "job"), "3 jobs");
  EXPECT_EQ(Plural(-1, "byte"), "-1 bytes");
  EXPECT_EQ(Plural(std::int64_t{1} << 40, "byte"), "1099511627776 bytes");
}

TEST(Plural, TakesEveryIntegerTypeAndStringKind) {
  const std::string noun = "node";
  EXPECT_EQ(Plural(std::uint8_t{2}, noun), "2 nodes");
  EXPECT_EQ(Plural(std::int32_t{1}, noun), "1 node");
  EXPECT_EQ(Plural(std::size_t{12}, std::string_view("row")), "12 rows");
}

}  // namespace
}  // namespace wavepool
