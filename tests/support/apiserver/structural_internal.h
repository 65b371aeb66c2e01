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

// Keyword helpers over a schema node (a JSON object).
bool Flag(const nlohmann::json& schema, const char* keyword);  // a `true` boolean keyword
std::string TypeOf(const nlohmann::json& schema);              // "" when absent
const nlohmann::json* Sub(const nlohmann::json& schema, const char* keyword);  // object or null

}  // namespace wavepool::testing::apiserver::structural

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_STRUCTURAL_INTERNAL_H_
