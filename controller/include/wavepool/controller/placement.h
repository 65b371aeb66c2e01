// Placement: which GPUs a TrainingJob's pods get, decided from the GPUNode inventory and the pods
// already placed. Pure logic, no I/O: the reconciler builds an Inventory from its informers'
// caches, asks PlaceForeground / PlaceBackground, then creates pods and writes status.
//
// Policy (deeppool-burst-parallel §3, §5; wavelet-tick-tock §3.2):
//  - A foreground (fg) job is a gang: every rank gets a GPU at once or none does, never a
//    half-created job. It goes on the fewest nodes (one node when it fits), so that its collectives
//    stay inside a node where they can. A GPU runs at most one fg job (DeepPool §3: a task manager
//    schedules one distributed fg job and one local bg job per GPU).
//  - A background (bg) job takes one GPU (DeepPool §1 limits bg jobs to a single GPU) whose fg job
//    allows background, preferring the GPU whose fg plan leaves the most idle GPU-time (the
//    cycles burst parallelism frees, DeepPool §4-5), then the most memory headroom.
//  - Memory is never overcommitted: a GPU's committed memory is the larger of what its pods
//    declared and the peak the agent observed (the memory-wave summary, wavelet §2.2: peaks are
//    regular and predictable), plus a safety margin (PlacementOptions).
//  - A fg job that needs a GPU exclusively, or more memory than the bg pods there leave, preempts
//    those bg pods: the fewest pods, then the least progress lost. A fg pod is never preempted.
//  - Ties break on node name, then GPU index, so a restarted controller decides the same.
#ifndef WAVEPOOL_CONTROLLER_PLACEMENT_H_
#define WAVEPOOL_CONTROLLER_PLACEMENT_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/api/enums.h"
#include "wavepool/api/gpu_node.h"
#include "wavepool/api/plan.h"
#include "wavepool/base/change_log.h"
#include "wavepool/planner/units.h"

namespace wavepool::controller {

using planner::Bytes;

// Reason of the Placed=False condition of a job that waits for GPUs.
inline constexpr std::string_view kNotPlaceableReason = "NotPlaceable";

// What the reconciler knows about a node besides its GPUNode. Freshness of the agent's heartbeat
// is decided by the caller (it owns the clock); placement only uses the verdict.
struct NodeState {
  bool ready = false;            // The Node's Ready condition is True.
  bool managed = false;          // Labelled wavepool.dev/managed=true.
  bool heartbeat_fresh = false;  // The GPUNode's heartbeat is recent enough to trust.

