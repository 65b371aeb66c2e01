#include "wavepool/kube/watch.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/base/truncate.h"
#include "wavepool/kube/api_error.h"

namespace wavepool::kube {
namespace {

std::optional<WatchEventType> ParseEventType(std::string_view type) {
  if (type == "ADDED") return WatchEventType::kAdded;
  if (type == "MODIFIED") return WatchEventType::kModified;
  if (type == "DELETED") return WatchEventType::kDeleted;
  if (type == "BOOKMARK") return WatchEventType::kBookmark;
  if (type == "ERROR") return WatchEventType::kError;
  return std::nullopt;
}

std::string Excerpt(std::string_view line) {
  constexpr std::size_t kMaxBytes = 120;
  return Truncate(line, kMaxBytes);
}

}  // namespace

absl::StatusOr<WatchEvent> DecodeWatchEvent(std::string_view line) {
  const nlohmann::json json = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) {
    return absl::InvalidArgumentError(absl::StrCat("watch event: not JSON: ", Excerpt(line)));
  }
  if (!json.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("watch event: expected a JSON object, got ", Excerpt(line)));
  }
  const auto type = json.find("type");
  if (type == json.end() || !type->is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat("watch event: type: missing or not a string in ", Excerpt(line)));
  }
  const std::optional<WatchEventType> event_type = ParseEventType(type->get<std::string>());
  if (!event_type) {
    return absl::InvalidArgumentError(absl::StrCat(
        "watch event: type: must be ADDED, MODIFIED, DELETED, BOOKMARK or ERROR, got \"",
        type->get<std::string>(), "\""));
  }
  const auto object = json.find("object");
  if (object == json.end() || !object->is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("watch event: object: missing or not an object in ", Excerpt(line)));
  }
  return WatchEvent{*event_type, *object};
}

WatchStream::WatchStream(std::unique_ptr<LineReader> reader) : reader_(std::move(reader)) {}

absl::StatusOr<std::optional<WatchEvent>> WatchStream::Next() {
  while (true) {
    WAVEPOOL_ASSIGN_OR_RETURN(std::optional<std::string> line, reader_->NextLine());
    if (!line.has_value()) return std::nullopt;
    const std::string& text = *line;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;  // keep-alive blank line
    absl::StatusOr<WatchEvent> event = DecodeWatchEvent(text);
    if (!event.ok()) {
      // A line that is not an event means the stream is corrupt: start over with a new watch.
      return absl::DataLossError(event.status().message());
    }
    if (event->type == WatchEventType::kError) {
      // The object is a metav1.Status (410 Expired when the resourceVersion is too old).
      const auto code = event->object.find("code");
      const int http_code =
          code != event->object.end() && code->is_number_integer() ? code->get<int>() : 500;
      return ApiErrorFromResponse(http_code, event->object.dump(), "watch");
    }
    return std::optional<WatchEvent>(std::move(*event));
  }
}

void WatchStream::Stop() { reader_->Cancel(); }

}  // namespace wavepool::kube
