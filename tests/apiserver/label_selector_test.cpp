#include "tests/support/apiserver/label_selector.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::apiserver {
namespace {

using ::testing::HasSubstr;

bool Selects(const std::string& selector, const nlohmann::json& labels) {
  absl::StatusOr<LabelSelector> parsed = LabelSelector::Parse(selector);
  EXPECT_TRUE(parsed.ok()) << selector << ": " << parsed.status();
  return parsed.ok() && parsed->Matches(labels);
}

const nlohmann::json kWeb = {{"app", "web"}, {"tier", "front"}, {"replicas", "3"}};

TEST(LabelSelector, EmptySelectsEverything) {
  EXPECT_TRUE(Selects("", kWeb));
  EXPECT_TRUE(Selects("", nullptr));
}

TEST(LabelSelector, EqualityOperators) {
  EXPECT_TRUE(Selects("app=web", kWeb));
  EXPECT_TRUE(Selects("app==web", kWeb));
  EXPECT_FALSE(Selects("app=db", kWeb));
  EXPECT_TRUE(Selects("app!=db", kWeb));
  EXPECT_FALSE(Selects("app!=web", kWeb));
  EXPECT_TRUE(Selects("missing!=x", kWeb));  // != holds for an absent label
  EXPECT_TRUE(Selects("app=web,tier=front", kWeb));
  EXPECT_FALSE(Selects("app=web,tier=back", kWeb));
  EXPECT_TRUE(Selects(" app = web , tier == front ", kWeb));
}

TEST(LabelSelector, SetOperators) {
  EXPECT_TRUE(Selects("app in (db, web)", kWeb));
  EXPECT_FALSE(Selects("app in (db)", kWeb));
  EXPECT_TRUE(Selects("app notin (db)", kWeb));
  EXPECT_FALSE(Selects("app notin (db,web)", kWeb));
  EXPECT_TRUE(Selects("missing notin (x)", kWeb));
  EXPECT_FALSE(Selects("missing in (x)", kWeb));
  EXPECT_TRUE(Selects("app in (web),tier notin (back)", kWeb));
}

TEST(LabelSelector, ExistenceOperators) {
  EXPECT_TRUE(Selects("app", kWeb));
  EXPECT_FALSE(Selects("!app", kWeb));
  EXPECT_TRUE(Selects("!missing", kWeb));
  EXPECT_FALSE(Selects("missing", kWeb));
  EXPECT_TRUE(Selects("app,!missing", kWeb));
}

TEST(LabelSelector, NumericComparisons) {
  EXPECT_TRUE(Selects("replicas>2", kWeb));
  EXPECT_FALSE(Selects("replicas>3", kWeb));
  EXPECT_TRUE(Selects("replicas<4", kWeb));
  EXPECT_FALSE(Selects("app>1", kWeb));  // not a number: no match
}

TEST(LabelSelector, PrefixedKeysAndEmptyValues) {
  const nlohmann::json labels = {{"example.com/role", "gpu"}, {"empty", ""}};
  EXPECT_TRUE(Selects("example.com/role=gpu", labels));
  EXPECT_TRUE(Selects("empty=", labels));
  EXPECT_TRUE(Selects("empty in (a,)", labels));
}

TEST(LabelSelector, SyntaxErrorsSayWhatWasExpected) {
  EXPECT_THAT(LabelSelector::Parse("app in web"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unable to parse requirement: found 'web', expected: '('")));
  EXPECT_THAT(LabelSelector::Parse("app in (web"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected: ',', ')'")));
  EXPECT_THAT(LabelSelector::Parse("=web"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected: identifier")));
  EXPECT_THAT(LabelSelector::Parse("app=web=x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected: ','")));
  EXPECT_THAT(LabelSelector::Parse("replicas>two"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be an integer")));
  EXPECT_THAT(LabelSelector::Parse("!app=web"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("found '='")));
  EXPECT_THAT(LabelSelector::Parse("app in ()"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("can't be empty")));
  EXPECT_THAT(LabelSelector::Parse("app,"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("found 'end of string'")));
}

TEST(LabelSelector, InvalidKeysAndValuesAreRejected) {
  EXPECT_THAT(LabelSelector::Parse("-app=web"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("name part must")));
  EXPECT_THAT(LabelSelector::Parse("app=-web"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a valid label must")));
  EXPECT_THAT(LabelSelector::Parse(std::string("app=") + std::string(64, 'a')),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no more than 63")));
}

}  // namespace
}  // namespace wavepool::testing::apiserver