  friend bool operator==(const NodeState& a, const NodeState& b) {
    return a.ready == b.ready && a.managed == b.managed && a.heartbeat_fresh == b.heartbeat_fresh;
  }
  friend bool operator!=(const NodeState& a, const NodeState& b) { return !(a == b); }
};

// Every node's NodeState, by node name, as one immutable value shared by its readers.
using NodeStateMap = std::shared_ptr<const std::map<std::string, NodeState>>;

// One pod holding GPUs, as the reconciler recorded it in its job's status.placement.
struct GpuAssignment {
  std::string job;  // "namespace/name".
  std::string pod;  // Unique across the inventory.
  api::Role role = api::Role::kForeground;
  std::string node;
  std::vector<std::string> gpu_uuids;  // Background: exactly one.
  Bytes memory_per_gpu_bytes = 0;      // What the pod needs on each of its GPUs.
  // Foreground only.
  double idle_fraction = 0;      // Share of its GPU time the fg plan leaves idle, in [0, 1].
  bool allow_background = true;  // spec.collocation.allowBackground.
  double max_foreground_slowdown = 1.1;  // spec.collocation.maxForegroundSlowdown, >= 1.
  // Background only: work lost if the pod is stopped now (time since its last checkpoint).
  planner::Seconds progress_at_risk{0};
};

// The pods ("ns/name") whose GPUs changed since an earlier version of a change log
// (GpuClaims::PodChangesSince, ClusterReader::AssignmentChangesSince), each with what it holds
// now (nullptr: nothing any more): an inventory kept between decisions applies these instead of
// reading every pod again.
using AssignmentChanges = ChangeSet<GpuAssignment>;

// Whether the fg pod `fg` lets a bg pod share its GPU: it allows background and its slowdown
// limit leaves room for interference (a limit of exactly 1 leaves none, deeppool §5).
bool AdmitsBackground(const GpuAssignment& fg);

struct PlacementOptions {
  // Memory kept free on every GPU: max(fraction x GPU memory, minimum). The planner's memory
  // model counts tensors (paradl-oracle §3.3: weights, gradients, optimizer state, activations)
  // but not each process's CUDA context (several hundred MiB), cuDNN/cuBLAS workspaces or the
  // caching allocator's fragmentation, and a wave's peak wobbles between iterations. 5% of an
  // 80 GB GPU (4 GB) covers a context and workspaces for a fg and a bg process; the 1 GiB floor
  // covers small GPUs.
  double memory_margin_fraction = 0.05;
  Bytes memory_margin_min_bytes = Bytes{1} << 30;
  // Background pods per GPU (DeepPool §3 runs one next to the fg job).
  int max_background_per_gpu = 1;
  // Put bg pods on GPUs shared with a fg job before empty GPUs: a bg pod on an empty GPU must be
  // preempted as soon as a fg gang wants that GPU, while fg idle time is otherwise wasted.
  bool prefer_shared_gpus = true;
};

// The cluster's GPUs and who holds them: a plain value, copyable, not synchronised. Built once
// (Build), it can also be kept and brought up to date (SetGpus, Add, Remove) between decisions,
// each change costing what it touches, not the cluster's size; a decision that changes it for a
// while (its own pods taken out, queued jobs placed in) does so in a trial, undone at its end.
//
// It also keeps the GPUs filed the way the decisions look for them, updated with each change
// (log time per GPU touched): whether a fg rank may take a GPU (IsOpen) and counts of the GPUs it
// may not, and the GPUs that take one more bg pod, best first (background_ranking), so that a bg
// decision looks at the GPUs that can take its pod instead of every GPU in the cluster.
class Inventory {
 public:
  struct Gpu {
    std::string node;
    std::int64_t index = 0;
    std::string uuid;
    Bytes memory_bytes = 0;
    Bytes observed_peak_bytes = 0;     // Memory-wave peak; 0 before the agent saw a period.
    bool schedulable = false;          // Its node is ready, managed and fresh.
    std::vector<std::size_t> holders;  // Indexes for assignment(), in insertion order.
  };

  // A GPU that takes one more bg pod, as PlaceBackground ranks it.
  struct BackgroundRank {
    bool shared = false;  // Holds a fg pod, and PlacementOptions::prefer_shared_gpus is set.
    double idle = 1;      // The fg pod's idle_fraction; 1 without a fg pod (all idle).
    Bytes headroom = 0;   // HeadroomBytes.
    std::size_t gpu = 0;  // Index into gpus().
  };
  // Best first: shared, then the most idle, then the most headroom, then gpus() order.
  struct BestFirst {
    bool operator()(const BackgroundRank& a, const BackgroundRank& b) const {
      if (a.shared != b.shared) return a.shared;
      if (a.idle != b.idle) return a.idle > b.idle;
      if (a.headroom != b.headroom) return a.headroom > b.headroom;
      return a.gpu < b.gpu;
    }
  };
  using BackgroundRanking = std::set<BackgroundRank, BestFirst>;

  // InvalidArgument naming the object and field for: a GPUNode without spec.nodeName, two GPUs
  // with one UUID, negative GPU memory; an assignment without pod, with a repeated pod name,
  // negative memory, an idle fraction outside [0, 1], a slowdown below 1, a bg pod on other than
  // one GPU, or two fg pods on one GPU. A GPUNode missing from `states` is not schedulable.
  // Assignments naming GPUs absent from the inventory (their node vanished) are kept in
  // orphaned_pods() and hold nothing.
  static absl::StatusOr<Inventory> Build(const std::vector<api::GpuNode>& nodes,
                                         const std::map<std::string, NodeState>& states,
                                         const std::vector<GpuAssignment>& assignments,
                                         const PlacementOptions& options = {});

  // Replaces the GPU table with `nodes` and `states`, validated as in Build, keeping the pods.
  // When the same GPUs are listed (uuid, node, index), only their memory and schedulability are
  // updated, in time linear in the GPUs and independent of the pods; otherwise every pod is
  // recorded again. Nothing changes when it fails.
  absl::Status SetGpus(const std::vector<api::GpuNode>& nodes,
                       const std::map<std::string, NodeState>& states);

