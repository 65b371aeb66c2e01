// What the three files of FakeCluster (fake_cluster.h) share: object keys, the API server's
// errors as kube::Client returns them, and metadata access on stored JSON. Not for tests.
#ifndef WAVEPOOL_TESTS_CONTROLLER_FAKE_CLUSTER_INTERNAL_H_
#define WAVEPOOL_TESTS_CONTROLLER_FAKE_CLUSTER_INTERNAL_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace wavepool::controller::fake_cluster_internal {

// "ns/name", the key of the fake's maps.
std::string Key(std::string_view ns, std::string_view name);

// An error as kube::Client returns it: the API server's metav1.Status behind an absl code.
absl::Status ApiError(int code, std::string_view reason, const std::string& message,
                      std::string_view request);
// 404 NotFound for `resource` `name`, as the API server words it.
absl::Status NotFound(std::string_view resource, std::string_view name, std::string_view request);
// 409 Conflict for a write on a stale resourceVersion, as the API server words it.
absl::Status Conflict(std::string_view resource, std::string_view name, std::string_view request);
// The object's metadata, created empty when missing or not an object.
nlohmann::json& Meta(nlohmann::json& object);

}  // namespace wavepool::controller::fake_cluster_internal

#endif  // WAVEPOOL_TESTS_CONTROLLER_FAKE_CLUSTER_INTERNAL_H_
