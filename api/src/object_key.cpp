#include "wavepool/api/object_key.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace wavepool::api {
namespace {

absl::Status BadKey(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("object key \"", absl::string_view(text.data(), text.size()),
                   "\": want \"namespace/name\" or \"name\" (cluster-scoped), ",
                   absl::string_view(why.data(), why.size())));
}

}  // namespace

ObjectKey ObjectKey::Of(const ObjectMeta& metadata) {
  return ObjectKey{metadata.namespace_, metadata.name};
}

absl::StatusOr<ObjectKey> ObjectKey::Parse(std::string_view text) {
  if (text.empty()) return BadKey(text, "got an empty key");
  const std::size_t slashes = static_cast<std::size_t>(std::count(text.begin(), text.end(), '/'));
  if (slashes > 1) return BadKey(text, absl::StrCat("got ", slashes, " '/'"));
  const std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) return ObjectKey{"", std::string(text)};
  ObjectKey key{std::string(text.substr(0, slash)), std::string(text.substr(slash + 1))};
  if (key.namespace_.empty()) return BadKey(text, "got an empty namespace");
  if (key.name.empty()) return BadKey(text, "got an empty name");
  return key;
}

std::string ObjectKey::ToString() const {
  return namespace_.empty() ? name : absl::StrCat(namespace_, "/", name);
}

}  // namespace wavepool::api
