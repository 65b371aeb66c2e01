// Pieces of StructuralSchema shared between its sources. Internal to the test API server.
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_STRUCTURAL_INTERNAL_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_STRUCTURAL_INTERNAL_H_

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/support/apiserver/api_status.h"

namespace wavepool::testing::apiserver::structural {

// Appends `value`'s violations of the schema node `schema` to `causes`; `path` is the value's
// field path ("" at the root, "spec.gpus" below).
void ValidateValue(const nlohmann::json& value, const nlohmann::json& schema,
                   const std::string& path, std::vector<FieldCause>& causes);

// x-kubernetes-validations (validation_rules.cpp). CheckRules appends what is wrong with the
// rules of the node `schema` itself (not of its children): a rule's shape, message, reason and
// fieldPath, and its compilation with `self` of that node; `path` is the node's path in the CRD
// ("spec.versions[0].schema.openAPIV3Schema.properties[spec]").
void CheckRules(const nlohmann::json& schema, const std::string& path,
                std::vector<FieldCause>& causes);
// Whether any node under `schema` (itself included) carries rules.
bool HasRules(const nlohmann::json& schema);
// Evaluates the rules of every node under `schema` for the value there (absent and null values
// are skipped; each item of an array), appending a cause for each rule that is false or fails.
// `old`: the stored object's value at the same path, if any; a value equal to it is skipped
// with everything under it (StructuralSchema::Validate: ratcheting).
// REQUIRES: `value` passed ValidateValue against `schema` without type errors.
void EvaluateRules(const nlohmann::json& value, const nlohmann::json& schema,
                   const std::string& path, const nlohmann::json* old,
                   std::vector<FieldCause>& causes);

// Keyword helpers over a schema node (a JSON object).
bool Flag(const nlohmann::json& schema, const char* keyword);  // a `true` boolean keyword
std::string TypeOf(const nlohmann::json& schema);              // "" when absent
const nlohmann::json* Sub(const nlohmann::json& schema, const char* keyword);  // object or null

}  // namespace wavepool::testing::apiserver::structural

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_STRUCTURAL_INTERNAL_H_
