// Planning a TrainingJob in the cluster (controller/job_planner.h).
#include "wavepool/controller/job_planner.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/defaults.h"
#include "wavepool/api/manifest.h"
#include "wavepool/api/validation.h"
#include "wavepool/controller/placement.h"
#include "wavepool/planner/builtin_profiles.h"

namespace wavepool::controller {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::wavepool::testing::StatusIs;

std::string ReadExample(const std::string& name) {
  std::ifstream in(std::filesystem::path(WAVEPOOL_SOURCE_DIR) / "examples" / name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The one job of an example manifest, defaulted and validated as the API server would.
api::TrainingJob Example(const std::string& name) {
  absl::StatusOr<std::vector<api::TrainingJob>> jobs = api::LoadTrainingJobs(ReadExample(name));
  EXPECT_TRUE(jobs.ok()) << name << ": " << jobs.status();
  if (!jobs.ok() || jobs->size() != 1) return {};
  return jobs->front();
}

// A foreground job of the mlp_tiny layers given as a layer table.
constexpr char kMlpTable[] = R"(# mlp_tiny, layer by layer
name,type,inputs,input_shape,weight_shape,output_shape,attrs
fc1,linear,,64,128x64,128,
relu1,relu,fc1,128,,128,
fc2,linear,relu1,128,10x128,10,
)";

api::TrainingJob TableJob() {
  api::TrainingJob job;
  job.metadata.name = "mlp";
  job.metadata.namespace_ = "team-a";
  job.spec.role = api::Role::kForeground;
  job.spec.model.layer_table = api::ConfigMapKeyRef{"mlp-layers", "layers.csv"};
  job.spec.global_batch_size = 16;
  job.spec.gpus = 2;
  job.spec.steps = 10;
  api::SetDefaults(&job);
  EXPECT_OK(api::Validate(job));
  return job;
}

api::GpuNode NodeWith(const std::string& name, const std::vector<std::string>& models) {
  api::GpuNode node;
  node.metadata.name = name;
  node.spec.node_name = name;
  for (std::size_t i = 0; i < models.size(); ++i) {
    api::GpuStatus gpu;
    gpu.index = static_cast<std::int64_t>(i);
    gpu.uuid = "GPU-" + name + "-" + std::to_string(i);
    gpu.model = models[i];
    node.status.gpus.push_back(gpu);
  }
  return node;
}

TEST(DeviceForGpuModel, MapsNvmlNamesToCatalogDevices) {
  const std::pair<const char*, const char*> cases[] = {
      {"NVIDIA H100 80GB HBM3", "h100"},
      {"NVIDIA H100 PCIe", "h100"},
      {"NVIDIA H200", "h200"},
      {"NVIDIA A100-SXM4-80GB", "a100-40gb"},
      {"NVIDIA A100-PCIE-40GB", "a100-40gb"},
      {"Tesla V100-SXM2-32GB", "v100"},
      {"nvidia h100 nvl", "h100"},
  };
  for (const auto& [model, device] : cases) {
    ASSERT_OK_AND_ASSIGN(std::string got, DeviceForGpuModel(model));
    EXPECT_EQ(got, device) << model;
  }
}

TEST(DeviceForGpuModel, UnknownModelIsNotFoundNamingModelAndDevices) {
  EXPECT_THAT(
      DeviceForGpuModel("NVIDIA GeForce RTX 4090"),
      StatusIs(absl::StatusCode::kNotFound, AllOf(HasSubstr("NVIDIA GeForce RTX 4090"),
                                                  HasSubstr("h100"), HasSubstr("a100-40gb"))));
  // Whole words only: a Grace Hopper GH200 is not an H200 of the catalog.
  EXPECT_THAT(DeviceForGpuModel("NVIDIA GH200 480GB"),
              StatusIs(absl::StatusCode::kNotFound, ::testing::_));
  EXPECT_THAT(DeviceForGpuModel(""), StatusIs(absl::StatusCode::kNotFound, ::testing::_));
}

TEST(PlanningDevice, MostCommonKnownModelAcrossNodesWins) {
  // 3 H100s (two nodes) against 2 A100s: h100. The unknown RTX GPUs do not count.
  const std::vector<api::GpuNode> nodes = {
      NodeWith("a", {"NVIDIA A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB"}),
      NodeWith("b", {"NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"}),
      NodeWith("c", {"NVIDIA H100 PCIe", "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090",
                     "NVIDIA GeForce RTX 4090"}),
  };
  EXPECT_EQ(PlanningDevice(nodes, "v100"), "h100");
}

TEST(PlanningDevice, TieGoesToTheNameThatSortsFirst) {
  const std::vector<api::GpuNode> nodes = {
      NodeWith("a", {"NVIDIA H200", "NVIDIA H200"}),
      NodeWith("b", {"NVIDIA A100-PCIE-40GB", "NVIDIA A100-PCIE-40GB"}),
  };
  EXPECT_EQ(PlanningDevice(nodes, "v100"), "a100-40gb");
}

TEST(PlanningDevice, FallbackWhenNoGpuMapsToADevice) {
  EXPECT_EQ(PlanningDevice({}, "h100"), "h100");
  EXPECT_EQ(PlanningDevice({NodeWith("a", {"NVIDIA GeForce RTX 4090"}), NodeWith("b", {})}, "h200"),
            "h200");
}

TEST(PlanJob, ForegroundExamplePlansBurstParallelOnItsGpus) {
  const api::TrainingJob job = Example("vgg16-foreground.yaml");
  ASSERT_OK_AND_ASSIGN(JobPlan plan, PlanJob(job, {"h100", std::nullopt, std::nullopt}));
  EXPECT_EQ(plan.plan.job, "default/vgg16");
  EXPECT_EQ(plan.plan.model, "vgg16");
  EXPECT_EQ(plan.plan.device, "h100");
  EXPECT_EQ(plan.plan.strategy, api::Strategy::kBurstParallel);
  EXPECT_EQ(plan.plan.global_batch_size, 32);
  EXPECT_LE(plan.plan.gpus, 8);
  EXPECT_OK(api::Validate(plan.plan));
  // The summary and the placement figures are the plan's own predictions.
  EXPECT_EQ(plan.summary.strategy, plan.plan.strategy);
  EXPECT_EQ(plan.summary.predicted_iteration_seconds, plan.plan.predictions.iteration_seconds);
  EXPECT_GT(plan.summary.predicted_iteration_seconds, 0);
  EXPECT_EQ(plan.summary.memory_per_gpu_bytes, plan.plan.predictions.memory_per_gpu_bytes);
  EXPECT_EQ(plan.memory_per_gpu_bytes, plan.plan.predictions.memory_per_gpu_bytes);
  EXPECT_GT(plan.memory_per_gpu_bytes, 0);
  EXPECT_EQ(plan.summary.amplification, plan.plan.predictions.amplification);
  ASSERT_EQ(plan.summary.stage_gpus.size(), plan.plan.stages.size());
  for (std::size_t i = 0; i < plan.plan.stages.size(); ++i) {
    EXPECT_EQ(plan.summary.stage_gpus[i], plan.plan.stages[i].gpus);
  }
  EXPECT_EQ(plan.idle_fraction, IdleFraction(plan.plan.predictions, plan.plan.gpus));
  EXPECT_GE(plan.idle_fraction, 0);
  EXPECT_LE(plan.idle_fraction, 1);
  // e.g. "BurstParallel on 8 GPUs, 7.58 ms per iteration, 1.9 GiB per GPU".
  EXPECT_THAT(plan.description,
              ::testing::MatchesRegex("BurstParallel on [1-8] GPUs?, [0-9.]+ m?s per iteration, "
                                      "[0-9.]+ [GM]iB per GPU"));
}

TEST(PlanJob, BackgroundExamplePlansOnOneGpu) {
  api::TrainingJob job = Example("resnet50-background.yaml");
  ASSERT_OK_AND_ASSIGN(JobPlan plan, PlanJob(job, {"a100", std::nullopt, std::nullopt}));
  EXPECT_EQ(plan.plan.job, "default/resnet50-background");
  EXPECT_EQ(plan.plan.device, "a100-40gb");
  EXPECT_EQ(plan.plan.gpus, 1);
  EXPECT_EQ(plan.plan.global_batch_size, 64);
  EXPECT_THAT(plan.description, HasSubstr(" on 1 GPU, "));
  // A bg job plans on one GPU whatever spec.gpus says.
  job.spec.gpus = 4;
  ASSERT_OK_AND_ASSIGN(JobPlan again, PlanJob(job, {"a100", std::nullopt, std::nullopt}));
  EXPECT_EQ(again.plan.gpus, 1);
}

TEST(PlanJob, TinyCpuExampleHonoursDataMovementToggles) {
  const api::TrainingJob job = Example("tiny-cpu.yaml");
  ASSERT_OK_AND_ASSIGN(JobPlan plan, PlanJob(job, {"v100", std::nullopt, std::nullopt}));
  EXPECT_EQ(plan.plan.model, "mlp_tiny");
  EXPECT_LE(plan.plan.gpus, 2);
  EXPECT_FALSE(plan.plan.data_movement.cpu_split);
  EXPECT_FALSE(plan.plan.data_movement.preload);
  EXPECT_FALSE(plan.plan.data_movement.weight_compression);
}

TEST(PlanJob, LayerTableGivenAsTextNamesTheModelAfterItsConfigMap) {
  PlanInputs inputs{"h100", std::string(kMlpTable), std::nullopt};
  ASSERT_OK_AND_ASSIGN(JobPlan plan, PlanJob(TableJob(), inputs));
  EXPECT_EQ(plan.plan.model, "mlp-layers");
  EXPECT_EQ(plan.plan.job, "team-a/mlp");
  std::vector<std::string> layers;
  for (const api::PlanStage& stage : plan.plan.stages) {
    layers.insert(layers.end(), stage.layers.begin(), stage.layers.end());
  }
  EXPECT_THAT(layers, ::testing::IsSupersetOf({"fc1", "relu1", "fc2"}));
}

TEST(PlanJob, BadLayerTableNamesTheField) {
  const std::string bad =
      "name,type,inputs,input_shape,weight_shape,output_shape\n"
      "fc1,linear,,64,128x64,x0\n";
  EXPECT_THAT(PlanJob(TableJob(), {"h100", bad, std::nullopt}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       StartsWith("spec.model.layerTable: layer table line 2")));
}

TEST(PlanJob, LayerTableTextMissingIsFailedPrecondition) {
  EXPECT_THAT(PlanJob(TableJob(), {"h100", std::nullopt, std::nullopt}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(StartsWith("spec.model.layerTable: "), HasSubstr("mlp-layers"))));
}

TEST(PlanJob, UnknownDeviceOrModelIsNotFound) {
  const api::TrainingJob job = Example("vgg16-foreground.yaml");
  EXPECT_THAT(PlanJob(job, {"tpu-v5", std::nullopt, std::nullopt}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("tpu-v5")));
  api::TrainingJob unknown = job;
  unknown.spec.model.name = "gpt-17";
  EXPECT_THAT(PlanJob(unknown, {"h100", std::nullopt, std::nullopt}),
              StatusIs(absl::StatusCode::kNotFound, StartsWith("spec.model.name: ")));
}

TEST(PlanJob, PlannerErrorsNameTheSpecField) {
  api::TrainingJob job = Example("vgg16-foreground.yaml");
  job.spec.global_batch_size = 4;  // Fewer samples than the 8 GPUs.
  EXPECT_THAT(PlanJob(job, {"h100", std::nullopt, std::nullopt}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       StartsWith("spec.globalBatchSize: global batch 4 is smaller")));
}

TEST(PlanJob, TickTockForcedOnABurstParallelPlanNamesTheField) {
  api::TrainingJob job = Example("vgg16-foreground.yaml");  // strategy BurstParallel
  job.spec.parallelism.tick_tock = api::Toggle::kOn;
  EXPECT_THAT(PlanJob(job, {"h100", std::nullopt, std::nullopt}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       StartsWith("spec.parallelism.tickTock: tick-tock: On needs")));
}

TEST(PlanJob, AdamKeepsTwoMomentsAndNeedsMoreMemoryThanSgd) {
  api::TrainingJob job = Example("vgg16-foreground.yaml");
  job.spec.parallelism.strategy = api::Strategy::kDataParallel;
  ASSERT_OK_AND_ASSIGN(JobPlan sgd, PlanJob(job, {"h100", std::nullopt, std::nullopt}));
  job.spec.optimizer = api::Optimizer::kAdam;
  ASSERT_OK_AND_ASSIGN(JobPlan adam, PlanJob(job, {"h100", std::nullopt, std::nullopt}));
  // Data-parallel keeps every parameter on every GPU: one more 4-byte moment each, at least
  // 4 x 138,357,544 bytes more per GPU.
  EXPECT_GE(adam.memory_per_gpu_bytes - sgd.memory_per_gpu_bytes, 4 * 138'357'544LL);
}

TEST(PlanJob, ProfileTextIsUsedInsteadOfTheShippedOne) {
  const api::TrainingJob job = Example("vgg16-foreground.yaml");
  std::string a100_csv;
  for (const planner::BuiltinProfileFile& file : planner::BuiltinProfileFiles()) {
    if (file.device == "a100-40gb") a100_csv = std::string(file.csv);
  }
  ASSERT_FALSE(a100_csv.empty());
  // The shipped A100 profile given as text plans exactly as the shipped one does on an A100.
  ASSERT_OK_AND_ASSIGN(JobPlan shipped, PlanJob(job, {"a100", std::nullopt, std::nullopt}));
  ASSERT_OK_AND_ASSIGN(JobPlan given, PlanJob(job, {"a100", std::nullopt, a100_csv}));
  EXPECT_EQ(api::ToJson(given.plan), api::ToJson(shipped.plan));
  // On an H100 the A100 times replace the shipped H100 ones: slower predicted iterations.
  ASSERT_OK_AND_ASSIGN(JobPlan h100, PlanJob(job, {"h100", std::nullopt, std::nullopt}));
  ASSERT_OK_AND_ASSIGN(JobPlan h100_with_a100_times,
                       PlanJob(job, {"h100", std::nullopt, a100_csv}));
  EXPECT_NE(h100_with_a100_times.plan.predictions.compute_seconds,
            h100.plan.predictions.compute_seconds);
}

TEST(PlanJob, BadProfileNamesTheField) {
  const api::TrainingJob job = Example("vgg16-foreground.yaml");
  EXPECT_THAT(PlanJob(job, {"h100", std::nullopt, std::string("not,a,profile\n1,2,3\n")}),
              StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("spec.model.profile: ")));
}

TEST(PlanJob, SameInputsGiveIdenticalPlanJson) {
  const api::TrainingJob job = Example("vgg16-foreground.yaml");
  ASSERT_OK_AND_ASSIGN(JobPlan first, PlanJob(job, {"h100", std::nullopt, std::nullopt}));
  ASSERT_OK_AND_ASSIGN(JobPlan second, PlanJob(job, {"h100", std::nullopt, std::nullopt}));
  EXPECT_EQ(api::ToJson(first.plan).dump(), api::ToJson(second.plan).dump());
  EXPECT_EQ(first.description, second.description);
  const PlanInputs table{"h100", std::string(kMlpTable), std::nullopt};
  ASSERT_OK_AND_ASSIGN(JobPlan t1, PlanJob(TableJob(), table));
  ASSERT_OK_AND_ASSIGN(JobPlan t2, PlanJob(TableJob(), table));
  EXPECT_EQ(api::ToJson(t1.plan).dump(), api::ToJson(t2.plan).dump());
}

// A plan of `strategy` with `waves` waves of `batch` samples, as TrainingFor reads it.
api::Plan WavePlan(api::Strategy strategy, std::int64_t waves, std::int64_t batch) {
  api::Plan plan;
  plan.strategy = strategy;
  plan.waves = waves;
  plan.global_batch_size = batch;
  return plan;
}

TEST(TrainingFor, CopiesOptimizerLearningRateAndCheckpointsAndKeepsStepsOfOneBatch) {
  api::TrainingJob job = Example("vgg16-foreground.yaml");  // 1000 steps, checkpoint every 500
  job.spec.optimizer = api::Optimizer::kAdamW;
  job.spec.learning_rate = 3e-4;
  job.spec.checkpoint.interval_seconds = 90;
  for (const api::Strategy strategy :
       {api::Strategy::kDataParallel, api::Strategy::kBurstParallel, api::Strategy::kTickTock}) {
    SCOPED_TRACE(api::ToString(strategy));
    // Tick-tock's global iterations train one wave's batch each: the same steps.
    const std::int64_t waves = strategy == api::Strategy::kTickTock ? 2 : 1;
    ASSERT_OK_AND_ASSIGN(api::PlanTraining training,
                         TrainingFor(job, WavePlan(strategy, waves, 32)));
    EXPECT_EQ(training.optimizer, api::Optimizer::kAdamW);
    EXPECT_DOUBLE_EQ(training.learning_rate, 3e-4);
    EXPECT_EQ(training.steps, 1000);
    EXPECT_EQ(training.seed, 0);
    EXPECT_EQ(training.checkpoint_interval_steps, 500);
    EXPECT_DOUBLE_EQ(training.checkpoint_interval_seconds, 90);
  }
}

TEST(TrainingFor, EpochsBecomeStepsRoundedUp) {
  api::TrainingJob job = Example("vgg16-foreground.yaml");
  job.spec.steps.reset();
  job.spec.epochs = 3;
  job.spec.dataset_samples = 1000;
  // 3 x 1000 samples in batches of 32: 93.75, so 94 steps (the last one reaches into epoch 4).
  ASSERT_OK_AND_ASSIGN(api::PlanTraining training,
                       TrainingFor(job, WavePlan(api::Strategy::kDataParallel, 1, 32)));
  EXPECT_EQ(training.steps, 94);
  // The workers count an epoch as these samples (and refuse a dataset of another size).
  EXPECT_EQ(training.dataset_samples, 1000);
  job.spec.dataset_samples = 320;  // exactly 30 steps
  ASSERT_OK_AND_ASSIGN(training, TrainingFor(job, WavePlan(api::Strategy::kDataParallel, 1, 32)));
  EXPECT_EQ(training.steps, 30);
}

TEST(TrainingFor, ModelParallelWaveStepsTrainOneBatchPerWave) {
  api::TrainingJob job = Example("vgg16-foreground.yaml");  // 1000 steps of 32
  job.spec.checkpoint.interval_steps = 6;
  // 4 waves of 32 samples per step: 1000 x 32 / 128 = 250 steps; a checkpoint every 6 x 32
  // samples is one every 1.5 steps, rounded up to 2.
  ASSERT_OK_AND_ASSIGN(api::PlanTraining training,
                       TrainingFor(job, WavePlan(api::Strategy::kModelParallelWaves, 4, 32)));
  EXPECT_EQ(training.steps, 250);
  EXPECT_EQ(training.checkpoint_interval_steps, 2);
  // 1000 / 3 = 333.3: 334 steps, so that the job sees at least the samples it asked for.
  ASSERT_OK_AND_ASSIGN(training,
                       TrainingFor(job, WavePlan(api::Strategy::kModelParallelWaves, 3, 32)));
  EXPECT_EQ(training.steps, 334);
  job.spec.checkpoint.interval_steps = 1;  // Never below one step.
  ASSERT_OK_AND_ASSIGN(training,
                       TrainingFor(job, WavePlan(api::Strategy::kModelParallelWaves, 8, 32)));
  EXPECT_EQ(training.checkpoint_interval_steps, 1);
  // Epochs: 2 x 1000 samples in steps of 4 x 32: 15.6, so 16.
  job.spec.steps.reset();
  job.spec.epochs = 2;
  job.spec.dataset_samples = 1000;
  ASSERT_OK_AND_ASSIGN(training,
                       TrainingFor(job, WavePlan(api::Strategy::kModelParallelWaves, 4, 32)));
  EXPECT_EQ(training.steps, 16);
}

TEST(TrainingFor, SpecsWithoutAStepCountOrPastInt64AreRejectedNamingTheField) {
  api::TrainingJob job = Example("vgg16-foreground.yaml");
  const api::Plan plan = WavePlan(api::Strategy::kDataParallel, 1, 32);
  job.spec.steps.reset();
  EXPECT_THAT(TrainingFor(job, plan),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("spec: must set exactly")));
  job.spec.epochs = 2;  // without datasetSamples
  EXPECT_THAT(TrainingFor(job, plan),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("spec.datasetSamples")));
  job.spec.epochs.reset();
  job.spec.steps = std::int64_t{1} << 60;  // x 32 samples overflows
  EXPECT_THAT(TrainingFor(job, plan),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("spec.steps")));
}

