// Name and label syntax as kube-apiserver validates it (k8s.io/apimachinery/pkg/util/validation),
// with its error wording.
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_NAMES_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_NAMES_H_

#include <string>
#include <string_view>

namespace wavepool::testing::apiserver {

// Each returns "" when `value` is valid, else the real server's explanation (without the
// `Invalid value: "x": ` prefix).
std::string CheckDns1123Subdomain(std::string_view value);  // object names: <= 253, a-z0-9 - .
std::string CheckDns1123Label(std::string_view value);      // namespace names: <= 63, a-z0-9 -
std::string CheckQualifiedName(std::string_view value);     // label keys: [prefix/]name
std::string CheckLabelValue(std::string_view value);        // label values: <= 63, may be empty

// `Invalid value: "x": <why>`, as a field error's body quotes a string value.
std::string InvalidValueBody(std::string_view value, std::string_view why);

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_NAMES_H_
