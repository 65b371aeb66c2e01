// FieldPath names where in a document a value lives ("spec.parallelism.amplificationLimit",
// "status.conditions[2].type"), so that every validation error can point at its field.
#ifndef WAVEPOOL_API_FIELD_PATH_H_
#define WAVEPOOL_API_FIELD_PATH_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace wavepool::api {

// A value type; cheap to copy for the shallow documents it names.
class FieldPath {
 public:
  FieldPath() = default;
  explicit FieldPath(std::string_view root) : path_(root) {}

  FieldPath Child(std::string_view field) const;  // "spec" -> "spec.gpus"
  FieldPath Index(std::size_t i) const;            // "stages" -> "stages[3]"
  FieldPath Key(std::string_view key) const;       // "labels" -> "labels[app]"

  const std::string& str() const { return path_; }
  bool empty() const { return path_.empty(); }

  // InvalidArgument "<path>: <problem>", the format every validator uses.
  absl::Status Invalid(std::string_view problem) const;

 private:
  std::string path_;
};

}  // namespace wavepool::api

#endif  // WAVEPOOL_API_FIELD_PATH_H_