TEST(PlanJob, ThePlanCarriesTheTrainingOfTheSpec) {
  api::TrainingJob job = Example("vgg16-foreground.yaml");
  job.spec.learning_rate = 0.05;
  ASSERT_OK_AND_ASSIGN(JobPlan plan, PlanJob(job, {"h100", std::nullopt, std::nullopt}));
  EXPECT_EQ(plan.plan.training.steps, 1000);
  EXPECT_DOUBLE_EQ(plan.plan.training.learning_rate, 0.05);
  EXPECT_EQ(plan.plan.training.optimizer, api::Optimizer::kSgd);
  EXPECT_EQ(plan.plan.training.checkpoint_interval_steps, 500);
  EXPECT_TRUE(plan.plan.layer_table.empty()) << "a built-in model needs no table";
  EXPECT_OK(api::Validate(plan.plan));
  // What the workers read back from the ConfigMap is the same plan.
  ASSERT_OK_AND_ASSIGN(api::Plan decoded, api::Plan::FromJson(api::ToJson(plan.plan)));
  EXPECT_EQ(api::ToJson(decoded), api::ToJson(plan.plan));
}

TEST(PlanJob, AModelParallelWavesPlanRunsFewerStepsOfSeveralBatches) {
  api::TrainingJob job = Example("vgg16-foreground.yaml");
  job.spec.parallelism.strategy = api::Strategy::kModelParallelWaves;
  ASSERT_OK_AND_ASSIGN(JobPlan plan, PlanJob(job, {"h100", std::nullopt, std::nullopt}));
  ASSERT_EQ(plan.plan.strategy, api::Strategy::kModelParallelWaves);
  ASSERT_GE(plan.plan.waves, 2);
  const std::int64_t per_step = plan.plan.waves * plan.plan.global_batch_size;
  EXPECT_EQ(plan.plan.training.steps, (1000 * 32 + per_step - 1) / per_step);
  EXPECT_GE(plan.plan.training.steps * per_step, 1000 * 32);
  EXPECT_OK(api::Validate(plan.plan));
}

TEST(PlanJob, ALayerTableJobsPlanCarriesTheTableText) {
  ASSERT_OK_AND_ASSIGN(JobPlan plan,
                       PlanJob(TableJob(), {"h100", std::string(kMlpTable), std::nullopt}));
  EXPECT_EQ(plan.plan.layer_table, kMlpTable);
  EXPECT_EQ(plan.plan.training.steps, 10);
  EXPECT_OK(api::Validate(plan.plan));
  ASSERT_OK_AND_ASSIGN(api::Plan decoded, api::Plan::FromJson(api::ToJson(plan.plan)));
  EXPECT_EQ(decoded.layer_table, kMlpTable);
}

}  // namespace
}  // namespace wavepool::controller
