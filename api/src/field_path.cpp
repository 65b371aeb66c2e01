#include "wavepool/api/field_path.h"

#include "absl/strings/str_cat.h"

namespace wavepool::api {

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
  if (path_.empty()) return absl::InvalidArgumentError(std::string(problem));
  return absl::InvalidArgumentError(absl::StrCat(path_, ": ", std::string(problem)));
}

}  // namespace wavepool::api
