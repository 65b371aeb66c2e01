// The simulated cluster (cluster.h): its state, the inventories it builds for placement, and the
// decisions placement makes on them.
#include "wavepool/simulate/cluster.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::simulate {
namespace {

controller::NodeState Ready() { return {true, true, true}; }

// The pod of a foreground rank: one per GPU, as the reconciler creates them.
std::string ForegroundPod(const std::string& job, const std::string& uuid) {
  return absl::StrCat(job, "@", uuid);
}

std::string Describe(const ForegroundDecision& d) {
  return absl::StrCat("GPUs [", absl::StrJoin(d.gpus, ","), "], preempting [",
                      absl::StrJoin(d.preempted, ","), "]");
}

}  // namespace

absl::StatusOr<SimulatedCluster> SimulatedCluster::Create(
    const ClusterShape& shape, const controller::PlacementOptions& options,
    std::vector<std::string> job_names, bool verify) {
  if (shape.nodes < 1 || shape.nodes > 99999) {
    return absl::InvalidArgumentError(
        absl::StrCat("nodes: must be in [1, 99999], got ", shape.nodes));
  }
  if (shape.gpus_per_node < 1 || shape.gpus_per_node > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpus_per_node: must be in [1, 64], got ", shape.gpus_per_node));
  }
  if (shape.gpu_memory_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpu_memory_bytes: must be > 0, got ", shape.gpu_memory_bytes));
  }
  if (options.max_background_per_gpu != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_background_per_gpu: the simulation runs one background pod per GPU, got ",
                     options.max_background_per_gpu));
  }
  SimulatedCluster c;
  c.shape_ = shape;
  c.options_ = options;
  c.job_names_ = std::move(job_names);
  c.verify_ = verify;
  const int gpus = shape.nodes * shape.gpus_per_node;
  for (int n = 0; n < shape.nodes; ++n) c.node_names_.push_back(absl::StrFormat("node-%05d", n));
  for (GpuId g = 0; g < gpus; ++g) {
    c.uuids_.push_back(
        absl::StrFormat("GPU-%05d-%02d", g / shape.gpus_per_node, g % shape.gpus_per_node));
    c.gpu_by_uuid_.emplace(c.uuids_.back(), g);
  }
  c.foreground_.assign(gpus, kNoJob);
  c.background_.assign(gpus, kNoJob);
  c.background_bytes_.assign(gpus, 0);
  c.terms_.assign(gpus, ForegroundTerms{});
  c.admits_.assign(gpus, 0);
  c.node_free_.assign(shape.nodes, shape.gpus_per_node);
  c.free_for_foreground_ = gpus;
  c.open_for_background_ = gpus;
  // The margin by placement's own rule, read off a one-node inventory.
  WAVEPOOL_ASSIGN_OR_RETURN(controller::Inventory one, c.InventoryOf({0}));
  c.margin_bytes_ = one.MarginBytes(one.gpus().front());
  return c;
}

bool SimulatedCluster::Admits(GpuId g) const {
  if (background_[g] != kNoJob) return false;
  return foreground_[g] == kNoJob || admits_[g] != 0;
}

void SimulatedCluster::AssignForeground(JobId job, const std::vector<GpuId>& gpus,
                                        const ForegroundTerms& terms) {
  controller::GpuAssignment fg;
  fg.allow_background = terms.allow_background;
  fg.max_foreground_slowdown = terms.max_foreground_slowdown;
  const char admits = controller::AdmitsBackground(fg) ? 1 : 0;
  for (GpuId g : gpus) {
    const bool was_open = Admits(g);
    foreground_[g] = job;
    terms_[g] = terms;
    admits_[g] = admits;
    --node_free_[NodeOf(g)];
    --free_for_foreground_;
    open_for_background_ += (Admits(g) ? 1 : 0) - (was_open ? 1 : 0);
  }
}

void SimulatedCluster::ReleaseForeground(JobId job, const std::vector<GpuId>& gpus) {
  for (GpuId g : gpus) {
    if (foreground_[g] != job) continue;
    const bool was_open = Admits(g);
    foreground_[g] = kNoJob;
    terms_[g] = ForegroundTerms{};
    admits_[g] = 0;
    ++node_free_[NodeOf(g)];
    ++free_for_foreground_;
    open_for_background_ += (Admits(g) ? 1 : 0) - (was_open ? 1 : 0);
  }
}

void SimulatedCluster::AssignBackground(JobId job, GpuId gpu, planner::Bytes memory_bytes) {
  if (Admits(gpu)) --open_for_background_;
  background_[gpu] = job;
  background_bytes_[gpu] = memory_bytes;
}

void SimulatedCluster::ReleaseBackground(GpuId gpu) {
  background_[gpu] = kNoJob;
  background_bytes_[gpu] = 0;
  if (Admits(gpu)) ++open_for_background_;
}

