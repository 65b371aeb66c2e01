#include "wavepool/base/change_log.h"

#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavepool {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Optional;

TEST(ChangeLog, ListsEachKeyChangedSinceAVersionOnceInTheOrderFirstChanged) {
  ChangeLog log;
  EXPECT_EQ(log.version(), 0u);
  EXPECT_THAT(log.KeysSince(0), Optional(IsEmpty()));
  log.Record("a");
  const auto after_a = log.version();
  log.Record("b");
  log.Record("a");
  log.Record("c");
  EXPECT_EQ(log.version(), 4u);
  EXPECT_THAT(log.KeysSince(0), Optional(ElementsAre("a", "b", "c")));
  EXPECT_THAT(log.KeysSince(after_a), Optional(ElementsAre("b", "a", "c")));
  EXPECT_THAT(log.KeysSince(log.version()), Optional(IsEmpty()));
}

TEST(ChangeLog, AVersionBeyondTheKeptChangesOrNeverGivenReachesNothing) {
  ChangeLog log(/*kept=*/2);
  log.Record("a");
  log.Record("b");
  EXPECT_THAT(log.KeysSince(0), Optional(ElementsAre("a", "b")));  // Exactly the two kept.
  log.Record("c");
  EXPECT_EQ(log.KeysSince(0), std::nullopt);  // "a" is forgotten.
  EXPECT_THAT(log.KeysSince(1), Optional(ElementsAre("b", "c")));
  EXPECT_EQ(log.KeysSince(log.version() + 1), std::nullopt);
}

}  // namespace
}  // namespace wavepool