  // Records one more pod (after a placement), validated as in Build; nothing changes when it
  // fails. Constant time in the number of pods. The shared form keeps `assignment` without
  // copying it (the pods' assignments are immutable and shared with the cluster reader's cache).
  absl::Status Add(const GpuAssignment& assignment);
  absl::Status Add(std::shared_ptr<const GpuAssignment> assignment);
  // Forgets a pod (deleted or preempted), in time linear in its GPUs' holders. NotFound for an
  // unknown pod.
  absl::Status Remove(std::string_view pod);

  // From StartTrial to UndoTrial, every Add and Remove that succeeds is recorded; UndoTrial
  // reverts them, newest first, leaving the same pods on the same GPUs (a holder list's order
  // may differ). REQUIRES: no trial running for StartTrial, one running for UndoTrial.
  void StartTrial();
  void UndoTrial();

  // Sorted by node name, then GPU index.
  const std::vector<Gpu>& gpus() const { return gpus_; }
  // The pod of a GPU's holders index (Gpu::holders).
  const GpuAssignment& assignment(std::size_t i) const { return *assignments_[i]; }
  // The fg pod holding `gpu`, if any (at most one: Add refuses a second); nullptr otherwise.
  const GpuAssignment* ForegroundOn(const Gpu& gpu) const;
  // Whether `pod` ("ns/name") is recorded.
  bool Holds(const std::string& pod) const { return assignment_by_pod_.count(pod) > 0; }
  // The GPU of `uuid`; nullptr when no GPUNode lists it.
  const Gpu* FindGpu(const std::string& uuid) const;
  const std::vector<std::string>& orphaned_pods() const { return orphaned_pods_; }
  const PlacementOptions& options() const { return options_; }

  // Whether gpus()[gpu] is schedulable and holds no fg pod: the only GPUs a fg rank may take
  // (one fg job per GPU).
  bool IsOpen(std::size_t gpu) const { return filed_[gpu].open; }
  // How many GPUs are not schedulable, and how many schedulable ones hold a fg pod.
  std::size_t unschedulable_gpus() const { return unschedulable_gpus_; }
  std::size_t foreground_held_gpus() const { return foreground_held_gpus_; }
  // The schedulable GPUs whose fg pod, if any, admits background (AdmitsBackground) and that hold
  // fewer than PlacementOptions::max_background_per_gpu bg pods.
  const BackgroundRanking& background_ranking() const { return background_ranking_; }

  // max(sum of the holders' declared memory, observed peak): what placement treats as used.
  Bytes CommittedBytes(const Gpu& gpu) const;
  // Memory kept free on `gpu` (PlacementOptions).
  Bytes MarginBytes(const Gpu& gpu) const;
  // memory - committed - margin; may be negative when the agent saw more than fits.
  Bytes HeadroomBytes(const Gpu& gpu) const;

 private:
  struct TrialStep {
    bool added = false;  // Else removed.
    std::shared_ptr<const GpuAssignment> assignment;
  };

  // Whether `a` may go on its GPUs: one fg pod per GPU.
  absl::Status CheckForegroundClash(const GpuAssignment& a) const;
  // Records assignments_[i] on its GPUs (and as orphaned when one is unknown).
  void Record(std::size_t i);
  // Records every pod again, on a new GPU table.
  void Reindex();
  void Forget(std::size_t i);
  // Files gpus_[g] again (filed_, the counts, background_ranking_) after a change to it or its
  // holders.
  void Refile(std::size_t g);
  // Takes gpus_[g] out of where it is filed.
  void Unfile(std::size_t g);

  PlacementOptions options_;
  std::vector<Gpu> gpus_;
  std::unordered_map<std::string, std::size_t> gpu_by_uuid_;
  // Slots; a removed pod's is empty and listed in free_slots_ until an Add reuses it.
  std::vector<std::shared_ptr<const GpuAssignment>> assignments_;
  std::vector<std::size_t> free_slots_;
  std::unordered_map<std::string, std::size_t> assignment_by_pod_;  // Index into assignments_.
  std::vector<std::string> orphaned_pods_;
  bool in_trial_ = false;
  std::vector<TrialStep> trial_;

