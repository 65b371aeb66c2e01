#include "wavepool/kube/watch.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kube/scripted_transport.h"
#include "tests/support/status_matchers.h"
#include "wavepool/kube/api_error.h"

namespace wavepool::kube {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::wavepool::kube::testing::ScriptedLineReader;
using ::wavepool::testing::StatusIs;

TEST(DecodeWatchEvent, DecodesEachType) {
  ASSERT_OK_AND_ASSIGN(WatchEvent added,
                       DecodeWatchEvent(R"({"type":"ADDED","object":{"kind":"Pod"}})"));
  EXPECT_EQ(added.type, WatchEventType::kAdded);
  EXPECT_EQ(added.object["kind"], "Pod");
  EXPECT_EQ(DecodeWatchEvent(R"({"type":"MODIFIED","object":{}})")->type,
            WatchEventType::kModified);
  EXPECT_EQ(DecodeWatchEvent(R"({"type":"DELETED","object":{}})")->type, WatchEventType::kDeleted);
  EXPECT_EQ(DecodeWatchEvent(R"({"type":"BOOKMARK","object":{}})")->type,
            WatchEventType::kBookmark);
  EXPECT_EQ(DecodeWatchEvent(R"({"type":"ERROR","object":{}})")->type, WatchEventType::kError);
}

TEST(DecodeWatchEvent, RejectsLinesThatAreNotEvents) {
  EXPECT_THAT(DecodeWatchEvent("{not json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not JSON")));
  EXPECT_THAT(DecodeWatchEvent("[1]"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("JSON object")));
  EXPECT_THAT(DecodeWatchEvent(R"({"object":{}})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("type")));
  EXPECT_THAT(DecodeWatchEvent(R"({"type":"RENAMED","object":{}})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("RENAMED")));
  EXPECT_THAT(DecodeWatchEvent(R"({"type":"ADDED","object":3})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("object")));
}

// The message repeats a bounded excerpt of the line, cut between characters: a status or log
// line holding it stays valid UTF-8.
TEST(DecodeWatchEvent, RepeatsABoundedExcerptOfABadLineCutBetweenCharacters) {
  // The cut (120 bytes, less the "...") falls inside the "é".
  const std::string line = "{" + std::string(115, 'x') + "\xC3\xA9" + std::string(200, 'y');
  absl::StatusOr<WatchEvent> event = DecodeWatchEvent(line);
  ASSERT_THAT(event, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not JSON")));
  const std::string message(event.status().message());
  EXPECT_THAT(message, HasSubstr("{" + std::string(115, 'x') + "..."));
  EXPECT_THAT(message, Not(HasSubstr("\xC3")));
  EXPECT_THAT(message, Not(HasSubstr("y")));
}

WatchStream StreamOf(std::vector<std::string> lines, absl::Status end = absl::OkStatus()) {
  return WatchStream(std::make_unique<ScriptedLineReader>(std::move(lines), std::move(end)));
}

TEST(WatchStream, YieldsEventsSkipsBlankLinesThenEnds) {
  WatchStream stream =
      StreamOf({R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})", "",
                R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}})"});
  ASSERT_OK_AND_ASSIGN(std::optional<WatchEvent> first, stream.Next());
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->object["metadata"]["name"], "a");
  ASSERT_OK_AND_ASSIGN(std::optional<WatchEvent> second, stream.Next());
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->type, WatchEventType::kBookmark);
  ASSERT_OK_AND_ASSIGN(std::optional<WatchEvent> end, stream.Next());
  EXPECT_FALSE(end.has_value());
}

TEST(WatchStream, ErrorEventBecomesTheApiStatus) {
  WatchStream stream = StreamOf({
      R"json({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1",
      "status":"Failure","code":410,"reason":"Expired","message":"too old resource version: 5 (90)"}})json"});
  const auto next = stream.Next();
  EXPECT_THAT(next, StatusIs(absl::StatusCode::kOutOfRange, HasSubstr("too old resource version")));
  EXPECT_TRUE(IsGone(next.status()));
  EXPECT_EQ(ReasonOf(next.status()), "Expired");
}

TEST(WatchStream, BrokenConnectionAndCorruptLinePassThrough) {
  WatchStream broken = StreamOf({}, absl::UnavailableError("connection reset"));
  EXPECT_THAT(broken.Next(), StatusIs(absl::StatusCode::kUnavailable, HasSubstr("reset")));
  WatchStream corrupt = StreamOf({"garbage"});
  EXPECT_THAT(corrupt.Next(), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("garbage")));
}

TEST(WatchStream, StopCancelsTheStream) {
  WatchStream stream = StreamOf({R"({"type":"ADDED","object":{}})"});
  stream.Stop();
  EXPECT_THAT(stream.Next(), StatusIs(absl::StatusCode::kCancelled, HasSubstr("cancelled")));
}

}  // namespace
}  // namespace wavepool::kube
