// The ParaDL oracle's entry points: strategy names, config validation, dispatch, ranking and
// scaling series (paradl-oracle §4.1).
#include "wavepool/planner/oracle.h"

#include <algorithm>
#include <array>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "oracle/oracle_internal.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::planner {
namespace {

using oracle_internal::Context;
using oracle_internal::Grid;
using oracle_internal::SplitKind;

constexpr std::array<std::pair<Strategy, std::string_view>, 7> kNames = {{
    {Strategy::kData, "data"},
    {Strategy::kSpatial, "spatial"},
    {Strategy::kFilter, "filter"},
    {Strategy::kChannel, "channel"},
    {Strategy::kPipeline, "pipeline"},
    {Strategy::kDataFilter, "data+filter"},
    {Strategy::kDataSpatial, "data+spatial"},
}};

absl::Status AtLeast(std::string_view field, std::int64_t value, std::int64_t minimum) {
  if (value >= minimum) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("config.", std::string(field), ": must be >= ", minimum, ", got ", value));
}

// The hybrids' p1 x p2 grid: p2 GPUs split the model inside a node (paradl-oracle §4.5.1).
absl::StatusOr<Grid> HybridGrid(Strategy strategy, SplitKind kind, const CommModel& comm,
                                const OracleConfig& config) {
  const int p = config.gpus;
  const int p2 = config.model_split_gpus > 0 ? config.model_split_gpus
                                             : std::min(comm.network().gpus_per_node, p);
  if (p % p2 != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(p, " GPUs are not a multiple of the ", p2,
                     " GPUs per node that split the model (set model_split_gpus to a divisor)"));
  }
  return Grid{strategy, kind, p / p2, p2};
}

Grid PureGrid(Strategy strategy, int p) {
  switch (strategy) {
    case Strategy::kSpatial:
      return Grid{strategy, SplitKind::kSpatial, 1, p};
    case Strategy::kFilter:
      return Grid{strategy, SplitKind::kFilter, 1, p};
    case Strategy::kChannel:
      return Grid{strategy, SplitKind::kChannel, 1, p};
    default:
      break;
  }
  return Grid{Strategy::kData, SplitKind::kNone, p, 1};
}

// Feasible and fitting first, then feasible, then infeasible; by epoch time; ties in enum order.
auto RankKey(const Prediction& prediction) {
  const int tier = prediction.fits_memory ? 0 : (prediction.feasible ? 1 : 2);
  return std::make_tuple(tier, tier == 2 ? 0.0 : prediction.epoch.count(),
                         static_cast<int>(prediction.strategy));
}

absl::StatusOr<std::vector<Prediction>> Series(Strategy strategy, const ModelGraph& model,
                                               const ComputeCostModel& cost, const CommModel& comm,
                                               OracleConfig config, std::int64_t per_gpu_batch,
                                               const std::vector<int>& gpu_counts) {
  if (gpu_counts.empty()) return absl::InvalidArgumentError("gpu_counts: is empty");
  std::vector<Prediction> series;
  for (size_t i = 0; i < gpu_counts.size(); ++i) {
    if (gpu_counts[i] < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("gpu_counts[", i, "]: must be >= 1, got ", gpu_counts[i]));
    }
    config.gpus = gpu_counts[i];
    if (per_gpu_batch > 0) config.global_batch = per_gpu_batch * gpu_counts[i];
    absl::StatusOr<Prediction> prediction = Predict(strategy, model, cost, comm, config);
    if (!prediction.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("gpu_counts[", i, "] (", gpu_counts[i],
                                                     " GPUs): ", prediction.status().message()));
    }
    series.push_back(*std::move(prediction));
  }
  return series;
}

}  // namespace

const std::vector<Strategy>& AllStrategies() {
  static const std::vector<Strategy>* const all = [] {
    auto* strategies = new std::vector<Strategy>();
    for (const auto& [strategy, name] : kNames) strategies->push_back(strategy);
    return strategies;
  }();
  return *all;
}

