// The ParaDL performance oracle (paradl-oracle §3-4, Table 3): per iteration and per epoch
// compute, communication and memory of data, spatial, filter, channel, pipeline and hybrid
// parallelism, their feasibility limits, scaling series and a ranking.
//
// Notation as in the paper: D samples per epoch, B global batch, p GPUs, delta bytes per item
// (kBytesPerItem), |x|/|y|/|w| input, output and weight items of a layer per sample. Every
// strategy runs an iteration as compute followed by communication (no overlap), and an epoch as
// ceil(D / B) such iterations. The hybrids place p2 = model_split_gpus GPUs of a model-split
// group inside a node and run data parallelism across the p1 = p / p2 groups. The formulas of
// each strategy, and where they depart from the paper's artifact, are in docs/planner.md.
#ifndef WAVEPOOL_PLANNER_ORACLE_H_
#define WAVEPOOL_PLANNER_ORACLE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/planner/comm.h"
#include "wavepool/planner/compute_cost.h"
#include "wavepool/planner/model.h"
#include "wavepool/planner/units.h"

namespace wavepool::planner {

enum class Strategy { kData, kSpatial, kFilter, kChannel, kPipeline, kDataFilter, kDataSpatial };

// Every strategy, in the order above (the ranking's tie-break order).
const std::vector<Strategy>& AllStrategies();
// "data", "spatial", "filter", "channel", "pipeline", "data+filter", "data+spatial".
std::string_view StrategyName(Strategy strategy);
// The inverse of StrategyName, case-insensitive; nullopt for an unknown name.
std::optional<Strategy> ParseStrategy(std::string_view name);

struct OracleConfig {
  std::int64_t dataset_samples = 1'280'000;  // D
  std::int64_t global_batch = 0;             // B
  int gpus = 0;                              // p
  int pipeline_microbatches = 4;             // S
  // p2 of the hybrids. 0: the network's gpus_per_node (all p GPUs when p is smaller). An explicit
  // value must divide gpus.
  int model_split_gpus = 0;
  Bytes device_memory = 0;            // capacity of one GPU
  int optimizer_state_per_param = 2;  // items per parameter: Adam 2, SGD with momentum 1
  // Leave the in-place layers' tensors (Layer::reuses_input_memory) out of activation memory.
  bool memory_reuse = true;
};

// OK, or InvalidArgument naming the field ("config.gpus: must be >= 1, got 0"): dataset_samples,
// global_batch, gpus, pipeline_microbatches, device_memory >= 1; optimizer_state_per_param >= 0;
// model_split_gpus >= 0 and, when set, a divisor of gpus.
absl::Status ValidateOracleConfig(const OracleConfig& config);

// Memory of one GPU, in bytes.
struct MemoryBreakdown {
  Bytes activations = 0;  // stored inputs and outputs with their gradients
  Bytes weights = 0;
  Bytes gradients = 0;
  Bytes optimizer_state = 0;  // optimizer_state_per_param items per weight held

  Bytes Total() const { return activations + weights + gradients + optimizer_state; }
};

// One strategy's prediction. When !feasible only strategy, gpus, global_batch, feasible and
// infeasible_reason are meaningful; every time and size is 0.
struct Prediction {
  Strategy strategy = Strategy::kData;
  int gpus = 0;
  std::int64_t global_batch = 0;
  bool feasible = false;
  std::string infeasible_reason;  // e.g. "filter: 128 GPUs exceed the 64 filters of conv1_1"
  std::string layout;             // how the work is divided, for people

  Seconds compute_per_iteration{0};
  Seconds communication_per_iteration{0};
  Seconds iteration{0};                   // compute + communication
  std::int64_t iterations_per_epoch = 0;  // ceil(D / B)
  Seconds compute_per_epoch{0};
  Seconds communication_per_epoch{0};
  Seconds epoch{0};
  // Named parts of one iteration; each list sums to its per-iteration total.
  std::vector<std::pair<std::string, Seconds>> compute_parts;
  std::vector<std::pair<std::string, Seconds>> communication_parts;

  MemoryBreakdown memory;    // the most loaded GPU, with memory reuse when config.memory_reuse
  Bytes memory_per_gpu = 0;  // memory.Total()
  double memory_reuse_factor = 1;  // total with reuse / total without (the paper's gamma)
  bool fits_memory = false;        // feasible and memory_per_gpu <= device_memory
};

// Predicts one strategy. Infeasible strategies are predictions with a reason, not errors.
// InvalidArgument for a config that fails ValidateOracleConfig.
absl::StatusOr<Prediction> Predict(Strategy strategy, const ModelGraph& model,
                                   const ComputeCostModel& cost, const CommModel& comm,
                                   const OracleConfig& config);

// Every strategy, ranked: feasible strategies that fit in memory first, then feasible ones that
// do not fit, then the infeasible; by epoch time within each class; ties in AllStrategies order.
absl::StatusOr<std::vector<Prediction>> RankStrategies(const ModelGraph& model,
                                                       const ComputeCostModel& cost,
                                                       const CommModel& comm,
                                                       const OracleConfig& config);

// Strong scaling: config.global_batch fixed, one prediction per entry of gpu_counts (in order).
// InvalidArgument for an empty list, a count < 1, or a config invalid at some count (the error
// names the entry).
absl::StatusOr<std::vector<Prediction>> StrongScaling(Strategy strategy, const ModelGraph& model,
                                                      const ComputeCostModel& cost,
                                                      const CommModel& comm,
                                                      const OracleConfig& config,
                                                      const std::vector<int>& gpu_counts);

// Weak scaling: per_gpu_batch fixed, global_batch = per_gpu_batch * p for each entry of
// gpu_counts (config.global_batch is ignored). Errors as StrongScaling, plus per_gpu_batch < 1.
absl::StatusOr<std::vector<Prediction>> WeakScaling(
    Strategy strategy, const ModelGraph& model, const ComputeCostModel& cost, const CommModel& comm,
    const OracleConfig& config, std::int64_t per_gpu_batch, const std::vector<int>& gpu_counts);

// A text table of predictions (in the given order) with their compute and communication parts,
// memory and feasibility, for `wavepool plan --compare`. Ends with a newline.
std::string FormatComparison(const std::vector<Prediction>& predictions);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_ORACLE_H_
