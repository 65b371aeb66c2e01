// Where the Kubernetes API serves wavepool's own kinds, and typed access to them: the
// wavepool.dev/v1alpha1 TrainingJob and GPUNode as kube::ResourceTypes, and the
// kube::ResourceTraits that let kube::TypedClient<api::TrainingJob> and
// kube::TypedClient<api::GpuNode> decode into the API types.
//
//   kube::TypedClient<api::GpuNode> gpu_nodes(&client);   // needs this header
//   absl::StatusOr<nlohmann::json> job = client.Get(api::kTrainingJobs, "team-a", "vgg");
//
// This is the one place where the API types (wavepool::api) meet the Kubernetes client
// (wavepool::kube), so that the client knows no CRD of wavepool's and the API types need no
// client. Plain constants; safe to share between threads.
#ifndef WAVEPOOL_API_KUBE_RESOURCES_H_
#define WAVEPOOL_API_KUBE_RESOURCES_H_

#include <string>

#include "wavepool/api/gpu_node.h"
#include "wavepool/api/object_meta.h"
#include "wavepool/api/training_job.h"
#include "wavepool/kube/resource.h"
#include "wavepool/kube/typed_client.h"

namespace wavepool::api {

// TrainingJobs are namespaced; GPUNodes, one per node, are cluster-scoped (crds/).
inline const kube::ResourceType kTrainingJobs{std::string(kGroup), std::string(kVersion),
                                              std::string(kTrainingJobKind), "trainingjobs", true};
inline const kube::ResourceType kGpuNodes{std::string(kGroup), std::string(kVersion),
                                          std::string(kGpuNodeKind), "gpunodes", false};

}  // namespace wavepool::api

namespace wavepool::kube {

template <>
struct ResourceTraits<api::TrainingJob> {
  static const ResourceType& Type() { return api::kTrainingJobs; }
};
template <>
struct ResourceTraits<api::GpuNode> {
  static const ResourceType& Type() { return api::kGpuNodes; }
};

}  // namespace wavepool::kube

#endif  // WAVEPOOL_API_KUBE_RESOURCES_H_