std::string_view StrategyName(Strategy strategy) {
  for (const auto& [s, name] : kNames) {
    if (s == strategy) return name;
  }
  return "unknown";
}

std::optional<Strategy> ParseStrategy(std::string_view name) {
  const std::string lower = absl::AsciiStrToLower(std::string(name));
  for (const auto& [strategy, strategy_name] : kNames) {
    if (strategy_name == lower) return strategy;
  }
  return std::nullopt;
}

absl::Status ValidateOracleConfig(const OracleConfig& config) {
  for (absl::Status status :
       {AtLeast("dataset_samples", config.dataset_samples, 1),
        AtLeast("global_batch", config.global_batch, 1), AtLeast("gpus", config.gpus, 1),
        AtLeast("pipeline_microbatches", config.pipeline_microbatches, 1),
        AtLeast("model_split_gpus", config.model_split_gpus, 0),
        AtLeast("device_memory", config.device_memory, 1),
        AtLeast("optimizer_state_per_param", config.optimizer_state_per_param, 0)}) {
    WAVEPOOL_RETURN_IF_ERROR(status);
  }
  if (config.model_split_gpus > 0 && config.gpus % config.model_split_gpus != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.model_split_gpus: must divide config.gpus (", config.gpus, "), got ",
                     config.model_split_gpus));
  }
  return absl::OkStatus();
}

absl::StatusOr<Prediction> Predict(Strategy strategy, const ModelGraph& model,
                                   const ComputeCostModel& cost, const CommModel& comm,
                                   const OracleConfig& config) {
  WAVEPOOL_RETURN_IF_ERROR(ValidateOracleConfig(config));
  const Context context{model, cost, comm, config};
  switch (strategy) {
    case Strategy::kPipeline:
      return oracle_internal::PredictPipeline(context);
    case Strategy::kDataFilter:
    case Strategy::kDataSpatial: {
      const SplitKind kind =
          strategy == Strategy::kDataFilter ? SplitKind::kFilter : SplitKind::kSpatial;
      absl::StatusOr<Grid> grid = HybridGrid(strategy, kind, comm, config);
      if (!grid.ok()) {
        return oracle_internal::Infeasible(strategy, config, std::string(grid.status().message()));
      }
      return oracle_internal::PredictGrid(*grid, context);
    }
    default:
      return oracle_internal::PredictGrid(PureGrid(strategy, config.gpus), context);
  }
}

absl::StatusOr<std::vector<Prediction>> RankStrategies(const ModelGraph& model,
                                                       const ComputeCostModel& cost,
                                                       const CommModel& comm,
                                                       const OracleConfig& config) {
  std::vector<Prediction> ranked;
  for (Strategy strategy : AllStrategies()) {
    WAVEPOOL_ASSIGN_OR_RETURN(Prediction prediction, Predict(strategy, model, cost, comm, config));
    ranked.push_back(std::move(prediction));
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Prediction& a, const Prediction& b) {
    return RankKey(a) < RankKey(b);
  });
  return ranked;
}

absl::StatusOr<std::vector<Prediction>> StrongScaling(Strategy strategy, const ModelGraph& model,
                                                      const ComputeCostModel& cost,
                                                      const CommModel& comm,
                                                      const OracleConfig& config,
                                                      const std::vector<int>& gpu_counts) {
  return Series(strategy, model, cost, comm, config, 0, gpu_counts);
}

absl::StatusOr<std::vector<Prediction>> WeakScaling(
    Strategy strategy, const ModelGraph& model, const ComputeCostModel& cost, const CommModel& comm,
    const OracleConfig& config, std::int64_t per_gpu_batch, const std::vector<int>& gpu_counts) {
  if (per_gpu_batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("per_gpu_batch: must be >= 1, got ", per_gpu_batch));
  }
  return Series(strategy, model, cost, comm, config, per_gpu_batch, gpu_counts);
}

}  // namespace wavepool::planner
