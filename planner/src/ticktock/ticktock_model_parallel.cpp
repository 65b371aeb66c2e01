// Model-parallel waves (wavelet-tick-tock §3.3): how many tock waves fit, and what they gain.
#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/planner/ticktock.h"

namespace wavepool::planner {
namespace {

absl::Status ValidateStages(const ModelGraph& graph, int stages) {
  if (stages < 1 || stages > graph.size()) {
    return absl::InvalidArgumentError(absl::StrCat("stages: must be in [1, ", graph.size(),
                                                   "] (the layers of model ", graph.name(),
                                                   "), got ", stages));
  }
  return absl::OkStatus();
}

absl::Status ValidateStageStarts(const ModelGraph& graph, int stages,
                                 const std::vector<LayerId>& starts) {
  if (starts.size() != static_cast<size_t>(stages)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "stage_starts: must name one first layer per stage (", stages, "), got ", starts.size()));
  }
  for (size_t s = 0; s < starts.size(); ++s) {
    const LayerId lower = s == 0 ? 0 : starts[s - 1] + 1;
    const LayerId upper = s == 0 ? 0 : graph.size() - 1;
    if (starts[s] < lower || starts[s] > upper) {
      return absl::InvalidArgumentError(absl::StrCat("stage_starts[", s, "]: must be in [", lower,
                                                     ", ", upper, "], got ", starts[s]));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateRequest(const ModelParallelWavesRequest& r) {
  if (r.per_wave_batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("per_wave_batch: must be >= 1, got ", r.per_wave_batch));
  }
  if (r.device_memory <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("device_memory: must be > 0 bytes, got ", r.device_memory));
  }
  if (r.reserve < 0 || r.reserve >= r.device_memory) {
    return absl::InvalidArgumentError(absl::StrCat("reserve: must be in [0, device_memory (",
                                                   r.device_memory, ")) bytes, got ", r.reserve));
  }
  if (r.partition_switch_time < Seconds(0)) {
    return absl::InvalidArgumentError(absl::StrCat("partition_switch_time: must be >= 0 s, got ",
                                                   r.partition_switch_time.count(), " s"));
  }
  if (r.memory.optimizer_moments < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory.optimizer_moments: must be >= 0, got ", r.memory.optimizer_moments));
  }
  return absl::OkStatus();
}

// Activations of one wave on a stage: its layers' own, plus what it receives from earlier stages
// (kept for the backward pass), plus the model input if one of its layers reads it.
Bytes StageActivations(const ModelGraph& graph, LayerId first, LayerId last, std::int64_t batch,
                       const TrainingMemoryOptions& options) {
  Bytes bytes = 0;
  std::set<LayerId> received;
  bool reads_model_input = false;
  for (LayerId id = first; id <= last; ++id) {
    const Layer& layer = graph.layer(id);
    bytes += LayerActivationBytes(layer, batch);
    if (layer.inputs.empty()) reads_model_input = true;
    for (LayerId in : layer.inputs) {
      if (in < first) received.insert(in);
    }
  }
  for (LayerId in : received) bytes += batch * graph.layer(in).OutputBytesPerSample();
  if (reads_model_input && options.hold_input_batch) bytes += InputBatchBytes(graph, batch);
  return bytes;
}

std::vector<StageMemory> Stages(const ModelGraph& graph, const ComputeCostModel& cost,
                                const std::vector<LayerId>& starts,
                                const ModelParallelWavesRequest& r) {
  std::vector<StageMemory> stages;
  for (size_t s = 0; s < starts.size(); ++s) {
    StageMemory stage;
    stage.first_layer = starts[s];
    stage.last_layer = s + 1 < starts.size() ? starts[s + 1] - 1 : graph.size() - 1;
    std::int64_t params = 0;
    for (LayerId id = stage.first_layer; id <= stage.last_layer; ++id) {
      params += graph.layer(id).params;
      const LayerTime time = cost.Time(graph.layer(id), r.per_wave_batch);
      stage.forward += time.forward;
      stage.backward += time.backward;
    }
    stage.resident = ResidentStateBytes(params, r.memory.optimizer_moments);
    stage.activations_per_wave =
        StageActivations(graph, stage.first_layer, stage.last_layer, r.per_wave_batch, r.memory);
    stages.push_back(stage);
  }
  return stages;
}

// Memory of GPU `gpu` with `tock_waves` tock waves on top of the tick wave.
Bytes GpuBytes(const std::vector<StageMemory>& stages, WavePlacement placement, int gpu,
               int tock_waves) {
  const int n = static_cast<int>(stages.size());
  if (placement == WavePlacement::kStationary) {
    const StageMemory& stage = stages[static_cast<size_t>(gpu)];
    return stage.resident + (tock_waves + 1) * stage.activations_per_wave;
  }
  // §3.3.2 round-robin: GPU i runs partition k for wave (i - k) mod N, so waves 0..W bring
  // partitions i, i-1, ..., i-W onto it.
  Bytes bytes = 0;
  for (int d = 0; d <= tock_waves; ++d) {
    const StageMemory& stage = stages[static_cast<size_t>(((gpu - d) % n + n) % n)];
    bytes += stage.resident + stage.activations_per_wave;
  }
  return bytes;
}

// The most tock waves GPU `gpu` holds within `usable`, at most N-1; -1 if not even the tick.
int MaxTockWaves(const std::vector<StageMemory>& stages, WavePlacement placement, int gpu,
                 Bytes usable) {
  const int n = static_cast<int>(stages.size());
  int waves = -1;
  while (waves + 1 <= n - 1 && GpuBytes(stages, placement, gpu, waves + 1) <= usable) ++waves;
  return waves;
}

void PredictThroughput(const ModelParallelWavesRequest& r, ModelParallelWavesAnalysis& a) {
  Seconds max_forward{0}, max_backward{0};
  for (const StageMemory& stage : a.stages) {
    a.plain_iteration += stage.forward + stage.backward;
    max_forward = std::max(max_forward, stage.forward);
    max_backward = std::max(max_backward, stage.backward);
  }
  const double n = static_cast<double>(a.stages.size());
  const double w = static_cast<double>(a.tock_waves);
  if (r.placement == WavePlacement::kRoundRobin) {
    // Every cycle runs one partition on all GPUs at once: W + 1 waves in the plain period, plus
    // one partition switch per GPU per forward and per backward cycle.
    a.wave_iteration = a.plain_iteration + 2 * n * r.partition_switch_time;
  } else {
    // Pipeline fill and drain of W + 1 micro-batches (GPipe-style, flushed every round because
    // the waves synchronise per partition, §3.3.3).
    a.wave_iteration = a.plain_iteration + w * (max_forward + max_backward);
  }
  if (a.wave_iteration > Seconds(0)) {
    a.predicted_speedup = (w + 1) * a.plain_iteration / a.wave_iteration;
  }
}

}  // namespace

