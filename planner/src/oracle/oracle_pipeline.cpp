// Pipeline (layer) parallelism, GPipe-style (paradl-oracle §3.4, Appendix A.1.3, eq. (12)-(14)):
// p stages of consecutive layers, S micro-batches of ceil(B / S) samples.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "oracle/oracle_internal.h"

namespace wavepool::planner::oracle_internal {
namespace {

// Stage i holds layers [begin[i], begin[i+1]) in topological order; begin.back() == layers.
struct Stages {
  std::vector<int> begin;
  int Count() const { return static_cast<int>(begin.size()) - 1; }
};

// Splits the layers into `stages` contiguous, non-empty ranges minimising the slowest stage's
// forward + backward time (dynamic programming over prefixes; ties keep the earlier cut).
Stages BalanceStages(const std::vector<double>& layer_seconds, int stages) {
  const int n = static_cast<int>(layer_seconds.size());
  std::vector<double> prefix(static_cast<size_t>(n) + 1, 0.0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + layer_seconds[static_cast<size_t>(i)];
  const double inf = std::numeric_limits<double>::infinity();
  // best[k][j]: the smallest slowest-stage time of the first j layers in k stages.
  std::vector<std::vector<double>> best(static_cast<size_t>(stages) + 1,
                                        std::vector<double>(static_cast<size_t>(n) + 1, inf));
  std::vector<std::vector<int>> cut(best.size(), std::vector<int>(static_cast<size_t>(n) + 1, 0));
  best[0][0] = 0;
  for (int k = 1; k <= stages; ++k) {
    for (int j = k; j <= n - (stages - k); ++j) {
      for (int i = k - 1; i < j; ++i) {
        const double slowest = std::max(best[k - 1][i], prefix[j] - prefix[i]);
        if (slowest < best[k][j]) {
          best[k][j] = slowest;
          cut[k][j] = i;
        }
      }
    }
  }
  Stages result;
  result.begin.assign(static_cast<size_t>(stages) + 1, n);
  for (int k = stages, j = n; k > 0; --k) {
    j = cut[k][j];
    result.begin[static_cast<size_t>(k) - 1] = j;
  }
  return result;
}

// Items per sample crossing the cut after stage `stage`: the outputs of earlier layers that a
// later stage reads (a skip connection is relayed across every cut it spans).
std::int64_t CutItems(const ModelGraph& model, const Stages& stages, int stage) {
  const int end = stages.begin[static_cast<size_t>(stage) + 1];
  std::int64_t items = 0;
  for (int id = 0; id < end; ++id) {
    const auto& next = model.successors(id);
    if (std::any_of(next.begin(), next.end(), [&](LayerId s) { return s >= end; })) {
      items += model.layer(id).output.Elements();
    }
  }
  return items;
}

// The slowest stage's forward and backward time per micro-batch, and the slowest transfer between
// neighbouring stages (GPU i sends to GPU i + 1; the pair crosses nodes at a node boundary).
struct Slowest {
  Seconds forward{0}, backward{0}, transfer{0};
};

Slowest SlowestStage(const Context& context, const Stages& stages,
                     const std::vector<LayerTime>& times, std::int64_t microbatch) {
  Slowest slowest;
  for (int i = 0; i < stages.Count(); ++i) {
    Seconds forward(0), backward(0);
    for (int id = stages.begin[static_cast<size_t>(i)];
         id < stages.begin[static_cast<size_t>(i) + 1]; ++id) {
      forward += times[static_cast<size_t>(id)].forward;
      backward += times[static_cast<size_t>(id)].backward;
    }
    slowest.forward = std::max(slowest.forward, forward);
    slowest.backward = std::max(slowest.backward, backward);
    if (i + 1 < stages.Count()) {
      const bool cross = (i + 1) % context.comm.network().gpus_per_node == 0;
      const Bytes bytes = microbatch * CutItems(context.model, stages, i) * kBytesPerItem;
      slowest.transfer = std::max(slowest.transfer, context.comm.PointToPoint(bytes, cross));
    }
  }
  return slowest;
}

// eq. (14): the most loaded stage's memory. It stores the activations of all S micro-batches
// (B samples) of its layers, its weights, their gradients and optimizer state.
MemoryBreakdown StageMemory(const Context& context, const Stages& stages, bool reuse) {
  MemoryBreakdown most;
  for (int s = 0; s < stages.Count(); ++s) {
    std::int64_t activation_items = 0, weight_items = 0;
    for (int id = stages.begin[static_cast<size_t>(s)];
         id < stages.begin[static_cast<size_t>(s) + 1]; ++id) {
      const Layer& layer = context.model.layer(id);
      activation_items += context.config.global_batch * StoredItems(context.model, layer, reuse);
      weight_items += layer.params;
    }
    MemoryBreakdown memory;
    memory.activations = 2 * activation_items * kBytesPerItem;
    memory.weights = weight_items * kBytesPerItem;
    memory.gradients = weight_items * kBytesPerItem;
    memory.optimizer_state =
        weight_items * context.config.optimizer_state_per_param * kBytesPerItem;
    if (memory.Total() > most.Total()) most = memory;
  }
  return most;
}

// "4 stages (layers 0-9 | 10-18 | ...)": the first kShownStages ranges, then the last one.
std::string Layout(const Stages& stages, int microbatches, std::int64_t microbatch) {
  constexpr int kShownStages = 6;
  std::vector<std::string> ranges;
  for (int s = 0; s < stages.Count(); ++s) {
    if (s == kShownStages && stages.Count() > kShownStages + 1) {
      ranges.push_back("...");
      s = stages.Count() - 1;
    }
    ranges.push_back(absl::StrCat(stages.begin[static_cast<size_t>(s)], "-",
                                  stages.begin[static_cast<size_t>(s) + 1] - 1));
  }
  return absl::StrCat(stages.Count(), " stages (layers ", absl::StrJoin(ranges, " | "), "), ",
                      microbatches, " micro-batches of ", microbatch);
}

}  // namespace

Prediction PredictPipeline(const Context& context) {
  const OracleConfig& config = context.config;
  const int p = config.gpus;
  const int s = config.pipeline_microbatches;
  if (p > context.model.size()) {
    return Infeasible(Strategy::kPipeline, config,
                      absl::StrCat(p, " stages exceed the ", context.model.size(),
                                   " layers (every stage needs a layer)"));
  }
  if (config.global_batch < s) {
    return Infeasible(Strategy::kPipeline, config,
                      absl::StrCat("global batch ", config.global_batch, " is smaller than ", s,
                                   " micro-batches"));
  }
  const std::int64_t microbatch = CeilDiv(config.global_batch, s);
  std::vector<LayerTime> times;
  std::vector<double> seconds;
  for (const Layer& layer : context.model.layers()) {
    times.push_back(context.cost.Time(layer, microbatch));
    seconds.push_back(times.back().Total().count());
  }
  const Stages stages = BalanceStages(seconds, p);
  const Slowest slowest = SlowestStage(context, stages, times, microbatch);
  // eq. (12): S + p - 1 steps, each as long as the slowest stage; the p - 1 extra steps are the
  // bubble, (p - 1) / (S + p - 1) of the iteration.
  const Seconds step = slowest.forward + slowest.backward;
  Prediction prediction;
  prediction.strategy = Strategy::kPipeline;
  prediction.gpus = p;
  prediction.global_batch = config.global_batch;
  prediction.feasible = true;
  prediction.layout = Layout(stages, s, microbatch);
  prediction.compute_parts = {{"pipeline micro-batches", static_cast<double>(s) * step},
                              {"pipeline bubble", static_cast<double>(p - 1) * step}};
  // eq. (13): 2 (p + S - 2) transfers on the critical path, forward and backward, each as long as
  // the slowest cut's.
  const double transfers = p > 1 ? 2.0 * (p + s - 2) : 0.0;
  prediction.communication_parts = {{"pipeline point-to-point", transfers * slowest.transfer}};
  prediction.memory = StageMemory(context, stages, config.memory_reuse);
  const Bytes naive = StageMemory(context, stages, false).Total();
  prediction.memory_reuse_factor =
      naive > 0 ? static_cast<double>(StageMemory(context, stages, true).Total()) / naive : 1.0;
  Finish(config, prediction);
  return prediction;
}

}  // namespace wavepool::planner::oracle_internal
