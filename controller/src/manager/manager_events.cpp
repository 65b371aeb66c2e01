#include "manager/manager_events.h"

#include <map>
#include <string_view>
#include <tuple>

#include "wavepool/api/gpu_node_conditions.h"
#include "wavepool/api/object_key.h"
#include "wavepool/controller/owned_objects.h"

namespace wavepool::controller::internal {
namespace {

const nlohmann::json& Field(const nlohmann::json& object, std::string_view name) {
  static const nlohmann::json kNull;
  if (!object.is_object()) return kNull;
  const auto it = object.find(std::string(name));
  return it == object.end() ? kNull : *it;
}

std::string StringField(const nlohmann::json& object, std::string_view name) {
  const nlohmann::json& value = Field(object, name);
  return value.is_string() ? value.get<std::string>() : std::string();
}

bool Terminal(const nlohmann::json& pod) {
  const std::string phase = StringField(Field(pod, "status"), "phase");
  return phase == "Succeeded" || phase == "Failed";
}

// A task on a GPUNode: its pod, of its job.
struct TaskKey {
  api::ObjectKey job;
  std::string pod;

  friend bool operator<(const TaskKey& a, const TaskKey& b) {
    return std::tie(a.job, a.pod) < std::tie(b.job, b.pod);
  }
};

// The GPUNode's task entries, with their progress.
std::map<TaskKey, nlohmann::json> Tasks(const nlohmann::json& node) {
  std::map<TaskKey, nlohmann::json> out;
  const nlohmann::json& gpus = Field(Field(node, "status"), "gpus");
  if (!gpus.is_array()) return out;
  for (const nlohmann::json& gpu : gpus) {
    const nlohmann::json& tasks = Field(gpu, "tasks");
    if (!tasks.is_array()) continue;
    for (const nlohmann::json& task : tasks) {
      const std::string ns = StringField(task, "namespace");
      const std::string job = StringField(task, "job");
      if (ns.empty() || job.empty()) continue;
      out[TaskKey{{ns, job}, StringField(task, "pod")}] = Field(task, "progress");
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> NodePodIndex(const nlohmann::json& pod) {
  const std::string node = StringField(Field(pod, "spec"), "nodeName");
  if (node.empty()) return {};
  return {node};
}

std::optional<std::string> OwningJobKey(const nlohmann::json& object) {
  const nlohmann::json& meta = Field(object, "metadata");
  const std::string ns = StringField(meta, "namespace");
  if (ns.empty()) return std::nullopt;
  const nlohmann::json& owners = Field(meta, "ownerReferences");
  if (owners.is_array()) {
    for (const nlohmann::json& owner : owners) {
      const nlohmann::json& controller = Field(owner, "controller");
      if (controller.is_boolean() && controller.get<bool>() &&
          StringField(owner, "kind") == "TrainingJob" &&
          StringField(owner, "apiVersion").rfind("wavepool.dev/", 0) == 0) {
        const std::string name = StringField(owner, "name");
        if (!name.empty()) return api::ObjectKey{ns, name}.ToString();
      }
    }
  }
  const std::string job = StringField(Field(meta, "annotations"), kAnnotationJobName);
  if (job.empty()) return std::nullopt;
  return api::ObjectKey{ns, job}.ToString();
}

bool PodFreedGpus(const nlohmann::json& old_pod, const nlohmann::json& new_pod) {
  return Terminal(new_pod) && !Terminal(old_pod);
}

nlohmann::json GpuNodePlacementView(const nlohmann::json& gpu_node) {
  nlohmann::json view = nlohmann::json::object();
  view["nodeName"] = Field(Field(gpu_node, "spec"), "nodeName");
  const nlohmann::json& status = Field(gpu_node, "status");
  nlohmann::json conditions = nlohmann::json::array();
  if (const nlohmann::json& list = Field(status, "conditions"); list.is_array()) {
    for (const nlohmann::json& c : list) {
      conditions.push_back({Field(c, "type"), Field(c, "status")});
    }
  }
  view["conditions"] = std::move(conditions);
  nlohmann::json gpus = nlohmann::json::array();
  if (const nlohmann::json& list = Field(status, "gpus"); list.is_array()) {
    for (const nlohmann::json& gpu : list) {
      gpus.push_back({Field(gpu, "index"), Field(gpu, "uuid"), Field(gpu, "memoryBytes"),
                      Field(Field(gpu, "memoryWave"), "peakBytes")});
    }
  }
  view["gpus"] = std::move(gpus);
  return view;
}

std::string HeartbeatOf(const nlohmann::json& gpu_node) {
  return StringField(Field(gpu_node, "status"), "heartbeatTime");
}

bool JobDeletionStarted(const nlohmann::json& old_job, const nlohmann::json& new_job) {
  return !StringField(Field(new_job, "metadata"), "deletionTimestamp").empty() &&
         StringField(Field(old_job, "metadata"), "deletionTimestamp").empty();
}

std::set<std::string> JobsWithChangedTasks(const nlohmann::json& old_node,
                                           const nlohmann::json& new_node) {
  const std::map<TaskKey, nlohmann::json> before = Tasks(old_node);
  const std::map<TaskKey, nlohmann::json> after = Tasks(new_node);
  std::set<std::string> jobs;
  for (const auto& [task, progress] : after) {
    const auto it = before.find(task);
    if (it == before.end() || it->second != progress) jobs.insert(task.job.ToString());
  }
  for (const auto& [task, progress] : before) {
    if (after.count(task) == 0) jobs.insert(task.job.ToString());
  }
  return jobs;
}

std::set<std::string> JobsFlaggedCheating(const nlohmann::json& gpu_node) {
  api::GpuNodeStatus status;
  const nlohmann::json& conditions = Field(Field(gpu_node, "status"), "conditions");
  if (!conditions.is_array()) return {};
  for (const nlohmann::json& c : conditions) {
    if (StringField(c, "type") != api::kGpuNodeBackgroundCheating) continue;
    // A condition that does not decode flags nobody; the GPUNode's own decoding reports it.
    absl::StatusOr<api::Condition> condition = api::Condition::FromJson(c);
    if (condition.ok()) status.conditions.push_back(*std::move(condition));
  }
  const std::vector<std::string> pods = api::CheatingPods(status);
  if (pods.empty()) return {};
  const std::set<std::string> flagged(pods.begin(), pods.end());
  std::set<std::string> jobs;
  for (const auto& [task, progress] : Tasks(gpu_node)) {
    const api::ObjectKey pod{task.job.namespace_, task.pod};
    if (flagged.count(pod.ToString()) > 0) jobs.insert(task.job.ToString());
  }
  return jobs;
}

}  // namespace wavepool::controller::internal
