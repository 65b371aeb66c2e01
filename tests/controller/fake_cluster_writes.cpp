// FakeCluster's ClusterWriter (fake_cluster.h): creates, deletes and status updates with the
// API server's optimistic concurrency, errors and graceful pod deletion, and recorded Events.
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tests/controller/fake_cluster.h"
#include "tests/controller/fake_cluster_internal.h"
#include "wavepool/kube/api_error.h"

namespace wavepool::controller {

using fake_cluster_internal::ApiError;
using fake_cluster_internal::Conflict;
using fake_cluster_internal::Key;
using fake_cluster_internal::Meta;
using fake_cluster_internal::NotFound;
using nlohmann::json;

namespace {

// The API server's answer to a DELETE whose UID precondition `uid` is not the object's.
absl::Status UidPreconditionFailed(std::string_view uid, const json& meta,
                                   std::string_view request) {
  return ApiError(409, "Conflict",
                  absl::StrCat("Precondition failed: UID in precondition: ", std::string(uid),
                               ", UID in object meta: ", meta.value("uid", "")),
                  request);
}

}  // namespace

absl::StatusOr<json> FakeCluster::StoreCreated(std::map<std::string, json>& objects,
                                               std::string_view resource, json created,
                                               std::string_view uid_prefix) {
  json& meta = Meta(created);
  const std::string name = meta.value("name", "");
  const std::string key = Key(meta.value("namespace", ""), name);
  if (objects.count(key) > 0) {
    return ApiError(409, "AlreadyExists",
                    absl::StrCat(std::string(resource), " \"", name, "\" already exists"),
                    absl::StrCat("POST ", std::string(resource)));
  }
  if (absl::Status fault = NextWrite(); !fault.ok()) return fault;
  if (!uid_prefix.empty()) {
    meta["uid"] = absl::StrCat(std::string(uid_prefix), ++uid_counter_);
    meta["creationTimestamp"] = Now();
  }
  meta["resourceVersion"] = NextResourceVersion();
  ++writes_;
  return objects[key] = std::move(created);
}

absl::StatusOr<json> FakeCluster::CreatePod(const json& pod) {
  absl::MutexLock lock(&mu_);
  if (pod_validation_) {
    if (std::optional<PodFieldError> error = pod_validation_(pod)) {
      ++refused_pod_creations_;
      const json meta = pod.value("metadata", json::object());
      return kube::ApiErrorFromResponse(
          422, InvalidPodStatus(meta.value("name", ""), *error).dump(),
          absl::StrCat("POST /api/v1/namespaces/", meta.value("namespace", ""), "/pods"));
    }
  }
  json created = pod;
  created["status"] = {{"phase", "Pending"}};
  absl::StatusOr<json> stored = StoreCreated(pods_, "pods", std::move(created), "pod-uid-");
  if (stored.ok()) claims_.ObservePod(*stored).IgnoreError();  // An unreadable pod holds nothing.
  return stored;
}

absl::Status FakeCluster::DeletePod(std::string_view ns, std::string_view name,
                                    std::string_view uid,
                                    std::optional<std::int64_t> grace_period_seconds) {
  absl::MutexLock lock(&mu_);
  const auto it = pods_.find(Key(ns, name));
  if (it == pods_.end()) return NotFound("pods", name, "DELETE pods");
  json& meta = Meta(it->second);
  if (!uid.empty() && meta.value("uid", "") != uid) {
    return UidPreconditionFailed(uid, meta, "DELETE pods");
  }
  if (absl::Status fault = NextWrite(); !fault.ok()) return fault;
  ++writes_;
  const json spec = it->second.value("spec", json::object());
  const std::int64_t grace =
      grace_period_seconds.value_or(spec.value("terminationGracePeriodSeconds", 30));
  if (grace == 0) {
    claims_.ObservePodDeleted(it->second);
    pods_.erase(it);
    return absl::OkStatus();
  }
  if (!meta.contains("deletionTimestamp")) {
    meta["deletionTimestamp"] = Now();
    meta["deletionGracePeriodSeconds"] = grace;
    meta["resourceVersion"] = NextResourceVersion();
    claims_.ObservePod(it->second).IgnoreError();
  }
  return absl::OkStatus();
}

absl::Status FakeCluster::AnnotatePod(std::string_view ns, std::string_view name,
                                      const std::map<std::string, std::string>& annotations) {
  absl::MutexLock lock(&mu_);
  const auto it = pods_.find(Key(ns, name));
  if (it == pods_.end()) return NotFound("pods", name, "PATCH pods");
  if (absl::Status fault = NextWrite(); !fault.ok()) return fault;
  json& meta = Meta(it->second);
  for (const auto& [k, v] : annotations) meta["annotations"][k] = v;
  meta["resourceVersion"] = NextResourceVersion();
  claims_.ObservePod(it->second).IgnoreError();
  ++writes_;
  return absl::OkStatus();
}

absl::StatusOr<json> FakeCluster::CreateService(const json& service) {
  absl::MutexLock lock(&mu_);
  return StoreCreated(services_, "services", service, "service-uid-");
}

absl::Status FakeCluster::DeleteService(std::string_view ns, std::string_view name,
                                        std::string_view uid) {
  absl::MutexLock lock(&mu_);
  const auto it = services_.find(Key(ns, name));
  if (it == services_.end()) return NotFound("services", name, "DELETE services");
  if (!uid.empty() && Meta(it->second).value("uid", "") != uid) {
    return UidPreconditionFailed(uid, Meta(it->second), "DELETE services");
  }
  if (absl::Status fault = NextWrite(); !fault.ok()) return fault;
  services_.erase(it);
  ++writes_;
  return absl::OkStatus();
}

absl::StatusOr<json> FakeCluster::CreateConfigMap(const json& config_map) {
  absl::MutexLock lock(&mu_);
  return StoreCreated(config_maps_, "configmaps", config_map, "");
}

absl::StatusOr<json> FakeCluster::UpdateConfigMap(const json& config_map) {
  absl::MutexLock lock(&mu_);
  json updated = config_map;
  json& meta = Meta(updated);
  const std::string name = meta.value("name", "");
  const auto it = config_maps_.find(Key(meta.value("namespace", ""), name));
  if (it == config_maps_.end()) return NotFound("configmaps", name, "PUT configmaps");
  if (meta.value("resourceVersion", "") != Meta(it->second).value("resourceVersion", "")) {
    return Conflict("configmaps", name, "PUT configmaps");
  }
  if (absl::Status fault = NextWrite(); !fault.ok()) return fault;
  meta["resourceVersion"] = NextResourceVersion();
  it->second = updated;
  ++writes_;
  return updated;
}

absl::StatusOr<api::TrainingJob> FakeCluster::UpdateJobStatus(const api::TrainingJob& job) {
  absl::MutexLock lock(&mu_);
  const std::string request =
      absl::StrCat("PUT /apis/wavepool.dev/v1alpha1/namespaces/", job.metadata.namespace_,
                   "/trainingjobs/", job.metadata.name, "/status");
  const auto it = jobs_.find(Key(job.metadata.namespace_, job.metadata.name));
  if (it == jobs_.end()) {
    return NotFound("trainingjobs.wavepool.dev", job.metadata.name, request);
  }
  if (job.metadata.resource_version != Meta(it->second).value("resourceVersion", "")) {
    return Conflict("trainingjobs.wavepool.dev", job.metadata.name, request);
  }
  if (absl::Status fault = NextWrite(); !fault.ok()) return fault;
  // The status subresource: only status changes, whatever else the object carries.
  const json status = api::ToJson(job).value("status", json::object());
  it->second["status"] = status;
  Meta(it->second)["resourceVersion"] = NextResourceVersion();
  job_changes_.Record(it->first);
  ++writes_;
  ++status_writes_;
  if (!lost_placement_response_.ok() && !job.status.placement.empty()) {
    return std::exchange(lost_placement_response_, absl::OkStatus());
  }
  absl::StatusOr<api::TrainingJob> stored = api::TrainingJob::FromJson(it->second);
  if (!stored.ok()) return stored.status();
  return *stored;
}

void FakeCluster::RecordEvent(const api::TrainingJob& job, bool warning, std::string_view reason,
                              std::string_view message) {
  absl::MutexLock lock(&mu_);
  events_.push_back(
      {api::NamespacedName(job.metadata), warning, std::string(reason), std::string(message)});
}

absl::Status FakeCluster::UpdateGpuNodeStatus(const api::GpuNode& node) {
  absl::MutexLock lock(&mu_);
  const std::string request =
      absl::StrCat("PUT /apis/wavepool.dev/v1alpha1/gpunodes/", node.metadata.name, "/status");
  const auto it = gpu_nodes_.find(node.metadata.name);
  if (it == gpu_nodes_.end()) return NotFound("gpunodes.wavepool.dev", node.metadata.name, request);
  if (node.metadata.resource_version != it->second.metadata.resource_version) {
    return Conflict("gpunodes.wavepool.dev", node.metadata.name, request);
  }
  if (absl::Status fault = NextWrite(); !fault.ok()) return fault;
  api::GpuNode stored = it->second;
  stored.status = node.status;  // The status subresource: only status changes.
  StoreGpuNode(std::move(stored));
  ++writes_;
  return absl::OkStatus();
}

void FakeCluster::RecordGpuNodeEvent(const api::GpuNode& node, bool warning,
                                     std::string_view reason, std::string_view message) {
  absl::MutexLock lock(&mu_);
  events_.push_back({absl::StrCat("GPUNode/", node.metadata.name), warning, std::string(reason),
                     std::string(message)});
}

}  // namespace wavepool::controller
