#include "tests/support/cluster/simulated_kubelet.h"

#include <algorithm>
#include <iostream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "wavepool/kube/api_error.h"
#include "wavepool/kube/resource.h"

namespace wavepool::testing {
namespace {

constexpr std::chrono::hours kIdleWait(1);

std::string NodeOf(const nlohmann::json& pod) {
  const nlohmann::json* spec = pod.contains("spec") ? &pod["spec"] : nullptr;
  if (spec == nullptr || !spec->is_object()) return "";
  return spec->value("nodeName", "");
}

std::string MetaField(const nlohmann::json& object, const char* field) {
  if (!object.contains("metadata") || !object["metadata"].is_object()) return "";
  const nlohmann::json& value = object["metadata"].value(field, nlohmann::json());
  return value.is_string() ? value.get<std::string>() : "";
}

std::string PhaseOf(const nlohmann::json& pod) {
  if (!pod.contains("status") || !pod["status"].is_object()) return "";
  return pod["status"].value("phase", "");
}

bool IsTerminal(std::string_view phase) { return phase == "Succeeded" || phase == "Failed"; }

// The pod's grace period as the API server recorded it at deletion (30 s when absent, the
// default of spec.terminationGracePeriodSeconds).
std::chrono::nanoseconds GracePeriod(const nlohmann::json& pod) {
  std::int64_t seconds = 30;
  if (pod.contains("metadata") && pod["metadata"].contains("deletionGracePeriodSeconds") &&
      pod["metadata"]["deletionGracePeriodSeconds"].is_number_integer()) {
    seconds = pod["metadata"]["deletionGracePeriodSeconds"].get<std::int64_t>();
  }
  return std::chrono::seconds(std::max<std::int64_t>(seconds, 0));
}

nlohmann::json Condition(std::string_view type, std::string_view status, const std::string& now,
                         std::string_view reason = "") {
  nlohmann::json condition = {{"type", std::string(type)},
                              {"status", std::string(status)},
                              {"lastProbeTime", nullptr},
                              {"lastTransitionTime", now}};
  if (!reason.empty()) condition["reason"] = std::string(reason);
  return condition;
}

// When the container `name` started: its running or terminated state, else the pod's startTime.
std::string StartedAt(const nlohmann::json& status, const std::string& name,
                      const std::string& fallback) {
  for (const nlohmann::json& container :
       status.value("containerStatuses", nlohmann::json::array())) {
    if (!container.is_object() || container.value("name", "") != name) continue;
    const nlohmann::json state = container.value("state", nlohmann::json::object());
    for (const char* phase : {"running", "terminated"}) {
      if (state.contains(phase) && state[phase].is_object() &&
          state[phase].value("startedAt", "") != "") {
        return state[phase]["startedAt"].get<std::string>();
      }
    }
  }
  return status.value("startTime", fallback);
}

std::vector<nlohmann::json> Containers(const nlohmann::json& pod) {
  std::vector<nlohmann::json> containers;
  if (!pod.contains("spec") || !pod["spec"].is_object()) return containers;
  for (const nlohmann::json& c : pod["spec"].value("containers", nlohmann::json::array())) {
    if (c.is_object()) containers.push_back(c);
  }
  return containers;
}

std::string HostIp(std::size_t index) {
  return absl::StrCat("10.0.", index / 250, ".", index % 250 + 1);
}

}  // namespace

SimulatedKubelet::SimulatedKubelet(kube::Client& client, std::vector<std::string> nodes,
                                   Options options)
    : client_(client),
      nodes_(std::move(nodes)),
      options_(std::move(options)),
      clock_(*options_.clock),
      wall_(options_.clock, options_.wall_start.value_or(std::chrono::system_clock::now())) {}

absl::StatusOr<std::unique_ptr<SimulatedKubelet>> SimulatedKubelet::Start(
    kube::Client& client, std::vector<std::string> nodes, Options options) {
  if (nodes.empty())
    return absl::InvalidArgumentError("SimulatedKubelet: nodes: must not be empty");
  std::set<std::string> seen;
  for (const std::string& node : nodes) {
    if (node.empty() || !seen.insert(node).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "SimulatedKubelet: nodes: names must be non-empty and distinct, got \"", node, "\""));
    }
  }
  if (options.clock == nullptr || options.start_delay.count() < 0 ||
      (options.run_time && options.run_time->count() < 0) ||
      (options.stop_delay && options.stop_delay->count() < 0) || options.gpus_per_node < 0) {
    return absl::InvalidArgumentError(
        "SimulatedKubelet: options: clock must be set; delays and gpus_per_node must be >= 0");
  }
  std::unique_ptr<SimulatedKubelet> kubelet(
      new SimulatedKubelet(client, std::move(nodes), std::move(options)));
  for (std::size_t i = 0; i < kubelet->nodes_.size(); ++i) {
    if (absl::Status s = kubelet->RegisterNode(i); !s.ok()) return s;
  }
  kube::SharedInformer::Options informer_options;
  informer_options.clock = &RealClock();
  kubelet->informer_ =
      std::make_unique<kube::SharedInformer>(client, kube::kPods, informer_options);
  kube::ResourceEventHandlers handlers;
  SimulatedKubelet* self = kubelet.get();
  handlers.on_add = [self](const nlohmann::json& pod) { self->Enqueue(pod); };
  handlers.on_update = [self](const nlohmann::json&, const nlohmann::json& pod) {
    self->Enqueue(pod);
  };
  handlers.on_delete = [self](const nlohmann::json& pod) { self->Enqueue(pod); };
  if (absl::Status s = kubelet->informer_->AddEventHandler(handlers); !s.ok()) return s;
  kubelet->worker_ = std::thread([self] { self->WorkerLoop(); });
  kubelet->informer_->Run();
  if (!kubelet->informer_->WaitForSync(kubelet->options_.sync_timeout)) {
    return absl::DeadlineExceededError("SimulatedKubelet: the pod informer did not sync");
  }
  return kubelet;
}

