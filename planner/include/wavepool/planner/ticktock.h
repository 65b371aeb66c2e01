// Tick-tock scheduling (wavelet-tick-tock §3): two waves of one data-parallel job share each GPU,
// the tock wave delayed so that one wave's memory peak meets the other's trough (§3.2.1); the
// waves average gradients across each other (§3.2.3, Eq. 1-2); in model parallelism up to N-1
// tock waves fill the N-stage pipeline round-robin (§3.3). Everything here is a pure function of
// its inputs and safe to call concurrently. See memory_timeline.h for the one-wave model.
#ifndef WAVEPOOL_PLANNER_TICKTOCK_H_
#define WAVEPOOL_PLANNER_TICKTOCK_H_

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/planner/compute_cost.h"
#include "wavepool/planner/memory_timeline.h"
#include "wavepool/planner/model.h"
#include "wavepool/planner/units.h"

namespace wavepool::planner {

// Memory a job cannot use: CUDA context (~0.3-0.5 GiB), library workspaces, allocator slack.
inline constexpr Bytes kDefaultMemoryReserve = Bytes{1} << 30;

// ---- Two waves on one GPU (§3.2.1) ---------------------------------------------------------
// `offset` is the tock wave's delay as a fraction of the period, in [0, 1); 0.5 is the paper's
// half iteration. Both waves hold their own replica, so resident state counts twice.

// wave(t) + wave(t - offset * period), periodic. Transitions of the two waves closer than 1e-9
// of the period count as simultaneous. InvalidArgument "offset: ..." outside [0, 1).
absl::StatusOr<MemoryTimeline> TwoWaveTimeline(const MemoryTimeline& wave, double offset);
absl::StatusOr<Bytes> TwoWavePeak(const MemoryTimeline& wave, double offset);

struct OffsetScan {
  int scan_points = 0;     // offsets k / scan_points, k = 0 .. scan_points - 1
  Bytes peak_at_half = 0;  // combined peak at offset 0.5
  Bytes best_peak = 0;     // the lowest combined peak over the scanned offsets
  // The centre of the widest run of consecutive scanned offsets that reach best_peak (ties: the
  // run nearest 0.5), so that timing jitter is least likely to push the waves into a higher peak.
  double best_offset = 0.5;
  // Half the width of that run: the offset may drift this far (as a fraction) at best_peak.
  double tolerance = 0;
};

// Scans scan_points evenly spaced offsets. InvalidArgument "scan_points: ..." when < 2.
absl::StatusOr<OffsetScan> ScanOffsets(const MemoryTimeline& wave, int scan_points = 1000);

// ---- Data-parallel tick-tock decision ---------------------------------------------------------
struct TickTockRequest {
  std::int64_t per_wave_batch = 0;  // b: samples per GPU per wave
  Bytes device_memory = 0;          // capacity of one GPU
  Bytes reserve = kDefaultMemoryReserve;
  TrainingMemoryOptions memory;
  int offset_scan_points = 1000;
  // Tick-tock doubles the replicas and the runtime's work; below this predicted gain it is not
  // worth it (the paper does not give a threshold).
  double min_gain = 1.05;
};

enum class TickTockVerdict {
  kRecommended,
  kSingleWaveDoesNotFit,  // one wave at b alone exceeds the usable memory
  kWavesDoNotFit,         // two waves exceed it even at the best offset
  kNoGain,                // predicted_gain < min_gain: the GPU is already busy at b
  kDoubleBatchFits,       // one wave at 2b fits: as fast, one replica, no cross-wave averaging
};
std::string_view TickTockVerdictName(TickTockVerdict verdict);

// Throughput model (the paper measures, it does not predict): two overlapping waves keep the GPU
// as busy as one wave at 2b, so a pair of iterations takes
//   pair_iteration = clamp(C(2b) + 2 u, T(b), 2 T(b)),  T(b) = C(b) + u,
// C = forward + backward time from the cost model, u = the optimizer update of one replica;
// predicted_gain = 2 T(b) / pair_iteration, in [1, 2] (the paper reports up to 1.88x, §4.1.1).
// Gradient all-reduces are left to the caller: a pair runs two (one per wave), a doubled batch
// one, which is why the paper's cross-machine gains fall to 1.18x or below (§4.1.2).
struct TickTockAnalysis {
  TickTockAnalysis(MemoryTimeline one_wave, MemoryTimeline both_waves)
      : wave(std::move(one_wave)), combined(std::move(both_waves)) {}

