#include "wavepool/base/truncate.h"

#include <string>

#include "gtest/gtest.h"

namespace wavepool {
namespace {

TEST(Utf8Prefix, KeepsTextThatFits) {
  EXPECT_EQ(Utf8Prefix("gpu", 3), "gpu");
  EXPECT_EQ(Utf8Prefix("", 0), "");
}

TEST(Utf8Prefix, CutsBeforeTheCharacterTheBoundFallsIn) {
  const std::string text = "ab\xC3\xA9z";  // "abéz": é is two bytes
  EXPECT_EQ(Utf8Prefix(text, 3), "ab");
  EXPECT_EQ(Utf8Prefix(text, 4), "ab\xC3\xA9");
  const std::string emoji = "\xF0\x9F\x9A\x80!";  // a four-byte character
  EXPECT_EQ(Utf8Prefix(emoji, 3), "");
  EXPECT_EQ(Utf8Prefix(emoji, 4), "\xF0\x9F\x9A\x80");
}

TEST(Utf8Prefix, CutsBytesThatAreNotUtf8WhereTheBoundIs) {
  EXPECT_EQ(Utf8Prefix("\xFF\xFE\xFD", 2), "\xFF\xFE");
}

TEST(Truncate, MarksTheCutAndStaysWithinTheBound) {
  EXPECT_EQ(Truncate("wavepool", 8), "wavepool");
  EXPECT_EQ(Truncate("wavepool", 7), "wave...");
  const std::string text = "\xC3\xA9\xC3\xA9\xC3\xA9";  // "ééé", six bytes
  EXPECT_EQ(Truncate(text, 4), "...");
  EXPECT_EQ(Truncate(text, 5), "\xC3\xA9...");
  EXPECT_EQ(Truncate(text, 6), text);
  EXPECT_EQ(Truncate(text + "x", 6), "\xC3\xA9...");
}

TEST(Truncate, ABoundBelowTheMarkGivesTheMarkAlone) { EXPECT_EQ(Truncate("wavepool", 2), "..."); }

}  // namespace
}  // namespace wavepool