std::string_view WavePlacementName(WavePlacement placement) {
  return placement == WavePlacement::kRoundRobin ? "round-robin" : "stationary";
}

absl::StatusOr<std::vector<LayerId>> BalancedStageStarts(const ModelGraph& graph,
                                                         const ComputeCostModel& cost,
                                                         std::int64_t batch, int stages) {
  WAVEPOOL_RETURN_IF_ERROR(ValidateStages(graph, stages));
  if (batch < 1)
    return absl::InvalidArgumentError(absl::StrCat("batch: must be >= 1, got ", batch));
  const int n = graph.size();
  std::vector<double> prefix(static_cast<size_t>(n) + 1, 0.0);
  for (const Layer& layer : graph.layers()) {
    prefix[static_cast<size_t>(layer.id) + 1] =
        prefix[static_cast<size_t>(layer.id)] + cost.Time(layer, batch).Total().count();
  }
  // worst[s][i]: the smallest possible largest stage time putting layers [0, i) into s stages;
  // cut[s][i]: where the last of those s stages starts.
  const double inf = std::numeric_limits<double>::infinity();
  const size_t rows = static_cast<size_t>(stages) + 1, cols = static_cast<size_t>(n) + 1;
  std::vector<std::vector<double>> worst(rows, std::vector<double>(cols, inf));
  std::vector<std::vector<int>> cut(rows, std::vector<int>(cols, 0));
  worst[0][0] = 0;
  for (size_t s = 1; s < rows; ++s) {
    for (size_t i = s; i < cols; ++i) {
      for (size_t j = s - 1; j < i; ++j) {
        const double candidate = std::max(worst[s - 1][j], prefix[i] - prefix[j]);
        if (candidate < worst[s][i]) {
          worst[s][i] = candidate;
          cut[s][i] = static_cast<int>(j);
        }
      }
    }
  }
  std::vector<LayerId> starts(static_cast<size_t>(stages));
  size_t end = cols - 1;
  for (size_t s = rows - 1; s >= 1; --s) {
    starts[s - 1] = cut[s][end];
    end = static_cast<size_t>(cut[s][end]);
  }
  return starts;
}

absl::StatusOr<ModelParallelWavesAnalysis> AnalyzeModelParallelWaves(
    const ModelGraph& graph, const ComputeCostModel& cost,
    const ModelParallelWavesRequest& request) {
  WAVEPOOL_RETURN_IF_ERROR(ValidateStages(graph, request.stages));
  WAVEPOOL_RETURN_IF_ERROR(ValidateRequest(request));
  std::vector<LayerId> starts = request.stage_starts;
  if (starts.empty()) {
    WAVEPOOL_ASSIGN_OR_RETURN(
        starts, BalancedStageStarts(graph, cost, request.per_wave_batch, request.stages));
  } else {
    WAVEPOOL_RETURN_IF_ERROR(ValidateStageStarts(graph, request.stages, starts));
  }
  ModelParallelWavesAnalysis a;
  a.stages = Stages(graph, cost, starts, request);
  const Bytes usable = request.device_memory - request.reserve;
  a.tock_waves = request.stages - 1;
  a.tick_fits = true;
  for (int gpu = 0; gpu < request.stages; ++gpu) {
    const int waves = MaxTockWaves(a.stages, request.placement, gpu, usable);
    a.gpus.push_back({gpu, waves, 0});
    a.tick_fits = a.tick_fits && waves >= 0;
    a.tock_waves = std::min(a.tock_waves, std::max(waves, 0));
  }
  if (!a.tick_fits) a.tock_waves = 0;
  for (GpuWaves& gpu : a.gpus) {
    gpu.bytes = GpuBytes(a.stages, request.placement, gpu.gpu, a.tock_waves);
  }
  PredictThroughput(request, a);
  if (!(a.plain_iteration > Seconds(0))) {
    return absl::FailedPreconditionError(
        absl::StrCat("model ", graph.name(), ": the cost model (", cost.Description(),
                     ") gives a zero iteration time at batch ", request.per_wave_batch));
  }
  return a;
}

}  // namespace wavepool::planner
