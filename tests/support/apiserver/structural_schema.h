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
// x-kubernetes-validations (CEL rules) are compiled by Check and evaluated by Validate, in the
// subset cel.h describes; a rule outside it makes Check refuse the schema. anyOf, oneOf and not
// are checked for structurality but not evaluated; allOf is evaluated.
class StructuralSchema {
 public:
  // Every reason `open_api_v3_schema` is not an acceptable CRD schema (empty when it is), as the
  // server's 422 for the CRD lists them: non-structural nodes ("type: Required value: must not be
  // empty for specified object fields"), unsupported keywords ($ref, uniqueItems: true, ...),
  // invalid patterns, defaults that fail their own schema or rules, x-kubernetes-validations
  // rules that are malformed or do not compile
  // ("...x-kubernetes-validations[0].rule: Invalid value: \"self.x\": compilation failed: ...").
  // Field paths start at `field_prefix`
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
  // string formats the real server knows are not checked). Then, unless a value had the wrong
  // type or an unsupported enum value, the x-kubernetes-validations rules of every node present:
  // `spec.gpus: Invalid value: "object": must be 1 for a Background job` (the node's path plus
  // the rule's fieldPath, its reason, its message or "failed rule: <rule>"), or an evaluation
  // error ("no such key: x evaluating rule: ..."). Messages as the real server words them.
  // (uniqueItems: true is refused by Parse, as the real server refuses it.)
  // With `old` (an update: the stored object), rules ratchet as on Kubernetes 1.30 and later
  // (CRDValidationRatcheting, KEP-4008): a node whose value equals the old object's at the same
  // path (object fields and map keys correlate; list items do not) is not evaluated, so an
  // object stored before a CRD gained a rule can still be updated, its status above all.
  std::vector<FieldCause> Validate(const nlohmann::json& object,
                                   const nlohmann::json* old = nullptr) const;

  const nlohmann::json& json() const { return schema_; }

 private:
  explicit StructuralSchema(nlohmann::json schema) : schema_(std::move(schema)) {}
  nlohmann::json schema_;
};

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_STRUCTURAL_SCHEMA_H_