  // Where each GPU is filed, by index into gpus_, for Unfile.
  struct Filed {
    bool unschedulable = false;
    bool foreground_held = false;
    bool open = false;
    std::optional<BackgroundRank> rank;  // Its key in background_ranking_.
  };
  std::vector<Filed> filed_;
  std::size_t unschedulable_gpus_ = 0;
  std::size_t foreground_held_gpus_ = 0;
  BackgroundRanking background_ranking_;
};

struct ForegroundRequest {
  std::string job;  // "namespace/name", for messages.
  std::int64_t gpus = 0;
  Bytes memory_per_gpu_bytes = 0;
  // The job must be alone on its GPUs: set when spec.collocation.allowBackground is false.
  bool exclusive = false;
  // Most nodes the gang may span; 0 for no limit.
  std::int64_t max_nodes = 0;
};

// One rank of a fg gang. Ranks are numbered node by node, GPU index within a node.
struct RankPlacement {
  std::int64_t rank = 0;
  std::string node;
  std::int64_t gpu_index = 0;
  std::string gpu_uuid;
};

// A bg pod to stop gracefully (checkpoint, then exit), mark Preempted and place again later.
struct Preemption {
  std::string job;
  std::string pod;
  std::string node;
  std::string gpu_uuid;
  std::string reason;  // For the Preempted condition's message.
};

struct ForegroundPlacement {
  std::vector<RankPlacement> ranks;     // size == request.gpus.
  std::vector<std::string> nodes;       // Distinct nodes, in rank order.
  std::vector<Preemption> preemptions;  // Sorted by pod name.
};

// Places a fg gang all-or-nothing. InvalidArgument names a bad request field
// (request.gpus must be >= 1, request.memory_per_gpu_bytes >= 0, request.max_nodes >= 0).
// ResourceExhausted when it cannot be placed now; the message says why, for the Placed=False
// condition, e.g. "needs 8 GPUs with 30.0 GiB free each on at most 1 node; largest fit: 6 on
// node-a".
absl::StatusOr<ForegroundPlacement> PlaceForeground(const ForegroundRequest& request,
                                                    const Inventory& inventory);

struct BackgroundRequest {
  BackgroundRequest(std::string job_name, Bytes memory, std::set<std::string> excluded = {})
      : job(std::move(job_name)), memory_bytes(memory), excluded_nodes(std::move(excluded)) {}

  std::string job;  // "namespace/name", for messages.
  Bytes memory_bytes = 0;
  // Nodes the job must not go to: where its worker was caught using the GPU beyond what its
  // launch gate allowed (the GPUNode's BackgroundCheating condition).
  std::set<std::string> excluded_nodes;
};

struct BackgroundPlacement {
  std::string node;
  std::int64_t gpu_index = 0;
  std::string gpu_uuid;
  std::string fg_job;  // The fg job sharing the GPU; empty on an otherwise empty GPU.
};

// Places a bg pod on one GPU; never preempts. InvalidArgument for memory_bytes < 0;
// ResourceExhausted with the reason when no GPU takes it. Looks the GPU up in the inventory's
// background_ranking; only a pod that no GPU takes costs a visit of every GPU, to say why.
absl::StatusOr<BackgroundPlacement> PlaceBackground(const BackgroundRequest& request,
                                                    const Inventory& inventory);
// PlaceBackground's GPU without the reason when there is none (nullopt): for a caller that places
// jobs it does not report on (the jobs queued ahead of a decision). REQUIRES: memory_bytes >= 0.
std::optional<BackgroundPlacement> FindBackgroundGpu(const BackgroundRequest& request,
                                                     const Inventory& inventory);

// True for the status PlaceForeground / PlaceBackground return when the job must wait.
bool IsNotPlaceable(const absl::Status& status);

// The share of its GPU time a fg plan leaves idle, from its predictions:
// background_idle_gpu_seconds / (iteration_seconds x gpus), clamped to [0, 1]; 0 when unknown.
double IdleFraction(const api::PlanPredictions& predictions, std::int64_t gpus);

}  // namespace wavepool::controller

#endif  // WAVEPOOL_CONTROLLER_PLACEMENT_H_