  MemoryTimeline wave;      // one wave at b
  MemoryTimeline combined;  // both waves, the tock one delayed by offsets.best_offset
  OffsetScan offsets;
  Bytes usable_memory = 0;  // device_memory - reserve
  bool fits = false;        // combined peak at the best offset <= usable_memory
  bool fits_at_half = false;
  Bytes double_batch_peak = 0;  // one wave at 2b
  bool double_batch_fits = false;
  Seconds wave_iteration{0};          // T(b)
  Seconds double_batch_iteration{0};  // T(2b) = C(2b) + u
  Seconds pair_iteration{0};
  double predicted_gain = 1;
  double wave_samples_per_second = 0;       // b / T(b)
  double tick_tock_samples_per_second = 0;  // 2 b / pair_iteration
  TickTockVerdict verdict = TickTockVerdict::kNoGain;
};

// InvalidArgument names the field: per_wave_batch < 1, device_memory <= 0, reserve < 0 or >=
// device_memory, offset_scan_points < 2, min_gain < 1, and BuildMemoryTimeline's errors.
absl::StatusOr<TickTockAnalysis> AnalyzeTickTock(const ModelGraph& graph,
                                                 const ComputeCostModel& cost,
                                                 const TickTockRequest& request);

// ---- Cross-wave gradient averaging (§3.2.3, Figure 9, Eq. 1-2) ------------------------------
// What the runtime does on GPU i. The tick replica runs global iterations m = 0, 2, 4, ..., the
// tock replica m = 1, 3, 5, ... (started after the plan's offset); both start from the same
// initial weights and each keeps its own optimizer state.
//  1. The backward pass of iteration m yields the local gradient g'_i^m (the mean over its b_m
//     samples), which is handed to the other wave on the same GPU (a device-to-device copy).
//  2. g_i^m = CrossWaveAverage(g'_i^m, b_m, g'_i^(m-1), b_(m-1))  (Eq. 1), where g'_i^(m-1) is the
//     other wave's most recent local gradient; iteration m waits for it if it is late. For m = 0
//     there is none: pass an empty `previous` with previous_batch 0, and g_i^0 = g'_i^0.
//  3. G_m = the mean of g_i^m over the wave's N GPUs: an all-reduce among that wave's tasks only
//     (Eq. 2; GlobalWaveGradient is its reference implementation).
//  4. Iteration m applies G_m to its own replica only, then starts the forward pass of m + 2.
// Each local gradient thus enters two consecutive updates, one per replica; by Lemma 1, G_m is
// the gradient of 2N data-parallel tasks. Eq. 1 is the plain mean; CrossWaveAverage weights by
// batch size, which is the same when b_m == b_(m-1) and keeps G_m the per-sample mean otherwise.

// Eq. 1: (b_m g'_m + b_(m-1) g'_(m-1)) / (b_m + b_(m-1)), accumulated in double.
// InvalidArgument: current_batch < 1, previous_batch < 0, sizes differ, or only one of
// `previous` / previous_batch is empty / zero.
absl::StatusOr<std::vector<float>> CrossWaveAverage(const std::vector<float>& current,
                                                    std::int64_t current_batch,
                                                    const std::vector<float>& previous,
                                                    std::int64_t previous_batch);

struct WaveGradient {
  std::vector<float> gradient;  // g_i^m from CrossWaveAverage
  std::int64_t samples = 0;     // the samples behind it: b_m + b_(m-1) (b_0 for m = 0)
};
// Eq. 2: the sample-weighted mean of the GPUs' averaged gradients (the plain mean of Eq. 2 when
// every GPU has the same batch). InvalidArgument: no GPUs, samples < 1, sizes differ.
absl::StatusOr<std::vector<float>> GlobalWaveGradient(const std::vector<WaveGradient>& per_gpu);

// ---- Model-parallel waves (§3.3) ----------------------------------------------------------------
enum class WavePlacement {
  // §3.3.2: in forward cycle k every GPU runs partition k, GPU i on wave (i - k) mod N; so GPU i
  // runs partitions i, i-1, ..., i-W (mod N) with W tock waves and holds their state and one
  // wave's activations of each. Cycle k takes partition k's time on every GPU at once.
  kRoundRobin,
  // Stage s stays on GPU s and holds its state plus one set of activations per wave in flight;
  // the waves cross the stages as pipeline micro-batches (fill and drain every iteration).
  kStationary,
};
std::string_view WavePlacementName(WavePlacement placement);

struct ModelParallelWavesRequest {
  int stages = 0;                     // N GPUs, one partition each
  std::vector<LayerId> stage_starts;  // first layer of each stage; empty: BalancedStageStarts
  std::int64_t per_wave_batch = 0;
  Bytes device_memory = 0;
  Bytes reserve = kDefaultMemoryReserve;
  TrainingMemoryOptions memory;
  WavePlacement placement = WavePlacement::kRoundRobin;
  Seconds partition_switch_time{0};  // kRoundRobin: per GPU and compute cycle (§3.3.2 overhead)
};

struct StageMemory {
  LayerId first_layer = 0;
  LayerId last_layer = 0;          // inclusive
  Bytes resident = 0;              // weights, gradients, optimizer moments of the stage
  Bytes activations_per_wave = 0;  // its layers' activations + tensors received from earlier stages
  Seconds forward{0};
  Seconds backward{0};
};

struct GpuWaves {
  int gpu = 0;
  int max_tock_waves = 0;  // what this GPU alone could hold, capped at N-1; -1: not even the tick
  Bytes bytes = 0;         // its memory at the job's tock_waves (at the tick alone if none fit)
};

// Speedup over plain model parallelism (one batch per iteration T_plain = sum of stage forward
// and backward times; N-1 of N GPUs idle at any time), with W = tock_waves:
//   kRoundRobin: (W + 1) T_plain / (T_plain + 2 N partition_switch_time)
//   kStationary: (W + 1) T_plain / (T_plain + W (max_s F_s + max_s B_s))
// Activation transfers between stages are left out of both (the oracle prices them).
struct ModelParallelWavesAnalysis {
  std::vector<StageMemory> stages;
  std::vector<GpuWaves> gpus;
  bool tick_fits = false;  // plain model parallelism fits every GPU
  int tock_waves = 0;      // min over GPUs of max_tock_waves (0 when !tick_fits), <= N-1
  Seconds plain_iteration{0};
  Seconds wave_iteration{0};  // one round of W + 1 waves
  double predicted_speedup = 1;
};

// InvalidArgument names the field: stages < 1 or > layers, stage_starts not 0-based strictly
// increasing layer ids of size `stages`, per_wave_batch < 1, device_memory <= 0, reserve < 0,
// partition_switch_time < 0, optimizer_moments < 0.
absl::StatusOr<ModelParallelWavesAnalysis> AnalyzeModelParallelWaves(
    const ModelGraph& graph, const ComputeCostModel& cost,
    const ModelParallelWavesRequest& request);

// Splits the layers (in topological order) into `stages` contiguous ranges minimising the largest
// stage forward + backward time at `batch`; returns each stage's first layer. InvalidArgument
// when stages < 1 or > layers, or batch < 1.
absl::StatusOr<std::vector<LayerId>> BalancedStageStarts(const ModelGraph& graph,
                                                         const ComputeCostModel& cost,
                                                         std::int64_t batch, int stages);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_TICKTOCK_H_
