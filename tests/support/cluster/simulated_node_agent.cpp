#include "tests/support/cluster/simulated_node_agent.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "wavepool/api/kube_resources.h"
#include "wavepool/kube/api_error.h"
#include "wavepool/kube/resource.h"

namespace wavepool::testing {

std::vector<SimulatedNodeAgents::NodeSpec> SimulatedNodeAgents::Uniform(
    const std::vector<std::string>& names, std::int64_t gpus, std::string model,
    std::int64_t memory_bytes) {
  std::vector<NodeSpec> nodes;
  for (const std::string& name : names) nodes.push_back({name, gpus, model, memory_bytes});
  return nodes;
}

std::string SimulatedNodeAgents::GpuUuid(std::string_view node, std::int64_t index) {
  return absl::StrCat("GPU-", std::string(node), "-", index);
}

SimulatedNodeAgents::SimulatedNodeAgents(kube::Client& client, Options options)
    : client_(client),
      options_(std::move(options)),
      clock_(*options_.clock),
      wall_(options_.clock, options_.wall_start.value_or(std::chrono::system_clock::now())) {}

absl::StatusOr<std::unique_ptr<SimulatedNodeAgents>> SimulatedNodeAgents::Start(
    kube::Client& client, std::vector<NodeSpec> nodes, Options options) {
  if (nodes.empty()) {
    return absl::InvalidArgumentError("SimulatedNodeAgents: nodes: must not be empty");
  }
  if (options.clock == nullptr || options.heartbeat_period.count() < 0) {
    return absl::InvalidArgumentError(
        "SimulatedNodeAgents: options: clock must be set and heartbeat_period >= 0");
  }
  std::unique_ptr<SimulatedNodeAgents> agents(new SimulatedNodeAgents(client, std::move(options)));
  std::set<std::string> seen;
  for (NodeSpec& node : nodes) {
    if (node.name.empty() || !seen.insert(node.name).second || node.gpus < 0 ||
        node.memory_bytes < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("SimulatedNodeAgents: node \"", node.name,
                       "\": names must be non-empty and distinct, gpus and memory_bytes >= 0"));
    }
    Agent agent;
    for (std::int64_t i = 0; i < node.gpus; ++i) {
      api::GpuStatus gpu;
      gpu.index = i;
      gpu.uuid = GpuUuid(node.name, i);
      gpu.model = node.model;
      gpu.memory_bytes = node.memory_bytes;
      agent.status.gpus.push_back(std::move(gpu));
    }
    agent.status.agent_version = agents->options_.agent_version;
    // The real agent's Ready condition (wavepool/agent/gpunode_publisher.h).
    api::Condition ready;
    ready.type = "Ready";
    ready.status = api::ConditionStatus::kTrue;
    ready.reason = "GPUsReported";
    ready.message = absl::StrCat(node.gpus, " x ", node.model);
    api::SetCondition(&agent.status.conditions, ready, agents->wall_.Now());
    const std::string name = node.name;
    agent.spec = std::move(node);
    agents->order_.push_back(name);
    absl::MutexLock lock(&agents->write_mu_);  // uncontended: nothing else runs yet
    agents->agents_.emplace(name, std::move(agent));
  }
  {
    absl::MutexLock lock(&agents->write_mu_);
    for (const std::string& name : agents->order_) {
      Agent& agent = agents->agents_.at(name);
      absl::StatusOr<nlohmann::json> created =
          client.Create(api::kGpuNodes, api::ToJson(agents->NewObject(name)));
      if (!created.ok() && !kube::IsAlreadyExists(created.status())) return created.status();
      if (absl::Status s = agents->Publish(agent); !s.ok()) return s;
    }
  }
  if (agents->options_.heartbeat_period.count() > 0) {
    SimulatedNodeAgents* self = agents.get();
    agents->heartbeat_thread_ = std::thread([self] { self->HeartbeatLoop(); });
  }
  return agents;
}

SimulatedNodeAgents::~SimulatedNodeAgents() { Stop(); }

void SimulatedNodeAgents::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
}

void SimulatedNodeAgents::HeartbeatLoop() {
  absl::MutexLock lock(&mu_);
  MonotonicTime next = clock_.Now() + options_.heartbeat_period;
  while (!stopping_) {
    clock_.WaitUntil(mu_, next, absl::Condition(&stopping_));
    if (stopping_) break;
    // A clock that jumped several periods gives one heartbeat, as a late timer would.
    while (next <= clock_.Now()) next += options_.heartbeat_period;
    mu_.Unlock();
    // Errors are the API server's; the next period tries again, as an agent would.
    (void)Heartbeat();
    mu_.Lock();
  }
}

