// The simulated cluster's GPUs and who holds them, and placement through the controller's own
// library (controller/placement.h): every decision is PlaceForeground or PlaceBackground on a
// controller::Inventory built, as the reconciler builds it, from GPUNodes and the pods' GPU
// assignments (one pod per foreground rank, one per background job).
//
// Scale. An Inventory of 8,000 GPUs costs milliseconds to build and to survey, and a simulation
// makes tens of thousands of decisions, so each decision gets an inventory of the few nodes that
// can hold its answer, found from counters kept here:
//  - a gang that fits on one node: the best node under placement's own order (fewest preempted
//    pods, then fewest background pods left beside it, then the tightest fit, then the name) and
//    the three next best;
//  - a gang that spans nodes: the nodes placement takes whole (most free GPUs first, then the
//    name), the node at which that run stops, and the best node for the remainder;
//  - a background job: the nodes of the best and the second best GPU under placement's order
//    (shared with a foreground first, then idle share, then memory headroom, then the name).
// Placement then decides among them. The decision is the one the whole inventory gives (tests
// compare the two on random clusters; `verify` compares them on every decision).
//
// Preempted pods are stopped gracefully (they checkpoint first), so they lose no progress: every
// background assignment has progress_at_risk 0 and placement prefers fewer victims, then names.
//
// Not thread-safe; a plain value (copyable).
#ifndef WAVEPOOL_SIMULATE_CLUSTER_H_
#define WAVEPOOL_SIMULATE_CLUSTER_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/controller/placement.h"
#include "wavepool/planner/units.h"

namespace wavepool::simulate {

using GpuId = std::int32_t;  // node * gpus_per_node + index on the node
using JobId = std::int32_t;  // index of the job in the trace
inline constexpr JobId kNoJob = -1;

struct ClusterShape {
  int nodes = 16;         // 1..99999 (named node-00000, node-00001, ...)
  int gpus_per_node = 8;  // 1..64
  planner::Bytes gpu_memory_bytes = 40LL << 30;
  std::string gpu_model = "NVIDIA A100-SXM4-40GB";
};

// What a foreground gang's pods tell placement (controller::GpuAssignment's foreground fields).
struct ForegroundTerms {
  planner::Bytes memory_per_gpu_bytes = 0;
  double idle_fraction = 0;
  bool allow_background = false;
  double max_foreground_slowdown = 1.1;
};

struct ForegroundDecision {
  std::vector<GpuId> gpus;       // in rank order
  std::vector<JobId> preempted;  // background jobs to stop first, by pod name
};

class SimulatedCluster {
 public:
  // `job_names[j]` names job j in pods and messages. InvalidArgument naming the field for a
  // shape out of range or options controller::Inventory::Build rejects. `verify`: also decide on
  // the whole inventory and fail (Internal) when the answers differ; for tests, slow.
  static absl::StatusOr<SimulatedCluster> Create(const ClusterShape& shape,
                                                 const controller::PlacementOptions& options,
                                                 std::vector<std::string> job_names,
                                                 bool verify = false);

  // Where gang `job` of `gpus` GPUs goes, by controller::PlaceForeground; `exclusive` as
  // ForegroundRequest::exclusive. Decides only (see AssignForeground). ResourceExhausted
  // (controller::IsNotPlaceable) when it cannot be placed now.
  absl::StatusOr<ForegroundDecision> PlaceForeground(JobId job, std::int64_t gpus,
                                                     planner::Bytes memory_per_gpu_bytes,
                                                     bool exclusive) const;
  // Where background `job` goes, by controller::PlaceBackground. ResourceExhausted when no GPU
  // takes it now.
  absl::StatusOr<GpuId> PlaceBackground(JobId job, planner::Bytes memory_bytes) const;

  // Records decisions. REQUIRES: the GPUs hold no foreground (AssignForeground), no background
  // (AssignBackground); the job holds them (Release*).
  void AssignForeground(JobId job, const std::vector<GpuId>& gpus, const ForegroundTerms& terms);
  void ReleaseForeground(JobId job, const std::vector<GpuId>& gpus);
  void AssignBackground(JobId job, GpuId gpu, planner::Bytes memory_bytes);
  void ReleaseBackground(GpuId gpu);

  JobId ForegroundOn(GpuId gpu) const { return foreground_[gpu]; }
  JobId BackgroundOn(GpuId gpu) const { return background_[gpu]; }
  int gpu_count() const { return static_cast<int>(foreground_.size()); }
  // GPUs without a foreground job: an upper bound on the gang a decision can place.
  int free_for_foreground() const { return free_for_foreground_; }
  // GPUs without a background job whose foreground (if any) admits one: zero means no
  // background job can be placed.
  int open_for_background() const { return open_for_background_; }
  // What placement keeps free on every GPU (controller::Inventory::MarginBytes).
  planner::Bytes margin_bytes() const { return margin_bytes_; }
  const ClusterShape& shape() const { return shape_; }

  // The whole cluster as the reconciler would see it (for tests and verification).
  absl::StatusOr<controller::Inventory> FullInventory() const;

 private:
  SimulatedCluster() = default;
  struct NodeFit;
  NodeFit FitOf(int node, planner::Bytes memory, bool exclusive) const;
  std::vector<int> ForegroundCandidates(std::int64_t gpus, planner::Bytes memory,
                                        bool exclusive) const;
  std::vector<int> BackgroundCandidates(planner::Bytes memory) const;
  absl::StatusOr<controller::Inventory> InventoryOf(const std::vector<int>& nodes) const;
  absl::StatusOr<ForegroundDecision> DecideForeground(JobId job, std::int64_t gpus,
                                                      planner::Bytes memory, bool exclusive,
                                                      const controller::Inventory& inv) const;
  bool Admits(GpuId gpu) const;
  int NodeOf(GpuId gpu) const { return gpu / shape_.gpus_per_node; }

  // Constant after Create.
  ClusterShape shape_;
  controller::PlacementOptions options_;
  std::vector<std::string> job_names_;
  std::vector<std::string> node_names_;
  std::vector<std::string> uuids_;  // by GpuId
  std::unordered_map<std::string, GpuId> gpu_by_uuid_;
  planner::Bytes margin_bytes_ = 0;
  bool verify_ = false;

  std::vector<JobId> foreground_;                 // by GpuId
  std::vector<JobId> background_;                 // by GpuId
  std::vector<planner::Bytes> background_bytes_;  // by GpuId
  std::vector<ForegroundTerms> terms_;            // of the foreground on each GPU, by GpuId
  std::vector<char> admits_;                      // controller::AdmitsBackground of it, by GpuId
  std::vector<int> node_free_;                    // GPUs without a foreground job, by node
  int free_for_foreground_ = 0;
  int open_for_background_ = 0;
};

}  // namespace wavepool::simulate

#endif  // WAVEPOOL_SIMULATE_CLUSTER_H_
