// Where MakePlan puts the waves of a ModelParallelWaves plan (wavelet-tick-tock §3.3.2): both
// placements analysed, round-robin when its waves fit and it is predicted at least as fast, the
// plan's predictions from the chosen analysis, and the all-reduces round-robin replicas need.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/plan.h"
#include "wavepool/api/validation.h"
#include "wavepool/planner/model_builder.h"
#include "wavepool/planner/planner.h"
#include "wavepool/planner/ticktock.h"
#include "wavepool/planner/zoo.h"

namespace wavepool::planner {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

// Everything a PlanContext borrows, kept alive together: `model` on the a100-40gb with the
// analytical cost model and the device's default network.
struct Planning {
  explicit Planning(ModelGraph m)
      : model(std::move(m)),
        device(FindDevice("a100-40gb").value()),
        compute(MakeAnalyticCostModel(device)),
        comm(std::make_unique<CommModel>(DefaultNetworkModel(device))) {}

  PlanContext Context() const { return PlanContext{model, device, *compute, *comm}; }

  ModelGraph model;
  DeviceSpec device;
  ComputeCostModelPtr compute;
  std::unique_ptr<CommModel> comm;
};

PlanRequest WavesRequest(int gpus, std::int64_t batch) {
  PlanRequest request;
  request.gpus = gpus;
  request.global_batch = batch;
  request.strategy = api::Strategy::kModelParallelWaves;
  return request;
}

// A chain of `layers` square linear layers of `width` features without bias; with SGD momentum
// each holds 12 bytes of state per parameter (32768 features: 12 GiB a layer).
ModelGraph HugeLinears(int layers, std::int64_t width) {
  ModelBuilder builder("huge", TensorShape{{width}});
  LayerId x = ModelBuilder::kInput;
  for (int i = 0; i < layers; ++i) {
    x = builder.Linear("fc" + std::to_string(i), x, width, /*bias=*/false);
  }
  return std::move(builder).Build().value();
}

// The first layer of each stage of a model-parallel plan, as the planner split the model.
std::vector<LayerId> StageStarts(const api::Plan& plan, const ModelGraph& model) {
  std::vector<LayerId> starts;
  for (const api::PlanStage& stage : plan.stages) {
    starts.push_back(*model.Find(stage.layers.front()));
  }
  return starts;
}

// The analysis of the plan's own stages under `placement`, as the planner makes it.
ModelParallelWavesAnalysis Analyze(const Planning& setup, const api::Plan& plan,
                                   const PlanRequest& request, WavePlacement placement) {
  ModelParallelWavesRequest r;
  r.stages = static_cast<int>(plan.stages.size());
  r.stage_starts = StageStarts(plan, setup.model);
  r.per_wave_batch = request.global_batch;
  r.device_memory = setup.device.memory_bytes;
  r.memory.optimizer_moments = OptimizerMoments(request.optimizer);
  r.placement = placement;
  absl::StatusOr<ModelParallelWavesAnalysis> analysis =
      AnalyzeModelParallelWaves(setup.model, *setup.compute, r);
  EXPECT_TRUE(analysis.ok()) << analysis.status();
  return analysis.ok() ? *analysis : ModelParallelWavesAnalysis{};
}

Bytes MaxGpuBytes(const ModelParallelWavesAnalysis& analysis) {
  Bytes bytes = 0;
  for (const GpuWaves& gpu : analysis.gpus) bytes = std::max(bytes, gpu.bytes);
  return bytes;
}

TEST(ModelParallelWavePlacement, RoundRobinWhenItsWavesFitAndItIsAtLeastAsFast) {
  const Planning setup(BuiltinModel("vgg16").value());
  const PlanRequest request = WavesRequest(8, 32);
  ASSERT_OK_AND_ASSIGN(const PlanReport report, MakePlan(setup.Context(), request));
  const api::Plan& plan = report.plan;
  EXPECT_OK(api::Validate(plan));
  const ModelParallelWavesAnalysis round_robin =
      Analyze(setup, plan, request, WavePlacement::kRoundRobin);
  const ModelParallelWavesAnalysis stationary =
      Analyze(setup, plan, request, WavePlacement::kStationary);
  // VGG-16's 8 partitions fit every GPU many times over: all 7 tock waves, round-robin, which
  // loses no time to pipeline fill and drain (§3.3.2, Figure 10).
  ASSERT_EQ(round_robin.tock_waves, 7);
  ASSERT_GE(round_robin.predicted_speedup, stationary.predicted_speedup);
  EXPECT_EQ(plan.wave_placement, api::WavePlacement::kRoundRobin);
  ASSERT_TRUE(report.model_parallel.has_value());
  EXPECT_EQ(report.model_parallel->tock_waves, round_robin.tock_waves);
  EXPECT_DOUBLE_EQ(report.model_parallel->predicted_speedup, round_robin.predicted_speedup);
  EXPECT_EQ(plan.waves, 1 + round_robin.tock_waves);
  // Memory and compute are the round-robin analysis's.
  EXPECT_EQ(plan.predictions.memory_per_gpu_bytes, MaxGpuBytes(round_robin));
  EXPECT_DOUBLE_EQ(plan.predictions.compute_seconds,
                   round_robin.wave_iteration.count() / static_cast<double>(plan.waves));
  EXPECT_THAT(report.decisions,
              Contains(HasSubstr("wave placement: round-robin (round-robin: 7 tock waves")));
  // The stages stay one per rank: the runtime maps the waves from wave_placement.
  for (const api::PlanStage& stage : plan.stages) {
    EXPECT_EQ(stage.ranks, std::vector<std::int64_t>{stage.index});
  }
}

TEST(ModelParallelWavePlacement, RoundRobinReplicasAllReduceEachStagesGradients) {
  const Planning setup(BuiltinModel("vgg16").value());
  ASSERT_OK_AND_ASSIGN(const PlanReport report, MakePlan(setup.Context(), WavesRequest(8, 32)));
  const api::Plan& plan = report.plan;
  ASSERT_EQ(plan.wave_placement, api::WavePlacement::kRoundRobin);
  const std::int64_t n = plan.gpus;
  double all_reduce = 0;
  std::vector<bool> has_group(plan.stages.size(), false);
  for (const api::SyncGroup& group : plan.sync_groups) {
    has_group[group.stage] = true;
    // Wave w runs stage s on GPU (s + w) mod N: one replica on each.
    std::vector<std::int64_t> expected;
    for (std::int64_t w = 0; w < plan.waves; ++w) expected.push_back((group.stage + w) % n);
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(group.ranks, expected) << "stage " << group.stage;
    EXPECT_GT(group.bytes, 0);
    EXPECT_GT(group.predicted_seconds, 0);
    all_reduce += group.predicted_seconds;
  }
  // Every stage with parameters has its group (VGG-16's pooling-only stages would have none).
  for (const api::PlanStage& stage : plan.stages) {
    bool has_params = false;
    for (const std::string& name : stage.layers) {
      has_params |= setup.model.layer(*setup.model.Find(name)).params > 0;
    }
    EXPECT_EQ(has_group[stage.index], has_params) << "stage " << stage.index;
  }
  // Their time is part of the communication, one round of all-reduces per round of waves.
  double transfers = 0;
  for (const api::SampleTransfer& t : plan.transfers) transfers += t.predicted_seconds;
  EXPECT_NEAR(plan.predictions.communication_seconds,
              (transfers + all_reduce) / static_cast<double>(plan.waves), 1e-12);
}

TEST(ModelParallelWavePlacement, StationaryWhenRoundRobinCannotHoldASecondPartition) {
  // 8 layers of 12 GiB of state on 4 GPUs: 24 GiB per stage. Round-robin would put two stages
  // (48 GiB) on a GPU for a single tock wave, more than the a100-40gb's 39 usable GiB; stage s
  // staying on GPU s holds 24 GiB plus small activations per wave.
  const Planning setup(HugeLinears(8, 32768));
  const PlanRequest request = WavesRequest(4, 4);
  ASSERT_OK_AND_ASSIGN(const PlanReport report, MakePlan(setup.Context(), request));
  const api::Plan& plan = report.plan;
  EXPECT_OK(api::Validate(plan));
  ASSERT_EQ(plan.stages.size(), 4u);
  const ModelParallelWavesAnalysis round_robin =
      Analyze(setup, plan, request, WavePlacement::kRoundRobin);
  const ModelParallelWavesAnalysis stationary =
      Analyze(setup, plan, request, WavePlacement::kStationary);
  ASSERT_EQ(round_robin.tock_waves, 0);
  ASSERT_EQ(stationary.tock_waves, 3);
  EXPECT_EQ(plan.wave_placement, api::WavePlacement::kStationary);
  EXPECT_EQ(plan.waves, 4);
  EXPECT_EQ(plan.predictions.memory_per_gpu_bytes, MaxGpuBytes(stationary));
  EXPECT_TRUE(plan.sync_groups.empty()) << "every wave's gradients stay on the stage's GPU";
  ASSERT_TRUE(report.model_parallel.has_value());
  EXPECT_EQ(report.model_parallel->tock_waves, 3);
  EXPECT_THAT(report.decisions,
              Contains(HasSubstr("wave placement: stationary (round-robin: 0 tock waves")));
  EXPECT_THAT(report.decisions, Contains(HasSubstr("round-robin places no tock wave")));
}

TEST(ModelParallelWavePlacement, AutoFallbackPlansCarryTheirPlacementThroughJson) {
  // Too large for data parallelism on any one GPU: Auto falls back to model-parallel waves.
  const Planning setup(HugeLinears(8, 32768));
  PlanRequest request = WavesRequest(4, 4);
  request.strategy = api::Strategy::kAuto;
  ASSERT_OK_AND_ASSIGN(const PlanReport report, MakePlan(setup.Context(), request));
  ASSERT_EQ(report.plan.strategy, api::Strategy::kModelParallelWaves);
  ASSERT_OK_AND_ASSIGN(const api::Plan decoded, api::Plan::FromJson(api::ToJson(report.plan)));
  EXPECT_EQ(decoded.wave_placement, report.plan.wave_placement);
  EXPECT_EQ(api::ToJson(decoded), api::ToJson(report.plan));
}

TEST(ModelParallelWavePlacement, PlansOfOtherStrategiesStayStationary) {
  const Planning setup(BuiltinModel("vgg16").value());
  PlanRequest request = WavesRequest(8, 32);
  for (const api::Strategy strategy :
       {api::Strategy::kDataParallel, api::Strategy::kBurstParallel, api::Strategy::kTickTock}) {
    request.strategy = strategy;
    ASSERT_OK_AND_ASSIGN(const PlanReport report, MakePlan(setup.Context(), request));
    EXPECT_EQ(report.plan.wave_placement, api::WavePlacement::kStationary)
        << api::ToString(strategy);
  }
}

}  // namespace
}  // namespace wavepool::planner
