#include "wavepool/api/field_path.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"

namespace wavepool::api {
namespace {

// Payload type URL under which FieldPath::Invalid stores the path.
constexpr char kFieldPathPayload[] = "type.wavepool.dev/wavepool.api.FieldPath";

}  // namespace

FieldPath FieldPath::Child(std::string_view field) const {
  FieldPath child;
  child.path_ = path_.empty() ? std::string(field) : absl::StrCat(path_, ".", std::string(field));
  return child;
}

FieldPath FieldPath::Index(std::size_t i) const {
  FieldPath child;
  child.path_ = absl::StrCat(path_, "[", i, "]");
  return child;
}

FieldPath FieldPath::Key(std::string_view key) const {
  FieldPath child;
  child.path_ = absl::StrCat(path_, "[", std::string(key), "]");
  return child;
}

absl::Status FieldPath::Invalid(std::string_view problem) const {
  absl::Status status =
      path_.empty() ? absl::InvalidArgumentError(std::string(problem))
                    : absl::InvalidArgumentError(absl::StrCat(path_, ": ", std::string(problem)));
  status.SetPayload(kFieldPathPayload, absl::Cord(path_));
  return status;
}

std::optional<std::string> FieldPathOf(const absl::Status& status) {
  auto payload = status.GetPayload(kFieldPathPayload);
  if (!payload.has_value()) return std::nullopt;
  return std::string(*payload);
}

absl::Status WithContext(const absl::Status& status, std::string_view context) {
  if (status.ok()) return status;
  absl::Status result(status.code(),
                      absl::StrCat(std::string(context), ": ", std::string(status.message())));
  status.ForEachPayload([&result](absl::string_view type_url, const absl::Cord& payload) {
    result.SetPayload(type_url, payload);
  });
  return result;
}

std::string ParentPath(std::string_view path) {
  // Scan for the last separator ('.' or '[') that is not inside brackets.
  int depth = 0;
  std::size_t cut = 0;
  for (std::size_t i = 0; i < path.size(); ++i) {
    char c = path[i];
    if (c == '[') {
      if (depth == 0) cut = i;
      ++depth;
    } else if (c == ']') {
      if (depth > 0) --depth;
    } else if (c == '.' && depth == 0) {
      cut = i;
    }
  }
  return std::string(path.substr(0, cut));
}

}  // namespace wavepool::api
