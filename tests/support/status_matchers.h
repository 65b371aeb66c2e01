// GoogleMock matchers for absl::Status and absl::StatusOr (Debian's abseil predates its own).
//   EXPECT_THAT(ParseX(text), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("spec.gpus")));
//   ASSERT_OK(status);  ASSERT_OK_AND_ASSIGN(auto value, StatusOrExpression());
#ifndef WAVEPOOL_TESTS_SUPPORT_STATUS_MATCHERS_H_
#define WAVEPOOL_TESTS_SUPPORT_STATUS_MATCHERS_H_

#include <ostream>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavepool::testing {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

MATCHER_P2(StatusIs, code, message_matcher,
           std::string("has status code ") + absl::StatusCodeToString(code)) {
  const absl::Status& status = ::wavepool::testing::GetStatus(arg);
  *result_listener << "whose status is " << status;
  return status.code() == code &&
         ::testing::ExplainMatchResult(message_matcher, std::string(status.message()),
                                       result_listener);
}

MATCHER(IsOk, "is OK") {
  const absl::Status& status = ::wavepool::testing::GetStatus(arg);
  *result_listener << "whose status is " << status;
  return status.ok();
}

// A StatusOr that is OK and whose value matches `value_matcher` (a matcher or a value).
MATCHER_P(IsOkAndHolds, value_matcher, "is OK and holds a matching value") {
  if (!arg.ok()) {
    *result_listener << "whose status is " << arg.status();
    return false;
  }
  return ::testing::ExplainMatchResult(value_matcher, *arg, result_listener);
}

}  // namespace wavepool::testing

#define WAVEPOOL_STATUS_CONCAT_INNER(a, b) a##b
#define WAVEPOOL_STATUS_CONCAT(a, b) WAVEPOOL_STATUS_CONCAT_INNER(a, b)

#define ASSERT_OK(expr) ASSERT_THAT(expr, ::wavepool::testing::IsOk())
#define EXPECT_OK(expr) EXPECT_THAT(expr, ::wavepool::testing::IsOk())

#define ASSERT_OK_AND_ASSIGN(lhs, expr)                                              \
  auto WAVEPOOL_STATUS_CONCAT(status_or_, __LINE__) = (expr);                        \
  ASSERT_TRUE(WAVEPOOL_STATUS_CONCAT(status_or_, __LINE__).ok())                     \
      << WAVEPOOL_STATUS_CONCAT(status_or_, __LINE__).status();                      \
  lhs = std::move(WAVEPOOL_STATUS_CONCAT(status_or_, __LINE__)).value()

#endif  // WAVEPOOL_TESTS_SUPPORT_STATUS_MATCHERS_H_
