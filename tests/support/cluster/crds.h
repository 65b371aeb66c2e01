// The wavepool.dev CustomResourceDefinitions (TrainingJob, GPUNode) for tests that run against the
// test API server. The real definitions in crds/ are used when they exist; otherwise a minimal
// definition of each (right names and scope, status subresource, a schema that keeps every field),
// so that tests do not depend on the order in which the pieces of the project are written.
#ifndef WAVEPOOL_TESTS_SUPPORT_CLUSTER_CRDS_H_
#define WAVEPOOL_TESTS_SUPPORT_CLUSTER_CRDS_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "wavepool/kube/client.h"

namespace wavepool::testing {

// "<source dir>/crds": where the project's CRD manifests live.
std::string DefaultCrdDir();

// The CRD named `name` ("gpunodes.wavepool.dev" or "trainingjobs.wavepool.dev"): read from
// `<crd_dir>/<name>.yaml` when that file exists, the minimal definition otherwise.
// InvalidArgument for another name, or for a file that does not parse as one CRD of that name.
absl::StatusOr<nlohmann::json> WavepoolCrd(std::string_view name,
                                           std::string_view crd_dir = DefaultCrdDir());

// Creates both CRDs (an existing one is left as it is). Errors are the client's or WavepoolCrd's.
absl::Status RegisterWavepoolCrds(kube::Client& client, std::string_view crd_dir = DefaultCrdDir());

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_CLUSTER_CRDS_H_