// As the real agent creates it: labelled with its node and, when the Node exists, owned by it (not
// as controller), so that deleting the Node deletes the GPUNode.
api::GpuNode SimulatedNodeAgents::NewObject(const std::string& node) {
  api::GpuNode object;
  object.metadata.name = node;
  object.metadata.labels[kGpuNodeNodeLabel] = node;
  object.spec.node_name = node;
  absl::StatusOr<nlohmann::json> owner = client_.Get(kube::kNodes, "", node);
  if (owner.ok()) {
    api::OwnerReference reference;
    reference.api_version = "v1";
    reference.kind = "Node";
    reference.name = node;
    reference.uid = (*owner)["metadata"].value("uid", "");
    object.metadata.owner_references.push_back(reference);
  }
  return object;
}

absl::Status SimulatedNodeAgents::Publish(Agent& agent) {
  agent.status.heartbeat_time = wall_.Rfc3339();
  api::GpuNode object;
  object.metadata.name = agent.spec.name;
  object.spec.node_name = agent.spec.name;
  object.status = agent.status;
  nlohmann::json json = api::ToJson(object);
  const nlohmann::json patch = {{"status", json.value("status", nlohmann::json::object())}};
  return client_
      .Patch(api::kGpuNodes, "", agent.spec.name, kube::PatchType::kMerge, patch, "status")
      .status();
}

absl::StatusOr<SimulatedNodeAgents::Agent*> SimulatedNodeAgents::FindLocked(std::string_view node) {
  auto it = agents_.find(node);
  if (it == agents_.end()) {
    return absl::NotFoundError(
        absl::StrCat("SimulatedNodeAgents: no agent for node \"", std::string(node), "\""));
  }
  return &it->second;
}

absl::Status SimulatedNodeAgents::Heartbeat() {
  absl::MutexLock lock(&write_mu_);
  absl::Status first = absl::OkStatus();
  for (const std::string& name : order_) {
    Agent& agent = agents_.at(name);
    if (!agent.running) continue;
    absl::Status s = Publish(agent);
    if (first.ok()) first = s;
  }
  return first;
}

absl::Status SimulatedNodeAgents::Heartbeat(std::string_view node) {
  absl::MutexLock lock(&write_mu_);
  absl::StatusOr<Agent*> agent = FindLocked(node);
  if (!agent.ok()) return agent.status();
  if (!(*agent)->running) {
    return absl::FailedPreconditionError(absl::StrCat("SimulatedNodeAgents: the agent of node \"",
                                                      std::string(node), "\" is stopped"));
  }
  return Publish(**agent);
}

absl::Status SimulatedNodeAgents::StopHeartbeat(std::string_view node) {
  absl::MutexLock lock(&write_mu_);
  absl::StatusOr<Agent*> agent = FindLocked(node);
  if (!agent.ok()) return agent.status();
  (*agent)->running = false;
  return absl::OkStatus();
}

absl::Status SimulatedNodeAgents::ResumeHeartbeat(std::string_view node) {
  absl::MutexLock lock(&write_mu_);
  absl::StatusOr<Agent*> agent = FindLocked(node);
  if (!agent.ok()) return agent.status();
  (*agent)->running = true;
  return Publish(**agent);
}

absl::Status SimulatedNodeAgents::SetTasks(std::string_view node, std::int64_t gpu,
                                           std::vector<api::GpuTask> tasks) {
  return UpdateGpu(node, gpu,
                   [&tasks](api::GpuStatus& status) { status.tasks = std::move(tasks); });
}

absl::Status SimulatedNodeAgents::UpdateGpu(std::string_view node, std::int64_t gpu,
                                            const std::function<void(api::GpuStatus&)>& change) {
  absl::MutexLock lock(&write_mu_);
  absl::StatusOr<Agent*> agent = FindLocked(node);
  if (!agent.ok()) return agent.status();
  std::vector<api::GpuStatus>& gpus = (*agent)->status.gpus;
  if (gpu < 0 || gpu >= static_cast<std::int64_t>(gpus.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("SimulatedNodeAgents: node \"", std::string(node),
                     "\": gpu index must be in [0, ", gpus.size(), "), got ", gpu));
  }
  if (!(*agent)->running) {
    return absl::FailedPreconditionError(absl::StrCat("SimulatedNodeAgents: the agent of node \"",
                                                      std::string(node), "\" is stopped"));
  }
  change(gpus[static_cast<std::size_t>(gpu)]);
  return Publish(**agent);
}

absl::StatusOr<api::GpuNodeStatus> SimulatedNodeAgents::PublishedStatus(
    std::string_view node) const {
  absl::MutexLock lock(&write_mu_);
  auto it = agents_.find(node);
  if (it == agents_.end()) {
    return absl::NotFoundError(
        absl::StrCat("SimulatedNodeAgents: no agent for node \"", std::string(node), "\""));
  }
  return it->second.status;
}

}  // namespace wavepool::testing
