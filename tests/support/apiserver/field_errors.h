// Field causes worded as kube-apiserver words them (k8s.io/apimachinery field.Error.ErrorBody):
// "Required value", "Invalid value: 0: spec.gpus in body should be ...",
// "Unsupported value: \"Foo\": supported values: \"A\", \"B\"", "Too long: ...", "Too many: ...".
// Internal to the test API server's schema code.
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_FIELD_ERRORS_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_FIELD_ERRORS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/support/apiserver/api_status.h"

namespace wavepool::testing::apiserver::field_errors {

// Field paths as field.Path prints them: "spec.gpus", "spec.items[2]", "properties[spec]".
std::string Child(const std::string& path, std::string_view name);
std::string Index(const std::string& path, size_t index);
std::string Key(const std::string& path, std::string_view key);

// Go's strconv.Quote (what %q prints) for `text`.
std::string GoQuote(std::string_view text);
// Go's %v of a JSON number: integers in decimal (the server decodes them as int64), floats in
// the shortest form that round-trips, with an exponent below 1e-4 and from 1e6 on ("1.5",
// "1e+06", "1.5e-05").
std::string GoNumber(const nlohmann::json& number);
// A bad value as ErrorBody prints it: strings quoted, numbers and booleans bare, null as "null"
// (quoted), objects and arrays as compact JSON.
std::string GoValue(const nlohmann::json& value);

// The causes; `detail` follows the value after ": " when non-empty.
FieldCause Required(std::string field, std::string_view detail);
FieldCause Forbidden(std::string field, std::string_view detail);
FieldCause Invalid(std::string field, const nlohmann::json& value, std::string_view detail);
FieldCause TypeInvalid(std::string field, const nlohmann::json& value, std::string_view detail);
FieldCause NotSupported(std::string field, const nlohmann::json& value,
                        const std::vector<std::string>& supported);
FieldCause TooLong(std::string field, int64_t max_length);
FieldCause TooMany(std::string field, int64_t actual, int64_t max_items);
// `rendered` is the duplicate as Go's %#v prints it.
FieldCause Duplicate(std::string field, std::string_view rendered);

// "field: message" for one cause, "[a: x, b: y]" for several (utilerrors.Aggregate).
std::string JoinCauses(const std::vector<FieldCause>& causes);

}  // namespace wavepool::testing::apiserver::field_errors

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_FIELD_ERRORS_H_
