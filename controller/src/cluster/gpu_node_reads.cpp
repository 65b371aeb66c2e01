// How a ClusterReader hands out GPUNodes (cluster.h): the placement part, and the reads that the
// default implementations derive from ListGpuNodes().
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wavepool/controller/cluster.h"

namespace wavepool::controller {
namespace {

bool HasTaskOf(const api::GpuNode& node, std::string_view ns, std::string_view job) {
  for (const api::GpuStatus& gpu : node.status.gpus) {
    for (const api::GpuTask& task : gpu.tasks) {
      if (task.namespace_ == ns && task.job == job) return true;
    }
  }
  return false;
}

}  // namespace

api::GpuNode PlacementPartOf(api::GpuNode node) {
  node.status.heartbeat_time.clear();
  for (api::GpuStatus& gpu : node.status.gpus) {
    gpu.occupancy = {};
    gpu.tasks.clear();
    if (gpu.memory_wave.has_value()) gpu.memory_wave = api::MemoryWave{gpu.memory_wave->peak_bytes};
  }
  return node;
}

bool SamePlacementPart(const api::GpuNode& a, const api::GpuNode& b) {
  nlohmann::json a_json = api::ToJson(a);
  nlohmann::json b_json = api::ToJson(b);
  a_json["metadata"].erase("resourceVersion");
  b_json["metadata"].erase("resourceVersion");
  return a_json == b_json;
}

std::optional<api::GpuNode> ClusterReader::GetGpuNode(std::string_view name) const {
  for (api::GpuNode& node : ListGpuNodes()) {
    if (node.metadata.name == name) return std::move(node);
  }
  return std::nullopt;
}

std::shared_ptr<const std::vector<api::GpuNode>> ClusterReader::GpuNodes() const {
  std::vector<api::GpuNode> parts = ListGpuNodes();
  for (api::GpuNode& node : parts) node = PlacementPartOf(std::move(node));
  return std::make_shared<const std::vector<api::GpuNode>>(std::move(parts));
}

HeartbeatChanges ClusterReader::GpuNodeHeartbeatsSince(std::uint64_t version) const {
  (void)version;
  HeartbeatChanges changes;
  changes.complete = true;
  for (api::GpuNode& node : ListGpuNodes()) {
    changes.changed.emplace_back(node.metadata.name, std::make_shared<const std::string>(
                                                         std::move(node.status.heartbeat_time)));
  }
  return changes;
}

std::vector<api::GpuNode> ClusterReader::GpuNodesWithTasksOf(std::string_view ns,
                                                             std::string_view job) const {
  std::vector<api::GpuNode> nodes = ListGpuNodes();
  nodes.erase(std::remove_if(nodes.begin(), nodes.end(),
                             [&](const api::GpuNode& node) { return !HasTaskOf(node, ns, job); }),
              nodes.end());
  return nodes;
}

}  // namespace wavepool::controller
