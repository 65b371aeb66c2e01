// Helpers for the CRD tests: the CRDs and examples read from the source tree, an object store
// serving both CRDs, and the field paths that the store's 422 answers and api's validation name.
#ifndef WAVEPOOL_TESTS_CRDS_CRD_FIXTURE_H_
#define WAVEPOOL_TESTS_CRDS_CRD_FIXTURE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/apiserver/object_store.h"

namespace wavepool::testing::crds {

inline constexpr char kTrainingJobCrdPath[] = "crds/trainingjobs.wavepool.dev.yaml";
inline constexpr char kGpuNodeCrdPath[] = "crds/gpunodes.wavepool.dev.yaml";

// The text of a file under the source tree ("examples/tiny-cpu.yaml"); empty when unreadable.
std::string ReadSourceFile(const std::string& relative_path);

// The single YAML document in a source file, as JSON (api's YAML 1.2 reader).
absl::StatusOr<nlohmann::json> LoadSourceYaml(const std::string& relative_path);

// The paths, relative to the source tree, of every .yaml file in `directory`, sorted.
std::vector<std::string> YamlFilesIn(const std::string& directory);

// The `field` of every cause of a 422 answer (metav1.Status details.causes).
std::vector<std::string> CauseFields(const absl::Status& status);

// The field path of the first error api reports for a TrainingJob manifest: decoding
// (TrainingJob::FromJson), then SetDefaults and Validate. nullopt when the manifest is valid.
std::optional<std::string> ApiErrorPath(const nlohmann::json& training_job);
// The same for a GPUNode (GpuNode::FromJson, then Validate).
std::optional<std::string> ApiGpuNodeErrorPath(const nlohmann::json& gpu_node);

// An in-memory ObjectStore with both CRDs created.
class CrdStoreTest : public ::testing::Test {
 protected:
  void SetUp() override;

  // Creates `object` (namespace from its metadata) with strict field validation.
  absl::StatusOr<apiserver::WriteResult> CreateJob(const nlohmann::json& object);
  absl::StatusOr<apiserver::WriteResult> CreateNode(const nlohmann::json& object);
  // Replaces the status of a stored object through the status subresource.
  absl::StatusOr<apiserver::WriteResult> WriteStatus(const apiserver::ResourceInfo& resource,
                                                     const std::string& ns, const std::string& name,
                                                     const nlohmann::json& status);

  std::unique_ptr<apiserver::ObjectStore> store_;
  apiserver::ResourceInfo crds_;
  apiserver::ResourceInfo jobs_;
  apiserver::ResourceInfo nodes_;
};

}  // namespace wavepool::testing::crds

#endif  // WAVEPOOL_TESTS_CRDS_CRD_FIXTURE_H_
