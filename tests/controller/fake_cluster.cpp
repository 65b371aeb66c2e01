// The in-memory cluster of the reconciler tests (fake_cluster.h).
#include "tests/controller/fake_cluster.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "wavepool/controller/owned_objects.h"
#include "wavepool/kube/api_error.h"

namespace wavepool::controller {
namespace {

using nlohmann::json;

std::string Key(std::string_view ns, std::string_view name) {
  return absl::StrCat(std::string(ns), "/", std::string(name));
}

// An error as kube::Client returns it: the API server's metav1.Status behind an absl code.
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

}  // namespace

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

void FakeCluster::LoseNextPlacementWriteResponse(absl::Status status) {
  absl::MutexLock lock(&mu_);
  lost_placement_response_ = std::move(status);
}

void FakeCluster::FreezeJobView(std::string_view ns, std::string_view name) {
  absl::MutexLock lock(&mu_);
  const auto it = jobs_.find(Key(ns, name));
  if (it != jobs_.end()) frozen_jobs_[it->first] = it->second;
}

void FakeCluster::ThawJobView(std::string_view ns, std::string_view name) {
  absl::MutexLock lock(&mu_);
  frozen_jobs_.erase(Key(ns, name));
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
  return absl::OkStatus();
}

void FakeCluster::RemoveJob(std::string_view ns, std::string_view name) {
  absl::MutexLock lock(&mu_);
  jobs_.erase(Key(ns, name));
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
  node.metadata.resource_version = NextResourceVersion();
  gpu_nodes_[node.metadata.name] = std::move(node);
}

void FakeCluster::SetNodeState(const std::string& node, NodeState state) {
  absl::MutexLock lock(&mu_);
  node_states_[node] = state;
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

std::map<std::string, NodeState> FakeCluster::NodeStates() const {
  absl::MutexLock lock(&mu_);
  std::map<std::string, NodeState> states = node_states_;
  for (auto& [name, state] : states) state.heartbeat_fresh = false;  // The reconciler decides.
  return states;
}

std::vector<GpuAssignment> FakeCluster::Assignments() const { return claims_.PodAssignments(); }

absl::StatusOr<json> FakeCluster::CreatePod(const json& pod) {
  absl::MutexLock lock(&mu_);
  json created = pod;
  json& meta = Meta(created);
  const std::string name = meta.value("name", "");
  const std::string key = Key(meta.value("namespace", ""), name);
  if (pods_.count(key) > 0) {
    return ApiError(409, "AlreadyExists", absl::StrCat("pods \"", name, "\" already exists"),
                    "POST pods");
  }
  if (absl::Status fault = NextWrite(); !fault.ok()) return fault;
  meta["uid"] = absl::StrCat("pod-uid-", ++uid_counter_);
  meta["resourceVersion"] = NextResourceVersion();
  meta["creationTimestamp"] = Now();
  created["status"] = {{"phase", "Pending"}};
  pods_[key] = created;
  claims_.ObservePod(created).IgnoreError();  // An unreadable pod holds nothing.
  ++writes_;
  return created;
}

absl::Status FakeCluster::DeletePod(std::string_view ns, std::string_view name,
                                    std::string_view uid,
                                    std::optional<std::int64_t> grace_period_seconds) {
  absl::MutexLock lock(&mu_);
  const auto it = pods_.find(Key(ns, name));
  if (it == pods_.end()) return NotFound("pods", name, "DELETE pods");
  json& meta = Meta(it->second);
  if (!uid.empty() && meta.value("uid", "") != uid) {
    return ApiError(409, "Conflict",
                    absl::StrCat("Precondition failed: UID in precondition: ", std::string(uid),
                                 ", UID in object meta: ", meta.value("uid", "")),
                    "DELETE pods");
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
  json created = service;
  json& meta = Meta(created);
  const std::string name = meta.value("name", "");
  const std::string key = Key(meta.value("namespace", ""), name);
  if (services_.count(key) > 0) {
    return ApiError(409, "AlreadyExists", absl::StrCat("services \"", name, "\" already exists"),
                    "POST services");
  }
  if (absl::Status fault = NextWrite(); !fault.ok()) return fault;
  meta["uid"] = absl::StrCat("service-uid-", ++uid_counter_);
  meta["resourceVersion"] = NextResourceVersion();
  meta["creationTimestamp"] = Now();
  services_[key] = created;
  ++writes_;
  return created;
}

absl::Status FakeCluster::DeleteService(std::string_view ns, std::string_view name,
                                        std::string_view uid) {
  absl::MutexLock lock(&mu_);
  const auto it = services_.find(Key(ns, name));
  if (it == services_.end()) return NotFound("services", name, "DELETE services");
  if (!uid.empty() && Meta(it->second).value("uid", "") != uid) {
    return ApiError(409, "Conflict",
                    absl::StrCat("Precondition failed: UID in precondition: ", std::string(uid),
                                 ", UID in object meta: ", Meta(it->second).value("uid", "")),
                    "DELETE services");
  }
  if (absl::Status fault = NextWrite(); !fault.ok()) return fault;
  services_.erase(it);
  ++writes_;
  return absl::OkStatus();
}

absl::StatusOr<json> FakeCluster::CreateConfigMap(const json& config_map) {
  absl::MutexLock lock(&mu_);
  json created = config_map;
  json& meta = Meta(created);
  const std::string name = meta.value("name", "");
  const std::string key = Key(meta.value("namespace", ""), name);
  if (config_maps_.count(key) > 0) {
    return ApiError(409, "AlreadyExists", absl::StrCat("configmaps \"", name, "\" already exists"),
                    "POST configmaps");
  }
  if (absl::Status fault = NextWrite(); !fault.ok()) return fault;
  meta["resourceVersion"] = NextResourceVersion();
  config_maps_[key] = created;
  ++writes_;
  return created;
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
  it->second.status = node.status;  // The status subresource: only status changes.
  it->second.metadata.resource_version = NextResourceVersion();
  ++writes_;
  return absl::OkStatus();
}

void FakeCluster::RecordGpuNodeEvent(const api::GpuNode& node, bool warning,
                                     std::string_view reason, std::string_view message) {
  absl::MutexLock lock(&mu_);
  events_.push_back({absl::StrCat("GPUNode/", node.metadata.name), warning, std::string(reason),
                     std::string(message)});
}

FakeScene::FakeScene()
    : clock(MonotonicTime(), *api::ParseRfc3339("2026-05-01T10:00:00Z")), cluster(clock) {}

ReconcilerOptions FakeScene::Options() {
  ReconcilerOptions options;
  options.objects.default_image = "registry.example/wavepool-worker:1";
  options.clock = &clock;
  return options;
}

void FakeScene::AddNode(const std::string& name, int gpus) {
  api::GpuNode node;
  node.metadata.name = name;
  node.spec.node_name = name;
  node.status.heartbeat_time = api::FormatRfc3339(Now());
  for (int i = 0; i < gpus; ++i) {
    api::GpuStatus gpu;
    gpu.index = i;
    gpu.uuid = absl::StrCat("GPU-", name, "-", i);
    gpu.model = "NVIDIA H100 80GB HBM3";
    gpu.memory_bytes = std::int64_t{80} << 30;
    node.status.gpus.push_back(gpu);
  }
  cluster.PutGpuNode(node);
  cluster.SetNodeState(name, NodeState{true, true, false});
}

void FakeScene::Heartbeat() {
  for (api::GpuNode node : cluster.ListGpuNodes()) {
    node.status.heartbeat_time = api::FormatRfc3339(Now());
    cluster.PutGpuNode(node);
  }
}

namespace {

api::TrainingJob BaseJob(const std::string& name, api::Role role, std::int64_t gpus) {
  api::TrainingJob job;
  job.metadata.name = name;
  job.metadata.namespace_ = std::string(FakeScene::kNamespace);
  job.spec.role = role;
  job.spec.model.name = "mlp_tiny";
  job.spec.global_batch_size = 16;
  job.spec.gpus = gpus;
  job.spec.steps = 100;
  job.spec.checkpoint.path = absl::StrCat("/checkpoints/", name);
  return job;
}

}  // namespace

api::TrainingJob FakeScene::AddForeground(const std::string& name, std::int64_t gpus,
                                          bool allow_background) {
  api::TrainingJob job = BaseJob(name, api::Role::kForeground, gpus);
  job.spec.parallelism.strategy = api::Strategy::kDataParallel;
  job.spec.collocation.allow_background = allow_background;
  return cluster.AddJob(job);
}

api::TrainingJob FakeScene::AddBackground(const std::string& name) {
  return cluster.AddJob(BaseJob(name, api::Role::kBackground, 1));
}

api::TrainingJob FakeScene::Job(const std::string& name) const {
  return *cluster.GetJob(kNamespace, name);
}

std::vector<json> FakeScene::CurrentPods(const std::string& name) const {
  const std::int64_t generation = Job(name).status.gang_generation;
  std::vector<json> pods;
  for (const kube::Pod& pod : cluster.PodsOfJob(kNamespace, name)) {
    const auto label = pod.metadata.labels.find(std::string(kLabelGangGeneration));
    if (label != pod.metadata.labels.end() && label->second == absl::StrCat(generation)) {
      pods.push_back(pod.raw);
    }
  }
  return pods;
}

void FakeScene::SetGangPhase(const std::string& name, std::string_view phase) {
  for (const json& pod : CurrentPods(name)) {
    cluster.SetPodPhase(kNamespace, pod["metadata"]["name"].get<std::string>(), phase)
        .IgnoreError();
  }
}

const api::Condition& ConditionOf(const api::TrainingJob& job, std::string_view type) {
  static const api::Condition kMissing;
  const api::Condition* condition = api::FindCondition(job.status.conditions, type);
  return condition == nullptr ? kMissing : *condition;
}

std::vector<std::string> PodNames(const std::vector<nlohmann::json>& pods) {
  std::vector<std::string> names;
  for (const nlohmann::json& pod : pods)
    names.push_back(pod["metadata"]["name"].get<std::string>());
  return names;
}

api::ObjectMeta MetaOf(const nlohmann::json& object) {
  if (!object.is_object() || !object.contains("metadata")) return {};
  absl::StatusOr<api::ObjectMeta> meta = api::ObjectMeta::FromJson(object["metadata"]);
  return meta.ok() ? *std::move(meta) : api::ObjectMeta();
}

std::vector<std::string> PodNames(const std::vector<kube::Pod>& pods) {
  std::vector<std::string> names;
  for (const kube::Pod& pod : pods) names.push_back(pod.metadata.name);
  return names;
}

std::vector<std::string> PodNames(const std::vector<kube::Service>& services) {
  std::vector<std::string> names;
  for (const kube::Service& service : services) names.push_back(service.metadata.name);
  return names;
}

}  // namespace wavepool::controller
