// Which work-queue keys an informer event concerns: the pure part of the manager's event
// handlers (manager.cpp). Internal to the controller library.
#ifndef WAVEPOOL_CONTROLLER_SRC_MANAGER_MANAGER_EVENTS_H_
#define WAVEPOOL_CONTROLLER_SRC_MANAGER_MANAGER_EVENTS_H_

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace wavepool::controller::internal {

// The pod store's index of pods by spec.nodeName.
inline constexpr char kNodePodIndex[] = "wavepool-node";
std::vector<std::string> NodePodIndex(const nlohmann::json& pod);

// "<namespace>/<job>" of the TrainingJob that owns a pod, ConfigMap or Service: its controller
// ownerReference of kind TrainingJob, else the wavepool.dev/job-name annotation (a pod whose
// owner reference was stripped by an orphaning delete still names its job). nullopt for neither.
std::optional<std::string> OwningJobKey(const nlohmann::json& object);

// True when `new_pod` stopped holding GPUs that `old_pod` held: it turned Succeeded or Failed.
bool PodFreedGpus(const nlohmann::json& old_pod, const nlohmann::json& new_pod);

// What placement reads from a GPUNode (node name, conditions, each GPU's index, UUID, memory
// and observed memory peak), without what changes on every heartbeat (heartbeatTime,
// occupancy, tasks' progress): a change here may free or add GPU capacity.
nlohmann::json GpuNodePlacementView(const nlohmann::json& gpu_node);

// status.heartbeatTime of a GPUNode as the agent wrote it ("" when absent): compared only for
// change, never with a clock (heartbeat_observations.h).
std::string HeartbeatOf(const nlohmann::json& gpu_node);

// spec.nodeName of a GPUNode: the Node whose GPUs it reports ("" when absent or not a string).
std::string NodeNameOf(const nlohmann::json& gpu_node);

// True when `new_job` is being deleted (metadata.deletionTimestamp set) and `old_job` was not:
// its reservations and nominations end with its next reconcile.
bool JobDeletionStarted(const nlohmann::json& old_job, const nlohmann::json& new_job);

// Jobs ("<namespace>/<job>") whose tasks on the GPUNode appeared, vanished or reported new
// progress between the two versions (either may be null): their status.progress is stale.
std::set<std::string> JobsWithChangedTasks(const nlohmann::json& old_node,
                                           const nlohmann::json& new_node);

// Jobs ("<namespace>/<job>") of the tasks whose pods the GPUNode's BackgroundCheating condition
// names (api/gpu_node_conditions.h): their reconcile restarts them elsewhere.
std::set<std::string> JobsFlaggedCheating(const nlohmann::json& gpu_node);

}  // namespace wavepool::controller::internal

#endif  // WAVEPOOL_CONTROLLER_SRC_MANAGER_MANAGER_EVENTS_H_