SimulatedKubelet::~SimulatedKubelet() { Stop(); }

void SimulatedKubelet::Stop() {
  if (informer_ != nullptr) informer_->Stop();
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (worker_.joinable()) worker_.join();
}

absl::Status SimulatedKubelet::RegisterNode(std::size_t index) {
  const std::string& name = nodes_[index];
  nlohmann::json labels = {{kHostnameLabel, name}, {kManagedNodeLabel, "true"}};
  for (const auto& [key, value] : options_.node_labels) labels[key] = value;
  const nlohmann::json node = {{"apiVersion", "v1"},
                               {"kind", "Node"},
                               {"metadata", {{"name", name}, {"labels", labels}}},
                               {"spec", {{"podCIDR", absl::StrCat("10.244.", index, ".0/24")}}}};
  absl::StatusOr<nlohmann::json> created = client_.Create(kube::kNodes, node);
  if (!created.ok() && kube::IsAlreadyExists(created.status())) {
    created = client_.Patch(kube::kNodes, "", name, kube::PatchType::kMerge,
                            {{"metadata", {{"labels", labels}}}});
  }
  if (!created.ok()) return created.status();
  return PatchNodeReady(name, true);
}

absl::Status SimulatedKubelet::PatchNodeReady(std::string_view node, bool ready) {
  const std::string now = wall_.Rfc3339();
  const std::string gpus = std::to_string(options_.gpus_per_node);
  const nlohmann::json resources = {
      {"cpu", "64"}, {"memory", "512Gi"}, {"pods", "110"}, {kGpuResource, gpus}};
  // The kubelet's own reasons; after NodeDown, what the node lifecycle controller writes for a
  // node whose kubelet stopped posting status (every condition Unknown).
  struct Kind {
    const char* type;
    const char* healthy;  // status when ready
    const char* reason;
    const char* message;
  };
  static constexpr Kind kKinds[] = {
      {"MemoryPressure", "False", "KubeletHasSufficientMemory",
       "kubelet has sufficient memory available"},
      {"DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
      {"PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
      {"Ready", "True", "KubeletReady", "kubelet is posting ready status"},
  };
  nlohmann::json conditions = nlohmann::json::array();
  for (const Kind& kind : kKinds) {
    conditions.push_back(
        {{"type", kind.type},
         {"status", ready ? kind.healthy : "Unknown"},
         {"lastHeartbeatTime", now},
         {"lastTransitionTime", now},
         {"reason", ready ? kind.reason : "NodeStatusUnknown"},
         {"message", ready ? kind.message : "Kubelet stopped posting node status."}});
  }
  const auto index =
      static_cast<std::size_t>(std::find(nodes_.begin(), nodes_.end(), node) - nodes_.begin());
  const nlohmann::json status = {
      {"capacity", resources},
      {"allocatable", resources},
      {"conditions", conditions},
      {"addresses",
       {{{"type", "InternalIP"}, {"address", HostIp(index)}},
        {{"type", "Hostname"}, {"address", std::string(node)}}}},
      {"nodeInfo",
       {{"kubeletVersion", "v1.32.0"}, {"containerRuntimeVersion", "containerd://1.7"}}}};
  absl::StatusOr<nlohmann::json> patched = client_.Patch(
      kube::kNodes, "", node, kube::PatchType::kMerge, {{"status", status}}, "status");
  return patched.status();
}

absl::Status SimulatedKubelet::NodeDown(std::string_view node) {
  if (std::find(nodes_.begin(), nodes_.end(), node) == nodes_.end()) {
    return absl::NotFoundError(
        absl::StrCat("SimulatedKubelet: node \"", std::string(node), "\" is not one of its nodes"));
  }
  {
    absl::MutexLock write_lock(&write_mu_);
    absl::MutexLock lock(&mu_);
    down_.insert(std::string(node));
  }
  return PatchNodeReady(node, false);
}

absl::Status SimulatedKubelet::NodeUp(std::string_view node) {
  if (std::find(nodes_.begin(), nodes_.end(), node) == nodes_.end()) {
    return absl::NotFoundError(
        absl::StrCat("SimulatedKubelet: node \"", std::string(node), "\" is not one of its nodes"));
  }
  if (absl::Status s = PatchNodeReady(node, true); !s.ok()) return s;
  const std::vector<nlohmann::json> pods = informer_->store().List();
  {
    absl::MutexLock lock(&mu_);
    down_.erase(std::string(node));
    // Forget what was under way there: Reconcile starts each pod's timers again from now.
    for (auto it = pods_.begin(); it != pods_.end();) {
      if (it->second.node == node) {
        keys_.push_back(it->first);
        it = pods_.erase(it);
      } else {
        ++it;
      }
    }
    for (const nlohmann::json& pod : pods) {
      if (NodeOf(pod) == node) keys_.push_back(kube::ObjectKey(pod));
    }
  }
  return absl::OkStatus();
}

bool SimulatedKubelet::NodeActiveLocked(const std::string& node) const {
  return std::find(nodes_.begin(), nodes_.end(), node) != nodes_.end() && down_.count(node) == 0;
}

void SimulatedKubelet::Enqueue(const nlohmann::json& pod) {
  const std::string key = kube::ObjectKey(pod);
  {
    absl::MutexLock lock(&mu_);
    const std::string node = NodeOf(pod);
    const bool ours = std::find(nodes_.begin(), nodes_.end(), node) != nodes_.end();
    if (!ours && pods_.count(key) == 0) return;
    keys_.push_back(key);
  }
}

void SimulatedKubelet::WorkerLoop() {
  absl::MutexLock lock(&mu_);
  const auto woken = [this]()
                         ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !keys_.empty(); };
  while (!stopping_) {
    if (!keys_.empty()) {
      const std::string key = std::move(keys_.front());
      keys_.pop_front();
      mu_.Unlock();
      Reconcile(key);
      mu_.Lock();
      continue;
    }
    if (!timers_.empty() && timers_.begin()->first <= clock_.Now()) {
      const Timer timer = timers_.begin()->second;
      timers_.erase(timers_.begin());
      mu_.Unlock();
      Fire(timer);
      mu_.Lock();
      continue;
    }
    // Only this thread adds timers, so the earliest deadline cannot move while it waits.
    const MonotonicTime deadline =
        timers_.empty() ? clock_.Now() + kIdleWait : timers_.begin()->first;
    clock_.WaitUntil(mu_, deadline, absl::Condition(&woken));
  }
}

void SimulatedKubelet::AddTimerLocked(std::chrono::nanoseconds delay, TimerKind kind,
                                      const std::string& key, const PodRecord& record) {
  timers_.emplace(clock_.Now() + delay, Timer{kind, key, record.uid, record.epoch});
}

SimulatedKubelet::PodRecord& SimulatedKubelet::RecordLocked(const std::string& key,
                                                            const nlohmann::json& pod) {
  const std::string uid = MetaField(pod, "uid");
  PodRecord& record = pods_[key];
  if (record.uid != uid || record.epoch == 0) {
    record = PodRecord{uid, NodeOf(pod), PodStage::kPending, ++epochs_};
  }
  return record;
}

void SimulatedKubelet::Reconcile(const std::string& key) {
  const std::optional<nlohmann::json> pod = informer_->store().Get(key);
  absl::MutexLock lock(&mu_);
  const std::string node = pod ? NodeOf(*pod) : "";
  if (!pod || std::find(nodes_.begin(), nodes_.end(), node) == nodes_.end()) {
    pods_.erase(key);  // gone, or not ours: its timers find no record and do nothing
    return;
  }
  PodRecord& record = RecordLocked(key, *pod);
  if (!NodeActiveLocked(node)) return;
  if (!MetaField(*pod, "deletionTimestamp").empty()) {
    if (record.stage == PodStage::kDeleting) return;
    record.stage = PodStage::kDeleting;
    const std::chrono::nanoseconds grace = GracePeriod(*pod);
    const std::chrono::nanoseconds delay =
        options_.stop_delay ? std::min(*options_.stop_delay, grace) : grace;
    AddTimerLocked(delay, TimerKind::kConfirmDeletion, key, record);
    return;
  }
  if (IsTerminal(PhaseOf(*pod))) {
    record.stage = PodStage::kTerminal;
    return;
  }
  if (record.stage != PodStage::kPending) return;
  if (PhaseOf(*pod) == "Running") {  // running before this kubelet saw it (after NodeUp)
    record.stage = PodStage::kRunning;
    if (options_.run_time) AddTimerLocked(*options_.run_time, TimerKind::kComplete, key, record);
    return;
  }
  record.stage = PodStage::kStarting;
  AddTimerLocked(options_.start_delay, TimerKind::kStart, key, record);
}

void SimulatedKubelet::Fire(const Timer& timer) {
  absl::MutexLock write_lock(&write_mu_);
  const std::optional<nlohmann::json> pod = informer_->store().Get(timer.key);
  PodStage stage = PodStage::kPending;
  {
    absl::MutexLock lock(&mu_);
    auto it = pods_.find(timer.key);
    if (!pod || it == pods_.end() || it->second.uid != timer.uid ||
        it->second.epoch != timer.epoch || !NodeActiveLocked(it->second.node)) {
      return;  // gone, replaced, or its node is down: the timer is dropped
    }
    stage = it->second.stage;
  }
  const std::string ns = MetaField(*pod, "namespace");
  const std::string name = MetaField(*pod, "name");
  absl::Status status;
  PodStage next = stage;
  if (timer.kind == TimerKind::kStart && stage == PodStage::kStarting) {
    status = PatchPodStatus(*pod, RunningStatus(*pod));
    next = PodStage::kRunning;
  } else if (timer.kind == TimerKind::kComplete && stage == PodStage::kRunning) {
    status = PatchPodStatus(*pod, TerminatedStatus(*pod, "Succeeded", 0, "Completed"));
    next = PodStage::kTerminal;
  } else if (timer.kind == TimerKind::kConfirmDeletion && stage == PodStage::kDeleting) {
    kube::DeleteOptions confirm;
    confirm.grace_period_seconds = 0;
    confirm.precondition_uid = timer.uid;
    status = client_.Delete(kube::kPods, ns, name, confirm);
    if (kube::IsNotFound(status) || kube::IsConflict(status)) status = absl::OkStatus();
  } else {
    return;  // a stale timer: the pod moved on
  }
  if (!status.ok()) {
    if (!kube::IsNotFound(status)) {
      std::cerr << "SimulatedKubelet: pod " << timer.key << ": " << status << "\n";
    }
    return;
  }
  absl::MutexLock lock(&mu_);
  auto it = pods_.find(timer.key);
  if (it == pods_.end() || it->second.epoch != timer.epoch) return;
  it->second.stage = next;
  if (timer.kind == TimerKind::kStart && options_.run_time) {
    AddTimerLocked(*options_.run_time, TimerKind::kComplete, timer.key, it->second);
  }
}

std::string SimulatedKubelet::NextPodIp(const std::string& node) {
  const auto index =
      static_cast<std::size_t>(std::find(nodes_.begin(), nodes_.end(), node) - nodes_.begin());
  absl::MutexLock lock(&mu_);
  std::int64_t& host = next_host_[node];
  host = host % 253 + 1;  // .2 to .254; .1 is the node's gateway
  return absl::StrCat("10.244.", index, ".", host + 1);
}

nlohmann::json SimulatedKubelet::RunningStatus(const nlohmann::json& pod) {
  const std::string now = wall_.Rfc3339();
  const std::string node = NodeOf(pod);
  const auto index =
      static_cast<std::size_t>(std::find(nodes_.begin(), nodes_.end(), node) - nodes_.begin());
  const std::string pod_ip = NextPodIp(node);
  nlohmann::json containers = nlohmann::json::array();
  for (const nlohmann::json& c : Containers(pod)) {
    const std::string name = c.value("name", "");
    containers.push_back(
        {{"name", name},
         {"image", c.value("image", "")},
         {"imageID", ""},
         {"containerID", absl::StrCat("containerd://", MetaField(pod, "uid"), "-", name)},
         {"ready", true},
         {"started", true},
         {"restartCount", 0},
         {"state", {{"running", {{"startedAt", now}}}}}});
  }
  return {{"phase", "Running"},
          {"hostIP", HostIp(index)},
          {"podIP", pod_ip},
          {"podIPs", {{{"ip", pod_ip}}}},
          {"startTime", now},
          {"conditions",
           {Condition("PodScheduled", "True", now), Condition("Initialized", "True", now),
            Condition("ContainersReady", "True", now), Condition("Ready", "True", now)}},
          {"containerStatuses", containers}};
}

nlohmann::json SimulatedKubelet::TerminatedStatus(const nlohmann::json& pod, std::string_view phase,
                                                  std::int64_t exit_code, std::string_view reason) {
  const std::string now = wall_.Rfc3339();
  const nlohmann::json old = pod.value("status", nlohmann::json::object());
  const std::string why = phase == "Succeeded" ? "PodCompleted" : "PodFailed";
  nlohmann::json containers = nlohmann::json::array();
  for (const nlohmann::json& c : Containers(pod)) {
    const std::string name = c.value("name", "");
    containers.push_back(
        {{"name", name},
         {"image", c.value("image", "")},
         {"imageID", ""},
         {"containerID", absl::StrCat("containerd://", MetaField(pod, "uid"), "-", name)},
         {"ready", false},
         {"started", false},
         {"restartCount", 0},
         {"state",
          {{"terminated",
            {{"exitCode", exit_code},
             {"reason", std::string(reason)},
             {"startedAt", StartedAt(old, name, now)},
             {"finishedAt", now},
             {"containerID", absl::StrCat("containerd://", MetaField(pod, "uid"), "-", name)}}}}}});
  }
  return {
      {"phase", std::string(phase)},
      {"startTime", old.value("startTime", now)},
      {"conditions",
       {Condition("PodScheduled", "True", now), Condition("Initialized", "True", now),
        Condition("ContainersReady", "False", now, why), Condition("Ready", "False", now, why)}},
      {"containerStatuses", containers}};
}

absl::Status SimulatedKubelet::PatchPodStatus(const nlohmann::json& pod,
                                              const nlohmann::json& status) {
  return client_
      .Patch(kube::kPods, MetaField(pod, "namespace"), MetaField(pod, "name"),
             kube::PatchType::kMerge, {{"status", status}}, "status")
      .status();
}

absl::Status SimulatedKubelet::FailPod(std::string_view ns, std::string_view name,
                                       std::int64_t exit_code, std::string_view reason) {
  return FinishPod(ns, name, "Failed", exit_code, reason);
}

absl::Status SimulatedKubelet::SucceedPod(std::string_view ns, std::string_view name) {
  return FinishPod(ns, name, "Succeeded", 0, "Completed");
}

absl::Status SimulatedKubelet::FinishPod(std::string_view ns, std::string_view name,
                                         std::string_view phase, std::int64_t exit_code,
                                         std::string_view reason) {
  absl::MutexLock write_lock(&write_mu_);
  absl::StatusOr<nlohmann::json> pod = client_.Get(kube::kPods, ns, name);
  if (!pod.ok()) return pod.status();
  const std::string node = NodeOf(*pod);
  const std::string key = absl::StrCat(std::string(ns), "/", std::string(name));
  {
    absl::MutexLock lock(&mu_);
    if (!NodeActiveLocked(node)) {
      return absl::FailedPreconditionError(
          absl::StrCat("SimulatedKubelet: pod ", key, ": spec.nodeName \"", node,
                       "\" is not a running node of this kubelet (down, or not one of its nodes)"));
    }
    if (IsTerminal(PhaseOf(*pod))) {
      return absl::FailedPreconditionError(
          absl::StrCat("SimulatedKubelet: pod ", key, ": already ", PhaseOf(*pod)));
    }
    PodRecord& record = RecordLocked(key, *pod);
    if (record.stage != PodStage::kDeleting) record.stage = PodStage::kTerminal;
  }
  return PatchPodStatus(*pod, TerminatedStatus(*pod, phase, exit_code, reason));
}

}  // namespace wavepool::testing
