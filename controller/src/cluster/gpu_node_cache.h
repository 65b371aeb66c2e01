// KubeCluster's GPUNodes, decoded once per resourceVersion and kept in the parts that change at
// different rates (cluster.h): an agent rewrites its heartbeat time, its GPUs' occupancy and its
// tasks' progress on every heartbeat, while what placement reads changes only when GPUs,
// memory or conditions do. With a heartbeat every 30 s from each of 1,000 nodes, a list rebuilt
// on every GPUNode change would be rebuilt (and screened, and its node states worked out again)
// 33 times a second. Internal to the controller library; safe for concurrent use.
#ifndef WAVEPOOL_CONTROLLER_SRC_CLUSTER_GPU_NODE_CACHE_H_
#define WAVEPOOL_CONTROLLER_SRC_CLUSTER_GPU_NODE_CACHE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "cluster/decoded_cache.h"
#include "nlohmann/json.hpp"
#include "wavepool/api/gpu_node.h"
#include "wavepool/base/change_log.h"
#include "wavepool/controller/cluster.h"

namespace wavepool::controller::internal {

class GpuNodeCache {
 public:
  GpuNodeCache();

  // Decodes `object` (a GPUNode from the informer) unless its entry has that resourceVersion
  // already. One that does not decode is dropped and the error returned, for the log.
  absl::Status Upsert(const nlohmann::json& object);
  void Remove(const std::string& name);

  // ClusterReader::GetGpuNode, ListGpuNodes, GpuNodes, GpuNodeHeartbeatsSince and
  // GpuNodesWithTasksOf. The placement list is built once after each change to a placement part.
  std::optional<api::GpuNode> Get(std::string_view name) const;
  std::vector<api::GpuNode> List() const;
  std::shared_ptr<const std::vector<api::GpuNode>> PlacementParts() const;
  HeartbeatChanges HeartbeatsSince(std::uint64_t version) const;
  std::vector<api::GpuNode> WithTasksOf(std::string_view ns, std::string_view job) const;

 private:
  // What a whole GPUNode of `wholes_` gave.
  struct Parts {
    std::shared_ptr<const api::GpuNode> whole;           // The one they were taken from.
    std::shared_ptr<const api::GpuNode> placement_part;  // Kept while it stays the same.
  };

  // Takes the parts of `name` out; the GPUNode is gone.
  void RemoveParts(const std::string& name);

  // The whole GPUNodes, indexed by the "ns/job" of each of their tasks.
  DecodedCache<api::GpuNode> wholes_;
  mutable absl::Mutex mu_;
  std::map<std::string, Parts> parts_ ABSL_GUARDED_BY(mu_);  // By name.
  // The placement list handed out; null: stale.
  mutable std::shared_ptr<const std::vector<api::GpuNode>> placement_parts_ ABSL_GUARDED_BY(mu_);
  // Every change to a GPUNode's heartbeat time, its first and its removal included.
  ChangeLog heartbeat_changes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace wavepool::controller::internal

#endif  // WAVEPOOL_CONTROLLER_SRC_CLUSTER_GPU_NODE_CACHE_H_
