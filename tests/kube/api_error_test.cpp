#include "wavepool/kube/api_error.h"

#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool::kube {
namespace {

using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return R"({"kind":"Status","apiVersion":"v1","status":"Failure","code":)" + std::to_string(code) +
         R"(,"reason":")" + reason + R"(","message":")" + message + R"("})";
}

TEST(ApiError, MapsEachReasonOfTheTable) {
  struct Row {
    int code;
    const char* reason;
    absl::StatusCode expected;
  };
  const Row rows[] = {
      {400, "BadRequest", absl::StatusCode::kInvalidArgument},
      {401, "Unauthorized", absl::StatusCode::kUnauthenticated},
      {403, "Forbidden", absl::StatusCode::kPermissionDenied},
      {404, "NotFound", absl::StatusCode::kNotFound},
      {405, "MethodNotAllowed", absl::StatusCode::kUnimplemented},
      {409, "AlreadyExists", absl::StatusCode::kAlreadyExists},
      {409, "Conflict", absl::StatusCode::kAborted},
      {410, "Gone", absl::StatusCode::kOutOfRange},
      {410, "Expired", absl::StatusCode::kOutOfRange},
      {415, "UnsupportedMediaType", absl::StatusCode::kInvalidArgument},
      {422, "Invalid", absl::StatusCode::kInvalidArgument},
      {429, "TooManyRequests", absl::StatusCode::kResourceExhausted},
      {500, "InternalError", absl::StatusCode::kInternal},
      {503, "ServiceUnavailable", absl::StatusCode::kUnavailable},
      {504, "Timeout", absl::StatusCode::kDeadlineExceeded},
  };
  for (const Row& row : rows) {
    const absl::Status status =
        ApiErrorFromResponse(row.code, StatusBody(row.code, row.reason, "m"), "GET /x");
    EXPECT_EQ(status.code(), row.expected) << row.code << " " << row.reason;
    EXPECT_EQ(ReasonOf(status), row.reason);
  }
}

TEST(ApiError, MessageNamesRequestCodeReasonAndServerMessage) {
  const absl::Status status =
      ApiErrorFromResponse(404, StatusBody(404, "NotFound", "pods \\\"w-0\\\" not found"),
                           "GET /api/v1/namespaces/default/pods/w-0");
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kNotFound,
                               HasSubstr("GET /api/v1/namespaces/default/pods/w-0: HTTP 404 "
                                         "NotFound: pods \"w-0\" not found")));
  EXPECT_TRUE(kube::IsNotFound(status));
  EXPECT_FALSE(IsConflict(status));
}

TEST(ApiError, KeepsDetailsCausesAndRetryAfter) {
  const absl::Status status =
      ApiErrorFromResponse(422, R"({
    "kind":"Status","apiVersion":"v1","status":"Failure","code":422,"reason":"Invalid",
    "message":"TrainingJob.wavepool.dev \"vgg\" is invalid",
    "details":{"group":"wavepool.dev","kind":"TrainingJob","name":"vgg","retryAfterSeconds":3,
               "causes":[{"reason":"FieldValueInvalid","message":"must be >= 1","field":"spec.gpus"}]}
  })",
                           "POST /apis/wavepool.dev/v1alpha1/namespaces/default/trainingjobs");
  ASSERT_TRUE(IsInvalid(status));
  const std::optional<ApiStatus> api = ApiStatusOf(status);
  ASSERT_TRUE(api.has_value());
  EXPECT_EQ(api->code, 422);
  EXPECT_EQ(api->group, "wavepool.dev");
  EXPECT_EQ(api->kind, "TrainingJob");
  EXPECT_EQ(api->name, "vgg");
  EXPECT_EQ(api->retry_after_seconds, 3);
  ASSERT_EQ(api->causes.size(), 1u);
  EXPECT_EQ(api->causes[0].type, "FieldValueInvalid");
  EXPECT_EQ(api->causes[0].field, "spec.gpus");
  EXPECT_EQ(api->causes[0].message, "must be >= 1");
}

TEST(ApiError, NonStatusBodyGetsTheReasonFromTheCode) {
  const absl::Status status = ApiErrorFromResponse(503, "<html>upstream down</html>", "GET /api");
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kUnavailable, HasSubstr("upstream down")));
  EXPECT_EQ(ReasonOf(status), "ServiceUnavailable");
  const absl::Status empty = ApiErrorFromResponse(409, "", "PUT /api/v1/nodes/n");
  EXPECT_THAT(empty, StatusIs(absl::StatusCode::kAborted, HasSubstr("without a body")));
  EXPECT_TRUE(IsConflict(empty));
  EXPECT_EQ(ApiStatusOf(empty)->code, 409);
}

TEST(ApiError, TooManyRequestsAndForbiddenAndGone) {
  EXPECT_TRUE(IsTooManyRequests(ApiErrorFromResponse(429, "", "GET /api")));
  EXPECT_TRUE(IsForbidden(ApiErrorFromResponse(403, "", "GET /api")));
  EXPECT_TRUE(IsGone(ApiErrorFromResponse(410, StatusBody(410, "Expired", "too old"), "watch")));
  EXPECT_TRUE(IsGone(ApiErrorFromResponse(410, "", "watch")));
}

TEST(ApiError, AlreadyExistsIsNotConflict) {
  const absl::Status exists =
      ApiErrorFromResponse(409, StatusBody(409, "AlreadyExists", "exists"), "POST /x");
  EXPECT_TRUE(kube::IsAlreadyExists(exists));
  EXPECT_FALSE(IsConflict(exists));
  const absl::Status conflict =
      ApiErrorFromResponse(409, StatusBody(409, "Conflict", "modified"), "PUT /x");
  EXPECT_TRUE(IsConflict(conflict));
  EXPECT_FALSE(kube::IsAlreadyExists(conflict));
}

TEST(ApiError, UnknownReasonFallsBackToTheCode) {
  // client-go's rule: a reason it does not know leaves the decision to the HTTP code.
  const absl::Status status =
      ApiErrorFromResponse(404, StatusBody(404, "SomethingNew", "gone fishing"), "GET /x");
  EXPECT_TRUE(kube::IsNotFound(status));
  // A known reason decides even when the code disagrees.
  const absl::Status mismatched =
      ApiErrorFromResponse(404, StatusBody(404, "Forbidden", "no"), "GET /x");
  EXPECT_FALSE(kube::IsNotFound(mismatched));
  EXPECT_TRUE(IsForbidden(mismatched));
}

TEST(ApiError, OtherStatusesCarryNoApiStatus) {
  const absl::Status plain = absl::UnavailableError("connection refused");
  EXPECT_FALSE(ApiStatusOf(plain).has_value());
  EXPECT_EQ(ReasonOf(plain), "");
  EXPECT_FALSE(kube::IsNotFound(plain));
  EXPECT_FALSE(kube::IsNotFound(absl::NotFoundError("not from the API")));
  EXPECT_FALSE(IsGone(absl::OkStatus()));
}

}  // namespace
}  // namespace wavepool::kube
