// A Plan compiled against its model graph: which layers each stage runs, on which ranks, on
// which samples, and what moves between ranks. Every executor runs a StageProgram; nothing about
// parallelism is decided after this point.
//
// Samples. One step trains samples_per_step() positions: global_batch_size, or waves x
// global_batch_size for ModelParallelWaves (every wave its own batch, wavelet-tick-tock §3.3).
// A stage instance (stage s, wave w) runs stage s's layers on the wave's positions [w*B, (w+1)*B)
// split over its ranks in contiguous blocks of per_gpu_batch samples, in rank order (DeepPool §4:
// a sample keeps its place in the order; the last block may be shorter, or empty).
//
// Ranks. Burst-parallel and data-parallel stages run on the plan's ranks. ModelParallelWaves
// stages each have one rank r: Stationary runs every wave of stage s on r; RoundRobin runs wave w
// of stage s on (r + w) mod gpus (wavelet-tick-tock §3.3.2), so a rank holds every partition it
// runs and each partition's holders all-reduce its gradients (§3.3.3).
//
// Transfers. A layer's input produced in another stage moves from the producer instance's ranks
// to the consumer instance's ranks, each rank receiving exactly the rows of its block from the
// ranks that hold them (rows already on the rank are not moved); gradients move back the same
// way. Every instance runs after the instances it reads from in forward_order(), and backward
// runs in the reverse order, so no rank ever waits for a rank that waits for it.
//
// Plain value, immutable after Compile; safe to share between threads.
#ifndef WAVEPOOL_RUNTIME_STAGE_PROGRAM_H_
#define WAVEPOOL_RUNTIME_STAGE_PROGRAM_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/api/plan.h"
#include "wavepool/planner/model.h"

namespace wavepool::runtime {

// Positions [begin, end) of a step's samples.
struct RowRange {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  std::int64_t size() const { return end > begin ? end - begin : 0; }
  bool empty() const { return end <= begin; }
  RowRange Intersect(const RowRange& other) const;
};

struct StageInstance {
  int id = 0;     // position in forward_order()
  int stage = 0;  // plan stage index
  int wave = 0;
  std::vector<int> ranks;  // block k runs on ranks[k]; ascending except under RoundRobin
  RowRange samples;        // the wave's positions in the step
  std::int64_t per_rank = 0;

  // The block of ranks[k] (may be empty).
  RowRange Block(int k) const;
  // The block `rank` runs, empty when the rank is not in this instance.
  RowRange BlockOf(int rank) const;
  // k with ranks[k] == rank, or -1.
  int IndexOf(int rank) const;
};

// A layer output that feeds a later stage: producer in stage `from`, read by stage `to`.
struct StageEdge {
  int id = 0;  // position in edges()
  planner::LayerId producer = 0;
  int from_stage = 0;
  int to_stage = 0;
};

class StageProgram {
 public:
  // InvalidArgument naming the plan field or layer when the plan does not fit the graph: a layer
  // the graph lacks, a graph layer no stage runs, a layer whose input runs in a later stage, a
  // model-parallel-waves stage on more than one rank, a rank outside [0, gpus). The plan must
  // already pass api::Validate.
  static absl::StatusOr<StageProgram> Compile(const api::Plan& plan,
                                              const planner::ModelGraph& graph);

  int world_size() const { return world_size_; }
  int stage_count() const { return static_cast<int>(stage_layers_.size()); }
  int waves() const { return waves_; }
  std::int64_t samples_per_step() const { return samples_per_step_; }

  // Instances in the order every rank runs them forward: stage by stage, waves within a stage.
  const std::vector<StageInstance>& forward_order() const { return instances_; }
  // Stage s's layers in graph (topological) order.
  const std::vector<planner::LayerId>& stage_layers(int stage) const {
    return stage_layers_[static_cast<std::size_t>(stage)];
  }
  int stage_of(planner::LayerId layer) const { return stage_of_[static_cast<std::size_t>(layer)]; }
  const std::vector<StageEdge>& edges() const { return edges_; }
  // Edges into / out of a stage, by id.
  const std::vector<int>& edges_into(int stage) const {
    return edges_into_[static_cast<std::size_t>(stage)];
  }
  const std::vector<int>& edges_out_of(int stage) const {
    return edges_out_of_[static_cast<std::size_t>(stage)];
  }
  // Whether a stage has a layer reading the model input / holds the graph's sink (the loss).
  bool reads_input(int stage) const { return reads_input_[static_cast<std::size_t>(stage)]; }
  bool holds_sink(int stage) const { return stage_of(sink_) == stage; }
  planner::LayerId sink() const { return sink_; }

  // The instance of (stage, wave).
  const StageInstance& instance(int stage, int wave) const;
  // The ranks holding a replica of stage s (the union of its instances' ranks, ascending): they
  // all-reduce its gradients.
  const std::vector<int>& sync_group(int stage) const {
    return sync_groups_[static_cast<std::size_t>(stage)];
  }
  // Every distinct sync group with at least two ranks.
  std::vector<std::vector<int>> DistinctSyncGroups() const;
  // The layers a rank must build (every layer of every stage it runs), ascending.
  std::vector<planner::LayerId> LayersOn(int rank) const;
  // The ids of the instances a rank runs, in forward order.
  std::vector<int> InstancesOn(int rank) const;

  // Message tags: unique per (edge, wave, direction), the same on every rank.
  int ForwardTag(int edge, int wave) const { return (edge * waves_ + wave) * 2; }
  int BackwardTag(int edge, int wave) const { return (edge * waves_ + wave) * 2 + 1; }

 private:
  StageProgram() = default;

  int world_size_ = 1;
  int waves_ = 1;
  std::int64_t samples_per_step_ = 1;
  planner::LayerId sink_ = 0;
  std::vector<std::vector<planner::LayerId>> stage_layers_;
  std::vector<int> stage_of_;
  std::vector<StageInstance> instances_;
  std::vector<StageEdge> edges_;
  std::vector<std::vector<int>> edges_into_, edges_out_of_;
  std::vector<bool> reads_input_;
  std::vector<std::vector<int>> sync_groups_;
};

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_STAGE_PROGRAM_H_
