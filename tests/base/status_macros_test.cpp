// The early-return macros: an error comes back unchanged (code, message, payload) and stops the
// function there; an OK status or a value lets it go on, with the value moved into place.
#include "wavepool/base/status_macros.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/cord.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::wavepool::testing::IsOk;
using ::wavepool::testing::StatusIs;

// Records each step it runs, so that a test sees where the function stopped.
struct Steps {
  std::vector<std::string> ran;

  absl::Status Step(const std::string& name, absl::Status result) {
    ran.push_back(name);
    return result;
  }
  template <typename T>
  absl::StatusOr<T> Value(const std::string& name, absl::StatusOr<T> result) {
    ran.push_back(name);
    return result;
  }
};

absl::Status TwoSteps(Steps& steps, absl::Status first, absl::Status second) {
  WAVEPOOL_RETURN_IF_ERROR(steps.Step("first", std::move(first)));
  WAVEPOOL_RETURN_IF_ERROR(steps.Step("second", std::move(second)));
  steps.ran.push_back("end");
  return absl::OkStatus();
}

TEST(ReturnIfError, RunsEveryStepWhenAllAreOk) {
  Steps steps;
  EXPECT_THAT(TwoSteps(steps, absl::OkStatus(), absl::OkStatus()), IsOk());
  EXPECT_THAT(steps.ran, ElementsAre("first", "second", "end"));
}

TEST(ReturnIfError, ReturnsTheFirstErrorUnchangedAndStopsThere) {
  Steps steps;
  absl::Status error = absl::NotFoundError("open /data/train.bin: No such file or directory");
  error.SetPayload("wavepool.test/detail", absl::Cord("kept"));
  const absl::Status returned =
      TwoSteps(steps, error, absl::InternalError("the second step must not run"));
  EXPECT_EQ(returned, error);  // code, message and payload
  EXPECT_EQ(returned.GetPayload("wavepool.test/detail"), absl::Cord("kept"));
  EXPECT_THAT(steps.ran, ElementsAre("first"));
}

TEST(ReturnIfError, EvaluatesItsExpressionOnce) {
  int calls = 0;
  auto call = [&calls] {
    ++calls;
    return absl::OkStatus();
  };
  auto run = [&]() -> absl::Status {
    WAVEPOOL_RETURN_IF_ERROR(call());
    return absl::OkStatus();
  };
  EXPECT_THAT(run(), IsOk());
  EXPECT_EQ(calls, 1);
}

TEST(ReturnIfError, ReturnsFromAFunctionThatReturnsStatusOr) {
  auto run = [](absl::Status check) -> absl::StatusOr<int> {
    WAVEPOOL_RETURN_IF_ERROR(check);
    return 7;
  };
  EXPECT_THAT(run(absl::OkStatus()), IsOk());
  EXPECT_EQ(*run(absl::OkStatus()), 7);
  EXPECT_THAT(run(absl::FailedPreconditionError("not yet")),
              StatusIs(absl::StatusCode::kFailedPrecondition, "not yet"));
}

TEST(ReturnIfError, IsOneStatementUnderAnIfWithoutBraces) {
  auto run = [](bool check, absl::Status status) -> absl::Status {
    if (check)
      WAVEPOOL_RETURN_IF_ERROR(status);
    else
      return absl::AbortedError("else branch");
    return absl::OkStatus();
  };
  EXPECT_THAT(run(true, absl::OkStatus()), IsOk());
  EXPECT_THAT(run(true, absl::UnavailableError("down")),
              StatusIs(absl::StatusCode::kUnavailable, "down"));
  EXPECT_THAT(run(false, absl::OkStatus()), StatusIs(absl::StatusCode::kAborted, "else branch"));
}

absl::StatusOr<int> Sum(Steps& steps, absl::StatusOr<int> a, absl::StatusOr<int> b) {
  WAVEPOOL_ASSIGN_OR_RETURN(const int first, steps.Value("a", std::move(a)));
  WAVEPOOL_ASSIGN_OR_RETURN(const int second, steps.Value("b", std::move(b)));
  steps.ran.push_back("end");
  return first + second;
}

