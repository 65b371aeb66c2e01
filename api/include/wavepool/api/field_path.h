// FieldPath names where in a document a value lives ("spec.parallelism.amplificationLimit",
// "status.conditions[2].type"), so that every decoding and validation error can point at its field.
//
// Errors built by FieldPath::Invalid carry the path twice: in the message ("<path>: <problem>",
// what people read) and as a Status payload (what code reads: FieldPathOf), so that a manifest
// loader can map the path back to a YAML line without parsing messages.
#ifndef WAVEPOOL_API_FIELD_PATH_H_
#define WAVEPOOL_API_FIELD_PATH_H_

#include <cstddef>
#include <optional>
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
  FieldPath Index(std::size_t i) const;           // "stages" -> "stages[3]"
  FieldPath Key(std::string_view key) const;      // "labels" -> "labels[app]"

  const std::string& str() const { return path_; }
  bool empty() const { return path_.empty(); }

  // InvalidArgument "<path>: <problem>", the format every decoder and validator uses. The
  // status carries the path as a payload (see FieldPathOf).
  absl::Status Invalid(std::string_view problem) const;

 private:
  std::string path_;
};

// The field path an error from FieldPath::Invalid names, or nullopt for any other status.
std::optional<std::string> FieldPathOf(const absl::Status& status);

// `status` with "<context>: " in front of its message, keeping its code and payloads:
// WithContext(spec.gpus error, "TrainingJob default/vgg") reads
// "TrainingJob default/vgg: spec.gpus: must be >= 1, got 0". OK stays OK.
absl::Status WithContext(const absl::Status& status, std::string_view context);

// The parent of a path string: "spec.model.name" -> "spec.model", "stages[3]" -> "stages",
// "labels[app.kubernetes.io/name]" -> "labels", "spec" -> "". Brackets are matched, so keys
// holding '.' stay whole.
std::string ParentPath(std::string_view path);

}  // namespace wavepool::api

#endif  // WAVEPOOL_API_FIELD_PATH_H_
