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
//
// x-kubernetes-validations (CEL rules) are accepted by Parse but not evaluated. anyOf, oneOf and
// not are checked for structurality but not evaluated; allOf is evaluated.
class StructuralSchema {
 public:
  // Every reason `open_api_v3_schema` is not an acceptable CRD schema (empty when it is), as the
  // server's 422 for the CRD lists them: non-structural nodes ("type: Required value: must not be
  // empty for specified object fields"), unsupported keywords ($ref, uniqueItems: true, ...),
  // invalid patterns, defaults that fail their own schema. Field paths start at `field_prefix`
  // ("spec.versions[0].schema.openAPIV3Schema") and name properties as "properties[spec]".
  static std::vector<FieldCause> Check(const nlohmann::json& open_api_v3_schema,
                                       const std::string& field_prefix = "");

  // The schema of one CRD version. InvalidArgument with Check's causes joined as the server joins
  // them ("<field>: <message>", or "[<cause>, <cause>]" for several).
  static absl::StatusOr<StructuralSchema> Parse(const nlohmann::json& open_api_v3_schema,
                                                const std::string& field_prefix = "");

  // Fills `default`s, top-down, for absent fields (and null ones that are not nullable).
  void ApplyDefaults(nlohmann::json& object) const;

  // Removes fields the schema does not declare (kept under x-kubernetes-preserve-unknown-fields;
  // apiVersion, kind and metadata's own fields always kept). Returns the removed paths
  // (".spec.colour") for strict field validation and warnings.
  std::vector<std::string> Prune(nlohmann::json& object) const;

  // Every violation: type, enum, minimum/maximum (and exclusive), multipleOf,
  // minLength/maxLength, pattern, minItems/maxItems, duplicates in x-kubernetes-list-type set and
  // map lists, required, nullable, int-or-string, additionalProperties, minProperties/
  // maxProperties, format int32/int64 (an integer past int64 fails int64, as the real server's
  // float64 decoding of it does) and date/date-time (strfmt's IsDate and IsDateTime; the other
  // string formats the real server knows are not checked). Messages as the real server words
  // them. (uniqueItems: true is refused by Parse, as the real server refuses it.)
  std::vector<FieldCause> Validate(const nlohmann::json& object) const;

  const nlohmann::json& json() const { return schema_; }

 private:
  explicit StructuralSchema(nlohmann::json schema) : schema_(std::move(schema)) {}
  nlohmann::json schema_;
};

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_STRUCTURAL_SCHEMA_H_
