// A CustomResourceDefinition version's openAPIV3Schema, applied as kube-apiserver applies it to
// custom objects: defaults, pruning of unknown fields, and validation with field causes
// (apiextensions "structural schemas").
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_STRUCTURAL_SCHEMA_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_STRUCTURAL_SCHEMA_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tests/support/apiserver/api_status.h"

namespace wavepool::testing::apiserver {

// Immutable once parsed; safe to share between threads.
class StructuralSchema {
 public:
  // The schema of one CRD version. The causes name what makes it non-structural (a missing type,
  // ...), as the server's 422 for the CRD would; field paths start at
  // "spec.versions[i].schema.openAPIV3Schema" when `field_prefix` is that.
  static absl::StatusOr<StructuralSchema> Parse(const nlohmann::json& open_api_v3_schema,
                                                const std::string& field_prefix = "");

  // Fills `default`s, top-down, for absent fields (and null ones that are not nullable).
  void ApplyDefaults(nlohmann::json& object) const;

  // Removes fields the schema does not declare (kept under x-kubernetes-preserve-unknown-fields;
  // apiVersion, kind and metadata's own fields always kept). Returns the removed paths
  // (".spec.colour") for strict field validation and warnings.
  std::vector<std::string> Prune(nlohmann::json& object) const;

  // Every violation: type, enum, minimum/maximum (and exclusive), minLength/maxLength, pattern,
  // minItems/maxItems, uniqueItems, required, nullable, int-or-string, additionalProperties,
  // minProperties/maxProperties, format int32/int64. Messages as the real server words them.
  std::vector<FieldCause> Validate(const nlohmann::json& object) const;

  const nlohmann::json& json() const { return schema_; }

 private:
  explicit StructuralSchema(nlohmann::json schema) : schema_(std::move(schema)) {}
  nlohmann::json schema_;
};

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_STRUCTURAL_SCHEMA_H_
