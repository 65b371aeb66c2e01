#include "manager/manager_events.h"

#include <map>
#include <tuple>

#include "wavepool/api/gpu_node_conditions.h"
#include "wavepool/api/json_codec.h"
#include "wavepool/api/object_key.h"
#include "wavepool/controller/owned_objects.h"

namespace wavepool::controller::internal {
namespace {

using api::FieldAs;
using api::FieldOrNull;

// spec.nodeName of a pod or GPUNode; "" when absent or not a string.
std::string SpecNodeName(const nlohmann::json& object) {
  return FieldAs<std::string>(FieldOrNull(object, "spec"), "nodeName").value_or("");
}

bool Terminal(const nlohmann::json& pod) {
  const std::string phase = FieldAs<std::string>(FieldOrNull(pod, "status"), "phase").value_or("");
  return phase == "Succeeded" || phase == "Failed";
}

// metadata.deletionTimestamp of a TrainingJob; "" when absent or not a string.
std::string DeletionTimestamp(const nlohmann::json& job) {
  return FieldAs<std::string>(FieldOrNull(job, "metadata"), "deletionTimestamp").value_or("");
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
  const nlohmann::json& gpus = FieldOrNull(FieldOrNull(node, "status"), "gpus");
  if (!gpus.is_array()) return out;
  for (const nlohmann::json& gpu : gpus) {
    const nlohmann::json& tasks = FieldOrNull(gpu, "tasks");
    if (!tasks.is_array()) continue;
    for (const nlohmann::json& task : tasks) {
      const std::string ns = FieldAs<std::string>(task, "namespace").value_or("");
      const std::string job = FieldAs<std::string>(task, "job").value_or("");
      if (ns.empty() || job.empty()) continue;
      const std::string pod = FieldAs<std::string>(task, "pod").value_or("");
      out[TaskKey{{ns, job}, pod}] = FieldOrNull(task, "progress");
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> NodePodIndex(const nlohmann::json& pod) {
  const std::string node = SpecNodeName(pod);
  if (node.empty()) return {};
  return {node};
}

std::optional<std::string> OwningJobKey(const nlohmann::json& object) {
  const nlohmann::json& meta = FieldOrNull(object, "metadata");
  const std::string ns = FieldAs<std::string>(meta, "namespace").value_or("");
  if (ns.empty()) return std::nullopt;
  const nlohmann::json& owners = FieldOrNull(meta, "ownerReferences");
  if (owners.is_array()) {
    for (const nlohmann::json& owner : owners) {
      if (FieldAs<bool>(owner, "controller").value_or(false) &&
          FieldAs<std::string>(owner, "kind").value_or("") == "TrainingJob" &&
          FieldAs<std::string>(owner, "apiVersion").value_or("").rfind("wavepool.dev/", 0) == 0) {
        const std::string name = FieldAs<std::string>(owner, "name").value_or("");
        if (!name.empty()) return api::ObjectKey{ns, name}.ToString();
      }
    }
  }
  // One annotation: the others may hold anything.
  const std::string job =
      FieldAs<std::string>(FieldOrNull(meta, "annotations"), kAnnotationJobName).value_or("");
  if (job.empty()) return std::nullopt;
  return api::ObjectKey{ns, job}.ToString();
}

bool PodFreedGpus(const nlohmann::json& old_pod, const nlohmann::json& new_pod) {
  return Terminal(new_pod) && !Terminal(old_pod);
}

nlohmann::json GpuNodePlacementView(const nlohmann::json& gpu_node) {
  nlohmann::json view = nlohmann::json::object();
  view["nodeName"] = FieldOrNull(FieldOrNull(gpu_node, "spec"), "nodeName");
  const nlohmann::json& status = FieldOrNull(gpu_node, "status");
  nlohmann::json conditions = nlohmann::json::array();
  if (const nlohmann::json& list = FieldOrNull(status, "conditions"); list.is_array()) {
    for (const nlohmann::json& c : list) {
      conditions.push_back({FieldOrNull(c, "type"), FieldOrNull(c, "status")});
    }
  }
  view["conditions"] = std::move(conditions);
  nlohmann::json gpus = nlohmann::json::array();
  if (const nlohmann::json& list = FieldOrNull(status, "gpus"); list.is_array()) {
    for (const nlohmann::json& gpu : list) {
      gpus.push_back({FieldOrNull(gpu, "index"), FieldOrNull(gpu, "uuid"),
                      FieldOrNull(gpu, "memoryBytes"),
                      FieldOrNull(FieldOrNull(gpu, "memoryWave"), "peakBytes")});
    }
  }
  view["gpus"] = std::move(gpus);
  return view;
}

std::string HeartbeatOf(const nlohmann::json& gpu_node) {
  return FieldAs<std::string>(FieldOrNull(gpu_node, "status"), "heartbeatTime").value_or("");
}

std::string NodeNameOf(const nlohmann::json& gpu_node) { return SpecNodeName(gpu_node); }

bool JobDeletionStarted(const nlohmann::json& old_job, const nlohmann::json& new_job) {
  return !DeletionTimestamp(new_job).empty() && DeletionTimestamp(old_job).empty();
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
  const nlohmann::json& conditions = FieldOrNull(FieldOrNull(gpu_node, "status"), "conditions");
  if (!conditions.is_array()) return {};
  for (const nlohmann::json& c : conditions) {
    if (FieldAs<std::string>(c, "type").value_or("") != api::kGpuNodeBackgroundCheating) continue;
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
