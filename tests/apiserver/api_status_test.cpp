#include "tests/support/apiserver/api_status.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool::testing::apiserver {
namespace {

using ::testing::HasSubstr;

TEST(ApiStatus, NotFoundHasTheRealServersBody) {
  absl::Status status = NotFoundFailure("pods", "x");
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kNotFound, "pods \"x\" not found"));
  EXPECT_EQ(HttpCodeOf(status), 404);
  const nlohmann::json expected = nlohmann::json::parse(R"({
    "kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
    "message":"pods \"x\" not found","reason":"NotFound",
    "details":{"name":"x","kind":"pods"},"code":404})");
  EXPECT_EQ(StatusBodyOf(status), expected);
}

TEST(ApiStatus, GroupedResourceSplitsGroupIntoDetails) {
  absl::Status status = NotFoundFailure("trainingjobs.wavepool.dev", "a");
  EXPECT_EQ(status.message(), "trainingjobs.wavepool.dev \"a\" not found");
  const nlohmann::json body = StatusBodyOf(status);
  EXPECT_EQ(body["details"]["group"], "wavepool.dev");
  EXPECT_EQ(body["details"]["kind"], "trainingjobs");
}

TEST(ApiStatus, AlreadyExistsAndConflictShare409WithDifferentCodes) {
  absl::Status exists = AlreadyExistsFailure("configmaps", "c");
  EXPECT_THAT(exists,
              StatusIs(absl::StatusCode::kAlreadyExists, "configmaps \"c\" already exists"));
  EXPECT_EQ(HttpCodeOf(exists), 409);
  EXPECT_EQ(StatusBodyOf(exists)["reason"], "AlreadyExists");

  absl::Status conflict = ConflictFailure("pods", "x", "the object has been modified");
  EXPECT_THAT(conflict, StatusIs(absl::StatusCode::kAborted,
                                 "Operation cannot be fulfilled on pods \"x\": "
                                 "the object has been modified"));
  EXPECT_EQ(HttpCodeOf(conflict), 409);
  EXPECT_EQ(StatusBodyOf(conflict)["reason"], "Conflict");
}

TEST(ApiStatus, InvalidWithOneCauseHasNoBrackets) {
  absl::Status status = InvalidFailure(
      "TrainingJob", "wavepool.dev", "a",
      {{"FieldValueInvalid", "spec.gpus",
        "Invalid value: 0: spec.gpus in body should be greater than or equal to 1"}});
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument,
                               "TrainingJob.wavepool.dev \"a\" is invalid: spec.gpus: Invalid "
                               "value: 0: spec.gpus in body should be greater than or equal to 1"));
  EXPECT_EQ(HttpCodeOf(status), 422);
  const nlohmann::json body = StatusBodyOf(status);
  EXPECT_EQ(body["reason"], "Invalid");
  EXPECT_EQ(body["details"]["kind"], "TrainingJob");
  EXPECT_EQ(body["details"]["group"], "wavepool.dev");
  ASSERT_EQ(body["details"]["causes"].size(), 1u);
  EXPECT_EQ(body["details"]["causes"][0]["reason"], "FieldValueInvalid");
  EXPECT_EQ(body["details"]["causes"][0]["field"], "spec.gpus");
}

TEST(ApiStatus, InvalidWithSeveralCausesIsBracketedAndCoreKindUnqualified) {
  absl::Status status =
      InvalidFailure("Pod", "", "bad_name",
                     {{"FieldValueInvalid", "metadata.name", "Invalid value: \"bad_name\": nope"},
                      {"FieldValueRequired", "spec.containers", "Required value"}});
  EXPECT_EQ(status.message(),
            "Pod \"bad_name\" is invalid: [metadata.name: Invalid value: \"bad_name\": nope, "
            "spec.containers: Required value]");
  EXPECT_FALSE(StatusBodyOf(status)["details"].contains("group"));
  EXPECT_EQ(StatusBodyOf(status)["details"]["causes"].size(), 2u);
}

TEST(ApiStatus, OtherFailuresMapToTheirHttpCodes) {
  EXPECT_EQ(HttpCodeOf(BadRequestFailure("x")), 400);
  EXPECT_EQ(StatusBodyOf(BadRequestFailure("x"))["reason"], "BadRequest");
  EXPECT_THAT(ExpiredFailure("too old resource version: 5 (12)"),
              StatusIs(absl::StatusCode::kOutOfRange, "too old resource version: 5 (12)"));
  EXPECT_EQ(HttpCodeOf(ExpiredFailure("e")), 410);
  EXPECT_EQ(StatusBodyOf(ExpiredFailure("e"))["reason"], "Expired");
  EXPECT_EQ(HttpCodeOf(MethodNotAllowedFailure("m")), 405);
  EXPECT_THAT(MethodNotAllowedFailure("m"), StatusIs(absl::StatusCode::kUnimplemented, "m"));
  EXPECT_EQ(HttpCodeOf(UnsupportedMediaTypeFailure("u")), 415);
  EXPECT_EQ(HttpCodeOf(ApiFailure(403, "Forbidden", "no")), 403);
  EXPECT_THAT(ApiFailure(403, "Forbidden", "no"),
              StatusIs(absl::StatusCode::kPermissionDenied, "no"));
  EXPECT_THAT(ApiFailure(429, "TooManyRequests", "slow"),
              StatusIs(absl::StatusCode::kResourceExhausted, "slow"));
  EXPECT_THAT(ApiFailure(503, "ServiceUnavailable", "later"),
              StatusIs(absl::StatusCode::kUnavailable, "later"));
}

TEST(ApiStatus, PlainStatusIsAnInternalError) {
  const absl::Status plain = absl::InternalError("disk full");
  EXPECT_EQ(HttpCodeOf(plain), 500);
  const nlohmann::json body = StatusBodyOf(plain);
  EXPECT_EQ(body["code"], 500);
  EXPECT_EQ(body["reason"], "InternalError");
  EXPECT_THAT(body["message"].get<std::string>(), HasSubstr("disk full"));
  EXPECT_EQ(HttpCodeOf(absl::OkStatus()), 200);
}

TEST(ApiStatus, EmptyDetailsAreOmitted) {
  EXPECT_FALSE(StatusBodyOf(ApiFailure(400, "BadRequest", "x")).contains("details"));
}

}  // namespace
}  // namespace wavepool::testing::apiserver
