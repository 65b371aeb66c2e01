// FakeCluster's store (fake_cluster.h): setting the scene, acting as the kubelet, inspecting,
// fault injection and the ClusterReader reads. The writes are in fake_cluster_writes.cpp.
#include "tests/controller/fake_cluster.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tests/controller/fake_cluster_internal.h"
#include "wavepool/api/object_key.h"
#include "wavepool/controller/owned_objects.h"
#include "wavepool/kube/api_error.h"

namespace wavepool::controller {
namespace fake_cluster_internal {

using nlohmann::json;

std::string Key(std::string_view ns, std::string_view name) {
  return api::ObjectKey{std::string(ns), std::string(name)}.ToString();
}

absl::Status ApiError(int code, std::string_view reason, const std::string& message,
                      std::string_view request) {
  const json body = {{"kind", "Status"},   {"apiVersion", "v1"}, {"status", "Failure"},
                     {"message", message}, {"reason", reason},   {"code", code}};
  return kube::ApiErrorFromResponse(code, body.dump(), request);
}

absl::Status NotFound(std::string_view resource, std::string_view name, std::string_view request) {
  return ApiError(404, "NotFound",
                  absl::StrCat(std::string(resource), " \"", std::string(name), "\" not found"),
                  request);
}

absl::Status Conflict(std::string_view resource, std::string_view name, std::string_view request) {
  return ApiError(409, "Conflict",
                  absl::StrCat("Operation cannot be fulfilled on ", std::string(resource), " \"",
                               std::string(name),
                               "\": the object has been modified; please apply your changes to "
                               "the latest version and try again"),
                  request);
}

json& Meta(json& object) {
  if (!object.contains("metadata") || !object["metadata"].is_object()) {
    object["metadata"] = json::object();
  }
  return object["metadata"];
}

}  // namespace fake_cluster_internal

using fake_cluster_internal::Key;
using fake_cluster_internal::Meta;
using fake_cluster_internal::NotFound;
using nlohmann::json;

FakeCluster::FakeCluster(Clock& clock) : clock_(clock) {}

std::string FakeCluster::Now() const { return api::FormatRfc3339(clock_.WallNow()); }

std::string FakeCluster::NextResourceVersion() { return absl::StrCat(++resource_version_); }

absl::Status FakeCluster::NextWrite() {
  ++write_attempts_;
  const auto fault = faults_.find(write_attempts_);
  if (fault == faults_.end()) return absl::OkStatus();
  absl::Status status = fault->second;
  faults_.erase(fault);
  return status;
}

void FakeCluster::FailNthWrite(int n, absl::Status status) {
  absl::MutexLock lock(&mu_);
  faults_[write_attempts_ + n] = std::move(status);
}

void FakeCluster::ValidatePods(PodValidation validation) {
  absl::MutexLock lock(&mu_);
  pod_validation_ = std::move(validation);
}

std::int64_t FakeCluster::refused_pod_creations() const {
  absl::MutexLock lock(&mu_);
  return refused_pod_creations_;
}

void FakeCluster::LoseNextPlacementWriteResponse(absl::Status status) {
  absl::MutexLock lock(&mu_);
  lost_placement_response_ = std::move(status);
}

void FakeCluster::FreezeJobView(std::string_view ns, std::string_view name) {
  absl::MutexLock lock(&mu_);
  const auto it = jobs_.find(Key(ns, name));
  if (it != jobs_.end()) frozen_jobs_[it->first] = it->second;
  job_changes_.Record(Key(ns, name));
}

void FakeCluster::ThawJobView(std::string_view ns, std::string_view name) {
  absl::MutexLock lock(&mu_);
  frozen_jobs_.erase(Key(ns, name));
  job_changes_.Record(Key(ns, name));
}

api::TrainingJob FakeCluster::StoredJob(std::string_view ns, std::string_view name) const {
  absl::MutexLock lock(&mu_);
  return api::TrainingJob::FromJson(jobs_.at(Key(ns, name))).value();
}

api::TrainingJob FakeCluster::AddJob(api::TrainingJob job) {
  absl::MutexLock lock(&mu_);
  job.metadata.uid = absl::StrCat("uid-", ++uid_counter_, "-", job.metadata.name);
  job.metadata.generation = 1;
  job.metadata.resource_version = NextResourceVersion();
  if (job.metadata.creation_timestamp.empty()) job.metadata.creation_timestamp = Now();
  jobs_[Key(job.metadata.namespace_, job.metadata.name)] = api::ToJson(job);
  job_changes_.Record(Key(job.metadata.namespace_, job.metadata.name));
  return job;
}

absl::Status FakeCluster::EditJob(std::string_view ns, std::string_view name,
                                  const std::function<void(api::TrainingJob&)>& edit) {
  absl::MutexLock lock(&mu_);
  const auto it = jobs_.find(Key(ns, name));
  if (it == jobs_.end()) return NotFound("trainingjobs.wavepool.dev", name, "PUT");
  absl::StatusOr<api::TrainingJob> job = api::TrainingJob::FromJson(it->second);
  if (!job.ok()) return job.status();
  edit(*job);
  ++job->metadata.generation;
  job->metadata.resource_version = NextResourceVersion();
  it->second = api::ToJson(*job);
  job_changes_.Record(it->first);
  return absl::OkStatus();
}

void FakeCluster::RemoveJob(std::string_view ns, std::string_view name) {
  absl::MutexLock lock(&mu_);
  jobs_.erase(Key(ns, name));
  job_changes_.Record(Key(ns, name));
}

void FakeCluster::PutConfigMap(json config_map) {
  absl::MutexLock lock(&mu_);
  json& meta = Meta(config_map);
  meta["resourceVersion"] = NextResourceVersion();
  const std::string key = Key(meta.value("namespace", ""), meta.value("name", ""));
  config_maps_[key] = std::move(config_map);
}

void FakeCluster::RemoveConfigMap(std::string_view ns, std::string_view name) {
  absl::MutexLock lock(&mu_);
  config_maps_.erase(Key(ns, name));
}

void FakeCluster::PutGpuNode(api::GpuNode node) {
  absl::MutexLock lock(&mu_);
  StoreGpuNode(std::move(node));
}

void FakeCluster::StoreGpuNode(api::GpuNode node) {
  node.metadata.resource_version = NextResourceVersion();
  const auto it = gpu_nodes_.find(node.metadata.name);
  if (it == gpu_nodes_.end() ||
      !SamePlacementPart(PlacementPartOf(it->second), PlacementPartOf(node))) {
    gpu_node_list_.reset();
  }
  if (it == gpu_nodes_.end() || it->second.status.heartbeat_time != node.status.heartbeat_time) {
    heartbeat_changes_.Record(node.metadata.name);
  }
  gpu_nodes_[node.metadata.name] = std::move(node);
}

void FakeCluster::SetNodeState(const std::string& node, NodeState state) {
  absl::MutexLock lock(&mu_);
  node_states_[node] = state;
  node_state_map_.reset();
}

absl::Status FakeCluster::SetPodPhase(std::string_view ns, std::string_view name,
                                      std::string_view phase, std::optional<int> exit_code,
                                      std::string_view reason) {
  return EditPod(ns, name, [&](json& pod) {
    pod["status"]["phase"] = std::string(phase);
    if (exit_code.has_value()) {
      json terminated = {{"exitCode", *exit_code}};
      if (!reason.empty()) terminated["reason"] = std::string(reason);
      pod["status"]["containerStatuses"] =
          json::array({{{"name", "worker"}, {"state", {{"terminated", terminated}}}}});
    }
  });
}

absl::Status FakeCluster::EditPod(std::string_view ns, std::string_view name,
                                  const std::function<void(json&)>& edit) {
  absl::MutexLock lock(&mu_);
  const auto it = pods_.find(Key(ns, name));
  if (it == pods_.end()) return NotFound("pods", name, "PATCH");
  edit(it->second);
  Meta(it->second)["resourceVersion"] = NextResourceVersion();
  claims_.ObservePod(it->second).IgnoreError();  // An unreadable pod holds nothing.
  return absl::OkStatus();
}

void FakeCluster::RemovePod(std::string_view ns, std::string_view name) {
  absl::MutexLock lock(&mu_);
  const auto it = pods_.find(Key(ns, name));
  if (it == pods_.end()) return;
  claims_.ObservePodDeleted(it->second);
  pods_.erase(it);
}

void FakeCluster::FinishTerminatingPods() {
  absl::MutexLock lock(&mu_);
  for (auto it = pods_.begin(); it != pods_.end();) {
    if (!Meta(it->second).contains("deletionTimestamp")) {
      ++it;
      continue;
    }
    claims_.ObservePodDeleted(it->second);
    it = pods_.erase(it);
  }
}

std::optional<json> FakeCluster::GetPod(std::string_view ns, std::string_view name) const {
  absl::MutexLock lock(&mu_);
  const auto it = pods_.find(Key(ns, name));
  if (it == pods_.end()) return std::nullopt;
  return it->second;
}

bool FakeCluster::PodTerminating(std::string_view ns, std::string_view name) const {
  const std::optional<json> pod = GetPod(ns, name);
  return pod.has_value() && (*pod)["metadata"].contains("deletionTimestamp");
}

std::vector<json> FakeCluster::AllPods() const {
  absl::MutexLock lock(&mu_);
  std::vector<json> pods;
  for (const auto& [key, pod] : pods_) pods.push_back(pod);
  return pods;
}

std::vector<json> FakeCluster::AllServices() const {
  absl::MutexLock lock(&mu_);
  std::vector<json> services;
  for (const auto& [key, service] : services_) services.push_back(service);
  return services;
}

void FakeCluster::RemoveService(std::string_view ns, std::string_view name) {
  absl::MutexLock lock(&mu_);
  services_.erase(Key(ns, name));
}

std::vector<FakeCluster::RecordedEvent> FakeCluster::Events() const {
  absl::MutexLock lock(&mu_);
  return events_;
}

std::vector<FakeCluster::RecordedEvent> FakeCluster::EventsWithReason(
    std::string_view reason) const {
  std::vector<RecordedEvent> found;
  for (RecordedEvent& e : Events()) {
    if (e.reason == reason) found.push_back(std::move(e));
  }
  return found;
}

std::int64_t FakeCluster::writes() const {
  absl::MutexLock lock(&mu_);
  return writes_;
}

std::int64_t FakeCluster::status_writes() const {
  absl::MutexLock lock(&mu_);
  return status_writes_;
}

std::optional<api::TrainingJob> FakeCluster::GetJob(std::string_view ns,
                                                    std::string_view name) const {
  absl::MutexLock lock(&mu_);
  const std::string key = Key(ns, name);
  const auto frozen = frozen_jobs_.find(key);
  const auto stored = jobs_.find(key);
  if (frozen == frozen_jobs_.end() && stored == jobs_.end()) return std::nullopt;
  absl::StatusOr<api::TrainingJob> job =
      api::TrainingJob::FromJson(frozen != frozen_jobs_.end() ? frozen->second : stored->second);
  if (!job.ok()) return std::nullopt;
  return *job;
}

JobChanges FakeCluster::JobChangesSince(std::uint64_t version) const {
  absl::MutexLock lock(&mu_);
  JobChanges changes;
  changes.version = job_changes_.version();
  std::optional<std::vector<std::string>> keys = job_changes_.KeysSince(version);
  changes.complete = !keys.has_value();
  if (changes.complete) {
    keys.emplace();
    for (const auto& [key, stored] : jobs_) keys->push_back(key);
  }
  for (std::string& key : *keys) {
    std::shared_ptr<const api::TrainingJob> now;  // As ListJobs shows it.
    if (const auto stored = jobs_.find(key); stored != jobs_.end()) {
      const auto frozen = frozen_jobs_.find(key);
      absl::StatusOr<api::TrainingJob> job = api::TrainingJob::FromJson(
          frozen != frozen_jobs_.end() ? frozen->second : stored->second);
      if (job.ok()) now = std::make_shared<const api::TrainingJob>(*std::move(job));
    }
    changes.changed.emplace_back(std::move(key), std::move(now));
  }
  return changes;
}

std::vector<api::TrainingJob> FakeCluster::ListJobs() const {
  absl::MutexLock lock(&mu_);
  std::vector<api::TrainingJob> jobs;
  for (const auto& [key, stored] : jobs_) {
    const auto frozen = frozen_jobs_.find(key);
    const json& json_job = frozen != frozen_jobs_.end() ? frozen->second : stored;
    absl::StatusOr<api::TrainingJob> job = api::TrainingJob::FromJson(json_job);
    if (job.ok()) jobs.push_back(*std::move(job));
  }
  return jobs;
}

namespace {

// The objects of `objects` in `ns` whose labels match JobSelector(job), decoded. As KubeCluster
// does, an object that does not decode is left out, with a warning naming it and the field.
template <typename T>
std::vector<T> SelectJob(const std::map<std::string, json>& objects, std::string_view ns,
                         std::string_view job, std::vector<std::string>& warnings) {
  const std::map<std::string, std::string> selector = JobSelector(job);
  std::vector<T> selected;
  for (const auto& [key, object] : objects) {
    if (key.rfind(Key(ns, ""), 0) != 0) continue;
    absl::StatusOr<T> decoded = T::FromJson(object);
    if (!decoded.ok()) {
      warnings.push_back(
          absl::StrCat(key, " left out of job ", Key(ns, job), ": ", decoded.status().message()));
      continue;
    }
    const std::map<std::string, std::string>& labels = decoded->metadata.labels;
    if (std::all_of(selector.begin(), selector.end(), [&](const auto& kv) {
          const auto found = labels.find(kv.first);
          return found != labels.end() && found->second == kv.second;
        })) {
      selected.push_back(*std::move(decoded));
    }
  }
  return selected;
}

}  // namespace

std::vector<kube::Pod> FakeCluster::PodsOfJob(std::string_view ns, std::string_view job) const {
  absl::MutexLock lock(&mu_);
  return SelectJob<kube::Pod>(pods_, ns, job, decode_warnings_);
}

std::vector<kube::Service> FakeCluster::ServicesOfJob(std::string_view ns,
                                                      std::string_view job) const {
  absl::MutexLock lock(&mu_);
  return SelectJob<kube::Service>(services_, ns, job, decode_warnings_);
}

absl::StatusOr<std::optional<kube::ConfigMap>> FakeCluster::GetConfigMap(
    std::string_view ns, std::string_view name) const {
  absl::MutexLock lock(&mu_);
  const auto it = config_maps_.find(Key(ns, name));
  if (it == config_maps_.end()) return std::optional<kube::ConfigMap>();
  absl::StatusOr<kube::ConfigMap> decoded = kube::ConfigMap::FromJson(it->second);
  if (!decoded.ok()) return decoded.status();
  return std::optional<kube::ConfigMap>(*std::move(decoded));
}

std::optional<json> FakeCluster::StoredConfigMap(std::string_view ns, std::string_view name) const {
  absl::MutexLock lock(&mu_);
  const auto it = config_maps_.find(Key(ns, name));
  if (it == config_maps_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> FakeCluster::DecodeWarnings() const {
  absl::MutexLock lock(&mu_);
  return decode_warnings_;
}

std::vector<api::GpuNode> FakeCluster::ListGpuNodes() const {
  absl::MutexLock lock(&mu_);
  std::vector<api::GpuNode> nodes;
  for (const auto& [name, node] : gpu_nodes_) nodes.push_back(node);
  return nodes;
}

std::shared_ptr<const std::vector<api::GpuNode>> FakeCluster::GpuNodes() const {
  absl::MutexLock lock(&mu_);
  if (gpu_node_list_ == nullptr) {
    auto nodes = std::make_shared<std::vector<api::GpuNode>>();
    for (const auto& [name, node] : gpu_nodes_) nodes->push_back(PlacementPartOf(node));
    gpu_node_list_ = std::move(nodes);
  }
  return gpu_node_list_;
}

HeartbeatChanges FakeCluster::GpuNodeHeartbeatsSince(std::uint64_t version) const {
  absl::MutexLock lock(&mu_);
  HeartbeatChanges changes;
  changes.version = heartbeat_changes_.version();
  std::optional<std::vector<std::string>> names = heartbeat_changes_.KeysSince(version);
  changes.complete = !names.has_value();
  if (changes.complete) {
    names.emplace();
    for (const auto& [name, node] : gpu_nodes_) names->push_back(name);
  }
  for (std::string& name : *names) {
    const auto it = gpu_nodes_.find(name);
    changes.changed.emplace_back(std::move(name), it == gpu_nodes_.end()
                                                      ? nullptr
                                                      : std::make_shared<const std::string>(
                                                            it->second.status.heartbeat_time));
  }
  return changes;
}

std::map<std::string, NodeState> FakeCluster::NodeStates() const { return *SharedNodeStates(); }

NodeStateMap FakeCluster::SharedNodeStates() const {
  absl::MutexLock lock(&mu_);
  if (node_state_map_ == nullptr) {
    auto states = std::make_shared<std::map<std::string, NodeState>>(node_states_);
    for (auto& [name, state] : *states) state.heartbeat_fresh = false;  // The reconciler decides.
    node_state_map_ = std::move(states);
  }
  return node_state_map_;
}

std::vector<GpuAssignment> FakeCluster::Assignments() const { return claims_.PodAssignments(); }

AssignmentChanges FakeCluster::AssignmentChangesSince(std::uint64_t version) const {
  return claims_.PodChangesSince(version);
}

}  // namespace wavepool::controller