TEST(AssignOrReturn, AssignsEachValueWhenAllAreOk) {
  Steps steps;
  absl::StatusOr<int> sum = Sum(steps, 2, 3);
  ASSERT_THAT(sum, IsOk());
  EXPECT_EQ(*sum, 5);
  EXPECT_THAT(steps.ran, ElementsAre("a", "b", "end"));
}

TEST(AssignOrReturn, ReturnsTheFirstErrorUnchangedAndStopsThere) {
  Steps steps;
  absl::Status error = absl::InvalidArgumentError("spec.gpus: must be >= 1, got 0");
  error.SetPayload("wavepool.test/detail", absl::Cord("kept"));
  absl::StatusOr<int> sum = Sum(steps, error, absl::InternalError("b must not run"));
  EXPECT_EQ(sum.status(), error);
  EXPECT_THAT(steps.ran, ElementsAre("a"));
}

TEST(AssignOrReturn, ReturnsFromAFunctionThatReturnsStatus) {
  int seen = 0;
  auto run = [&seen](absl::StatusOr<int> value) -> absl::Status {
    WAVEPOOL_ASSIGN_OR_RETURN(seen, std::move(value));  // an existing lvalue
    return absl::OkStatus();
  };
  EXPECT_THAT(run(4), IsOk());
  EXPECT_EQ(seen, 4);
  EXPECT_THAT(run(absl::DataLossError("crc mismatch")),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("crc")));
  EXPECT_EQ(seen, 4);  // left alone on error
}

TEST(AssignOrReturn, MovesAMoveOnlyValueIntoPlace) {
  auto make = [](bool ok) -> absl::StatusOr<std::unique_ptr<int>> {
    if (!ok) return absl::ResourceExhaustedError("no memory");
    return std::make_unique<int>(11);
  };
  auto run = [&make](bool ok) -> absl::StatusOr<int> {
    WAVEPOOL_ASSIGN_OR_RETURN(std::unique_ptr<int> owned, make(ok));
    return *owned;
  };
  EXPECT_EQ(*run(true), 11);
  EXPECT_THAT(run(false), StatusIs(absl::StatusCode::kResourceExhausted, "no memory"));
}

TEST(AssignOrReturn, BindsAConstReferenceThatOutlivesTheStatement) {
  auto run = []() -> absl::StatusOr<std::string> {
    WAVEPOOL_ASSIGN_OR_RETURN(const std::string& text,
                              absl::StatusOr<std::string>(std::string(64, 'x')));
    return text + "!";
  };
  absl::StatusOr<std::string> text = run();
  ASSERT_THAT(text, IsOk());
  EXPECT_EQ(*text, std::string(64, 'x') + "!");
}

TEST(AssignOrReturn, EvaluatesItsExpressionOnce) {
  int calls = 0;
  auto call = [&calls]() -> absl::StatusOr<int> { return ++calls; };
  auto run = [&]() -> absl::StatusOr<int> {
    WAVEPOOL_ASSIGN_OR_RETURN(auto value, call());
    return value;
  };
  EXPECT_EQ(*run(), 1);
  EXPECT_EQ(calls, 1);
}

TEST(AssignOrReturn, MayBeUsedInNestedScopesOfOneFunction) {
  auto run = [](absl::StatusOr<int> outer, absl::StatusOr<int> inner) -> absl::StatusOr<int> {
    WAVEPOOL_ASSIGN_OR_RETURN(int total, std::move(outer));
    for (int i = 0; i < 2; ++i) {
      WAVEPOOL_ASSIGN_OR_RETURN(const int add, inner);
      total += add;
    }
    return total;
  };
  EXPECT_EQ(*run(1, 10), 21);
  EXPECT_THAT(run(1, absl::UnavailableError("later")),
              StatusIs(absl::StatusCode::kUnavailable, "later"));
}

}  // namespace
}  // namespace wavepool
