// KubeCluster's ClusterWriter: every write goes straight to the API server through kube::Client;
// the caches catch up through the informers' watches.
#include <utility>

#include "absl/strings/str_cat.h"
#include "cluster/kube_cluster_state.h"
#include "wavepool/api/kube_resources.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/controller/kube_cluster.h"
#include "wavepool/kube/resource.h"

namespace wavepool::controller {

absl::StatusOr<nlohmann::json> KubeCluster::CreatePod(const nlohmann::json& pod) {
  absl::StatusOr<nlohmann::json> created = state_->client.Create(kube::kPods, pod);
  // Counted at once: the next placement decision must not reuse these GPUs while the watch is
  // behind (cluster.h).
  if (created.ok()) state_->claims.AssumeCreated(*created);
  return created;
}

absl::Status KubeCluster::DeletePod(std::string_view ns, std::string_view name,
                                    std::string_view uid,
                                    std::optional<std::int64_t> grace_period_seconds) {
  kube::DeleteOptions options;
  options.precondition_uid = std::string(uid);
  options.grace_period_seconds = grace_period_seconds;
  return state_->client.Delete(kube::kPods, ns, name, options);
}

absl::Status KubeCluster::AnnotatePod(std::string_view ns, std::string_view name,
                                      const std::map<std::string, std::string>& annotations) {
  nlohmann::json patch = {{"metadata", {{"annotations", nlohmann::json::object()}}}};
  for (const auto& [key, value] : annotations) patch["metadata"]["annotations"][key] = value;
  return state_->client.Patch(kube::kPods, ns, name, kube::PatchType::kMerge, patch).status();
}

absl::StatusOr<nlohmann::json> KubeCluster::CreateService(const nlohmann::json& service) {
  return state_->client.Create(internal::kServices, service);
}

absl::Status KubeCluster::DeleteService(std::string_view ns, std::string_view name,
                                        std::string_view uid) {
  kube::DeleteOptions options;
  options.precondition_uid = std::string(uid);
  return state_->client.Delete(internal::kServices, ns, name, options);
}

absl::StatusOr<nlohmann::json> KubeCluster::CreateConfigMap(const nlohmann::json& config_map) {
  return state_->client.Create(kube::kConfigMaps, config_map);
}

absl::StatusOr<nlohmann::json> KubeCluster::UpdateConfigMap(const nlohmann::json& config_map) {
  return state_->client.Update(kube::kConfigMaps, config_map);
}

absl::StatusOr<api::TrainingJob> KubeCluster::UpdateJobStatus(const api::TrainingJob& job) {
  WAVEPOOL_ASSIGN_OR_RETURN(const nlohmann::json written,
                            state_->client.UpdateStatus(api::kTrainingJobs, api::ToJson(job)));
  absl::StatusOr<api::TrainingJob> decoded = api::TrainingJob::FromJson(written);
  if (!decoded.ok()) {
    return absl::InternalError(
        absl::StrCat("TrainingJob ", job.metadata.namespace_, "/", job.metadata.name,
                     ": status written, answer unreadable: ", decoded.status().message()));
  }
  return decoded;
}

void KubeCluster::RecordEvent(const api::TrainingJob& job, bool warning, std::string_view reason,
                              std::string_view message) {
  // An ObjectReference is all the recorder needs; it spares serialising the whole job.
  const nlohmann::json reference = {{"apiVersion", api::kTrainingJobs.ApiVersion()},
                                    {"kind", api::kTrainingJobs.kind},
                                    {"namespace", job.metadata.namespace_},
                                    {"name", job.metadata.name},
                                    {"uid", job.metadata.uid},
                                    {"resourceVersion", job.metadata.resource_version}};
  state_->recorder->Event(reference, warning ? kube::EventType::kWarning : kube::EventType::kNormal,
                          reason, message);
}

absl::Status KubeCluster::UpdateGpuNodeStatus(const api::GpuNode& node) {
  return state_->client.UpdateStatus(api::kGpuNodes, api::ToJson(node)).status();
}

void KubeCluster::RecordGpuNodeEvent(const api::GpuNode& node, bool warning,
                                     std::string_view reason, std::string_view message) {
  // Cluster-scoped: the recorder files the Event in namespace "default", as kubectl expects.
  const nlohmann::json reference = {{"apiVersion", api::kGpuNodes.ApiVersion()},
                                    {"kind", api::kGpuNodes.kind},
                                    {"name", node.metadata.name},
                                    {"uid", node.metadata.uid},
                                    {"resourceVersion", node.metadata.resource_version}};
  state_->recorder->Event(reference, warning ? kube::EventType::kWarning : kube::EventType::kNormal,
                          reason, message);
}

}  // namespace wavepool::controller
