// The GPUNode CRD for the agent's tests against the test API server: always the project's own
// (crds/), never the permissive stand-in WavepoolCrd falls back to when the file is missing, so
// that a status the real API server would refuse (a negative headroomBytes, a namespace breaking
// the pattern) is refused here too and a test of the publisher can fail.
#ifndef WAVEPOOL_TESTS_AGENT_GPUNODE_CRD_H_
#define WAVEPOOL_TESTS_AGENT_GPUNODE_CRD_H_

#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tests/support/cluster/crds.h"

namespace wavepool::agent::gpunode_testing {

// crds/gpunodes.wavepool.dev.yaml as one CRD object; NotFound when the file is missing.
inline absl::StatusOr<nlohmann::json> ProjectGpuNodeCrd() {
  constexpr char kName[] = "gpunodes.wavepool.dev";
  const std::string path = absl::StrCat(::wavepool::testing::DefaultCrdDir(), "/", kName, ".yaml");
  if (!std::ifstream(path).good()) {
    return absl::NotFoundError(absl::StrCat(path, ": the project's GPUNode CRD is missing"));
  }
  return ::wavepool::testing::WavepoolCrd(kName);
}

}  // namespace wavepool::agent::gpunode_testing

#endif  // WAVEPOOL_TESTS_AGENT_GPUNODE_CRD_H_