absl::StatusOr<controller::Inventory> SimulatedCluster::InventoryOf(
    const std::vector<int>& nodes) const {
  std::vector<api::GpuNode> gpu_nodes;
  std::map<std::string, controller::NodeState> states;
  std::vector<controller::GpuAssignment> assignments;
  for (int n : nodes) {
    api::GpuNode node;
    node.metadata.name = node_names_[n];
    node.spec.node_name = node_names_[n];
    for (int i = 0; i < shape_.gpus_per_node; ++i) {
      const GpuId g = n * shape_.gpus_per_node + i;
      api::GpuStatus gpu;
      gpu.index = i;
      gpu.uuid = uuids_[g];
      gpu.model = shape_.gpu_model;
      gpu.memory_bytes = shape_.gpu_memory_bytes;
      node.status.gpus.push_back(std::move(gpu));
      if (foreground_[g] != kNoJob) {
        controller::GpuAssignment a;
        a.job = job_names_[foreground_[g]];
        a.pod = ForegroundPod(a.job, uuids_[g]);
        a.role = api::Role::kForeground;
        a.node = node_names_[n];
        a.gpu_uuids = {uuids_[g]};
        a.memory_per_gpu_bytes = terms_[g].memory_per_gpu_bytes;
        a.idle_fraction = terms_[g].idle_fraction;
        a.allow_background = terms_[g].allow_background;
        a.max_foreground_slowdown = terms_[g].max_foreground_slowdown;
        assignments.push_back(std::move(a));
      }
      if (background_[g] != kNoJob) {
        controller::GpuAssignment a;
        a.job = job_names_[background_[g]];
        a.pod = a.job;
        a.role = api::Role::kBackground;
        a.node = node_names_[n];
        a.gpu_uuids = {uuids_[g]};
        a.memory_per_gpu_bytes = background_bytes_[g];
        assignments.push_back(std::move(a));
      }
    }
    states.emplace(node_names_[n], Ready());
    gpu_nodes.push_back(std::move(node));
  }
  return controller::Inventory::Build(gpu_nodes, states, assignments, options_);
}

absl::StatusOr<controller::Inventory> SimulatedCluster::FullInventory() const {
  std::vector<int> all(shape_.nodes);
  for (int n = 0; n < shape_.nodes; ++n) all[n] = n;
  return InventoryOf(all);
}

absl::StatusOr<ForegroundDecision> SimulatedCluster::DecideForeground(
    JobId job, std::int64_t gpus, planner::Bytes memory, bool exclusive,
    const controller::Inventory& inv) const {
  controller::ForegroundRequest request;
  request.job = job_names_[job];
  request.gpus = gpus;
  request.memory_per_gpu_bytes = memory;
  request.exclusive = exclusive;
  WAVEPOOL_ASSIGN_OR_RETURN(controller::ForegroundPlacement placed,
                            controller::PlaceForeground(request, inv));
  ForegroundDecision decision;
  for (const controller::RankPlacement& r : placed.ranks) {
    decision.gpus.push_back(gpu_by_uuid_.at(r.gpu_uuid));
  }
  for (const controller::Preemption& p : placed.preemptions) {
    decision.preempted.push_back(background_[gpu_by_uuid_.at(p.gpu_uuid)]);
  }
  return decision;
}

absl::StatusOr<ForegroundDecision> SimulatedCluster::PlaceForeground(JobId job, std::int64_t gpus,
                                                                     planner::Bytes memory,
                                                                     bool exclusive) const {
  const std::vector<int> nodes = ForegroundCandidates(gpus, memory, exclusive);
  if (nodes.empty()) {
    return absl::ResourceExhaustedError(absl::StrCat(job_names_[job], " needs ", gpus, " GPUs; ",
                                                     free_for_foreground_,
                                                     " hold no foreground job"));
  }
  WAVEPOOL_ASSIGN_OR_RETURN(controller::Inventory inv, InventoryOf(nodes));
  absl::StatusOr<ForegroundDecision> decision = DecideForeground(job, gpus, memory, exclusive, inv);
  if (!verify_) return decision;
  WAVEPOOL_ASSIGN_OR_RETURN(controller::Inventory full, FullInventory());
  absl::StatusOr<ForegroundDecision> reference =
      DecideForeground(job, gpus, memory, exclusive, full);
  if (decision.ok() != reference.ok() ||
      (decision.ok() &&
       (decision->gpus != reference->gpus || decision->preempted != reference->preempted))) {
    return absl::InternalError(
        absl::StrCat(job_names_[job], ": the candidate nodes gave ",
                     decision.ok() ? Describe(*decision) : decision.status().ToString(),
                     ", the whole inventory ",
                     reference.ok() ? Describe(*reference) : reference.status().ToString()));
  }
  return decision;
}

absl::StatusOr<GpuId> SimulatedCluster::PlaceBackground(JobId job,
                                                        planner::Bytes memory_bytes) const {
  const std::vector<int> nodes = BackgroundCandidates(memory_bytes);
  if (nodes.empty()) {
    return absl::ResourceExhaustedError(
        absl::StrCat(job_names_[job], " needs 1 GPU; no GPU takes it now"));
  }
  auto decide = [&](const std::vector<int>& on) -> absl::StatusOr<GpuId> {
    WAVEPOOL_ASSIGN_OR_RETURN(controller::Inventory inv, InventoryOf(on));
    WAVEPOOL_ASSIGN_OR_RETURN(controller::BackgroundPlacement placed,
                              controller::PlaceBackground({job_names_[job], memory_bytes}, inv));
    return gpu_by_uuid_.at(placed.gpu_uuid);
  };
  absl::StatusOr<GpuId> gpu = decide(nodes);
  if (!verify_) return gpu;
  std::vector<int> all(shape_.nodes);
  for (int n = 0; n < shape_.nodes; ++n) all[n] = n;
  absl::StatusOr<GpuId> reference = decide(all);
  if (gpu.ok() != reference.ok() || (gpu.ok() && *gpu != *reference)) {
    return absl::InternalError(absl::StrCat(
        job_names_[job], ": the candidate nodes gave ",
        gpu.ok() ? absl::StrCat("GPU ", *gpu) : gpu.status().ToString(), ", the whole inventory ",
        reference.ok() ? absl::StrCat("GPU ", *reference) : reference.status().ToString()));
  }
  return gpu;
}

}  // namespace wavepool::simulate
