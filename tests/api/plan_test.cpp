#include "wavepool/api/plan.h"

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/api/api_fixtures.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/manifest.h"
#include "wavepool/api/validation.h"
#include "wavepool/api/yaml.h"

namespace wavepool::api {
namespace {

using ::testing::HasSubstr;
using ::wavepool::api::testing::ValidPlanJson;
using ::wavepool::testing::IsOk;
using ::wavepool::testing::StatusIs;

Plan ValidPlan() {
  absl::StatusOr<Plan> plan = Plan::FromJson(ValidPlanJson());
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : Plan();
}

TEST(PlanJson, EveryFieldSurvivesJsonAndYamlRoundTrips) {
  ASSERT_OK_AND_ASSIGN(Plan plan, Plan::FromJson(ValidPlanJson()));
  EXPECT_EQ(ToJson(plan), ValidPlanJson());
  EXPECT_EQ(plan.strategy, Strategy::kBurstParallel);
  EXPECT_EQ(plan.stages.at(1).ranks, (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(plan.stages.at(2).depends_on, (std::vector<std::int64_t>{1}));
  EXPECT_EQ(plan.transfers.at(0).bytes_per_sample, 802816);
  EXPECT_EQ(plan.sync_groups.at(1).algorithm, CollectiveAlgorithm::kTree);
  EXPECT_TRUE(plan.data_movement.preload);
  EXPECT_EQ(plan.predictions.memory_per_gpu_bytes, 4294967296);
  EXPECT_EQ(plan.training.optimizer, Optimizer::kAdam);
  EXPECT_EQ(plan.training.steps, 100);
  EXPECT_EQ(plan.training.checkpoint_interval_seconds, 600.0);
  EXPECT_EQ(plan.training.dataset_samples, 50000);
  EXPECT_THAT(Validate(plan), IsOk());

  ASSERT_OK_AND_ASSIGN(Plan from_yaml, LoadPlan(ToYaml(plan)));
  EXPECT_EQ(ToJson(from_yaml).dump(), ValidPlanJson().dump());
  ASSERT_OK_AND_ASSIGN(Plan from_json, LoadPlan(ToJson(plan).dump(2)));
  EXPECT_EQ(ToJson(from_json), ValidPlanJson());
}

TEST(PlanJson, PlansWrittenBeforeTrainingSettingsReadWithDefaults) {
  nlohmann::json document = ValidPlanJson();
  for (const char* field : {"training", "layerTable", "wavePlacement"}) document.erase(field);
  ASSERT_OK_AND_ASSIGN(Plan plan, Plan::FromJson(document));
  EXPECT_EQ(plan.training.optimizer, Optimizer::kSgd);
  EXPECT_EQ(plan.training.learning_rate, 0.01);
  EXPECT_EQ(plan.training.steps, 0);
  EXPECT_EQ(plan.wave_placement, WavePlacement::kStationary);
  EXPECT_TRUE(plan.layer_table.empty());
  EXPECT_THAT(Validate(plan), IsOk());
}

TEST(PlanValidation, TrainingSettingsNameTheirField) {
  const std::vector<std::pair<std::function<void(Plan&)>, std::string>> cases = {
      {[](Plan& p) { p.training.learning_rate = 0; }, "training.learningRate: must be a finite"},
      {[](Plan& p) { p.training.learning_rate = std::numeric_limits<double>::infinity(); },
       "training.learningRate"},
      {[](Plan& p) { p.training.learning_rate = 1e39; },
       "training.learningRate: must be at most 3.4028234663852886e+38"},
      {[](Plan& p) { p.training.steps = -1; }, "training.steps"},
      {[](Plan& p) { p.training.seed = -3; }, "training.seed"},
      {[](Plan& p) { p.training.checkpoint_interval_steps = -1; },
       "training.checkpointIntervalSteps"},
      {[](Plan& p) { p.training.checkpoint_interval_seconds = -0.5; },
       "training.checkpointIntervalSeconds"},
      {[](Plan& p) { p.training.dataset_samples = -1; }, "training.datasetSamples"},
  };
  for (const auto& [mutate, message] : cases) {
    Plan plan = ValidPlan();
    mutate(plan);
    EXPECT_THAT(Validate(plan), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)));
  }
  nlohmann::json document = ValidPlanJson();
  document["wavePlacement"] = "Diagonal";
  EXPECT_THAT(Plan::FromJson(document),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("wavePlacement")));
}

TEST(PlanJson, RequiredFieldsAndStrictness) {
  for (const char* field : {"strategy", "globalBatchSize", "gpus", "stages"}) {
    nlohmann::json document = ValidPlanJson();
    document.erase(field);
    EXPECT_THAT(Plan::FromJson(document), StatusIs(absl::StatusCode::kInvalidArgument,
                                                   HasSubstr(std::string(field) + ": required")));
  }
  nlohmann::json document = ValidPlanJson();
  document["stages"][1]["perGPUBatch"] = 8;
  EXPECT_THAT(Plan::FromJson(document),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("stages[1].perGPUBatch: unknown field (did you mean "
                                 "\"perGpuBatch\"?)")));
  document = ValidPlanJson();
  document["syncGroups"][0]["algorithm"] = "butterfly";
  EXPECT_THAT(
      Plan::FromJson(document),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("syncGroups[0].algorithm: must be one of ring, tree, hierarchical, got "
                         "\"butterfly\"")));
  document = ValidPlanJson();
  document["stages"][0]["ranks"][2] = "2";
  EXPECT_THAT(Plan::FromJson(document),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("stages[0].ranks[2]: must be an integer, got string \"2\"")));
  document = ValidPlanJson();
  document["kind"] = "TrainingJob";
  EXPECT_THAT(Plan::FromJson(document),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("kind: must be \"Plan\", got \"TrainingJob\"")));
}

struct PlanCase {
  std::string name;
  std::function<void(Plan&)> change;
  std::string message;
};

std::vector<PlanCase> PlanCases() {
  return {
      {"RankOutside",
       [](Plan& p) {
         p.stages[1].ranks = {0, 9, 10, 11};
       },
       "Plan default/vgg: stages[1].ranks[1]: rank 9 is outside [0, 8)"},
      {"RankNegative", [](Plan& p) { p.stages[2].ranks = {-1}; },
       "stages[2].ranks[0]: rank -1 is outside [0, 8)"},
      {"RanksAscending",
       [](Plan& p) {
         p.stages[1].ranks = {0, 2, 1, 3};
       },
       "stages[1].ranks[2]: rank 1 must be greater than the rank before it (2)"},
      {"RanksUnique",
       [](Plan& p) {
         p.stages[1].ranks = {0, 1, 1, 3};
       },
       "stages[1].ranks[2]: rank 1 must be greater than the rank before it (1)"},
      {"RanksMatchGpus",
       [](Plan& p) {
         p.stages[1].ranks = {0, 1, 2};
       },
       "stages[1].ranks: must list 4 ranks (stages[1].gpus), got 3"},
      {"StageGpusWithinPlan", [](Plan& p) { p.stages[0].gpus = 9; },
       "stages[0].gpus: must be in [1, gpus (8)], got 9"},
      {"StageIndexInOrder", [](Plan& p) { p.stages[2].index = 3; },
       "stages[2].index: must be 2 (stages are listed in order), got 3"},
      {"StageHasLayers", [](Plan& p) { p.stages[1].layers.clear(); },
       "stages[1].layers: must list at least one layer"},
      {"LayerNamed", [](Plan& p) { p.stages[1].layers = {""}; }, "stages[1].layers[0]: required"},
      {"LayerInOneStage",
       [](Plan& p) {
         p.stages[2].layers = {"fc", "conv1"};
       },
       "stages[2].layers[1]: layer \"conv1\" is already in stages[0]"},
      {"PerGpuBatchAtLeastOne", [](Plan& p) { p.stages[0].per_gpu_batch = 0; },
       "stages[0].perGpuBatch: must be >= 1, got 0"},
      {"PerGpuBatchWithinGlobal", [](Plan& p) { p.stages[2].per_gpu_batch = 64; },
       "stages[2].perGpuBatch: must be <= globalBatchSize (32), got 64"},
      {"DependsOnEarlier", [](Plan& p) { p.stages[1].depends_on = {2}; },
       "stages[1].dependsOn[0]: stage 2 is not an earlier stage, must be in [0, 1)"},
      {"DependsOnNotSelf",
       [](Plan& p) {
         p.stages[1].depends_on = {0, 1};
       },
       "stages[1].dependsOn[1]: stage 1 is not an earlier stage, must be in [0, 1)"},
      {"ConcurrentExists", [](Plan& p) { p.stages[1].concurrent_with = {7}; },
       "stages[1].concurrentWith[0]: stage 7 does not exist, must be in [0, 3)"},
      {"ConcurrentNotSelf", [](Plan& p) { p.stages[1].concurrent_with = {1}; },
       "stages[1].concurrentWith[0]: stage 1 is the stage itself"},
      {"StageSecondsNonNegative", [](Plan& p) { p.stages[0].predicted_seconds = -0.5; },
       "stages[0].predictedSeconds: must be >= 0.0, got -0.5"},
      {"AtLeastOneStage", [](Plan& p) { p.stages.clear(); },
       "stages: must list at least one stage"},
      {"TransferFromExists", [](Plan& p) { p.transfers[0].from_stage = -1; },
       "transfers[0].fromStage: stage -1 does not exist, must be in [0, 3)"},
      {"TransferToExists", [](Plan& p) { p.transfers[1].to_stage = 9; },
       "transfers[1].toStage: stage 9 does not exist, must be in [0, 3)"},
      {"TransferForward",
       [](Plan& p) {
         p.transfers[1].from_stage = 2;
         p.transfers[1].to_stage = 1;
       },
       "transfers[1].toStage: must be a later stage than fromStage (2), got 1"},
      {"TransferBytesNonNegative", [](Plan& p) { p.transfers[0].bytes_per_sample = -4; },
       "transfers[0].bytesPerSample: must be >= 0, got -4"},
      {"SyncStageExists", [](Plan& p) { p.sync_groups[0].stage = 3; },
       "syncGroups[0].stage: stage 3 does not exist, must be in [0, 3)"},
      {"SyncRanksWithinPlan",
       [](Plan& p) {
         p.sync_groups[1].ranks = {0, 8};
       },
       "syncGroups[1].ranks[1]: rank 8 is outside [0, 8)"},
      {"SyncBytesNonNegative", [](Plan& p) { p.sync_groups[0].bytes = -1; },
       "syncGroups[0].bytes: must be >= 0, got -1"},
      {"StrategyResolved", [](Plan& p) { p.strategy = Strategy::kAuto; },
       "strategy: must be the strategy the planner chose (DataParallel, BurstParallel, TickTock, "
       "ModelParallelWaves), got Auto"},
      {"GlobalBatchAtLeastOne", [](Plan& p) { p.global_batch_size = 0; },
       "globalBatchSize: must be >= 1, got 0"},
      {"GpusAtLeastOne", [](Plan& p) { p.gpus = 0; }, "gpus: must be >= 1, got 0"},
      {"AmplificationLimitAtLeastOne", [](Plan& p) { p.amplification_limit = 0.9; },
       "amplificationLimit: must be >= 1.0, got 0.9"},
      {"WavesAtLeastOne", [](Plan& p) { p.waves = 0; }, "waves: must be >= 1, got 0"},
      {"TickTockTwoWaves",
       [](Plan& p) {
         p.strategy = Strategy::kTickTock;
         p.waves = 3;
       },
       "waves: must be 1 or 2 for TickTock, got 3"},
      {"ModelParallelWavesUpToGpus",
       [](Plan& p) {
         p.strategy = Strategy::kModelParallelWaves;
         p.waves = 9;
       },
       "waves: must be <= gpus (8) for ModelParallelWaves, got 9"},
      {"WaveOffsetBelowOne", [](Plan& p) { p.wave_offset_fraction = 1.0; },
       "waveOffsetFraction: must be in [0.0, 1.0) of an iteration, got 1.0"},
      {"WaveOffsetFinite",
       [](Plan& p) { p.wave_offset_fraction = std::numeric_limits<double>::quiet_NaN(); },
       "waveOffsetFraction: must be in [0.0, 1.0) of an iteration, got NaN"},
      {"PredictionsNonNegative", [](Plan& p) { p.predictions.iteration_seconds = -1.0; },
       "predictions.iterationSeconds: must be >= 0.0, got -1.0"},
      {"PredictedMemoryNonNegative", [](Plan& p) { p.predictions.memory_per_gpu_bytes = -1; },
       "predictions.memoryPerGpuBytes: must be >= 0, got -1"},
      {"JobIsNamespacedName", [](Plan& p) { p.job = "vgg"; },
       "Plan vgg: job: must be \"<namespace>/<name>\" or empty, got \"vgg\""},
  };
}

class PlanRule : public ::testing::TestWithParam<PlanCase> {};

TEST_P(PlanRule, ReportsItsPathAndProblem) {
  Plan plan = ValidPlan();
  GetParam().change(plan);
  EXPECT_THAT(Validate(plan),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(GetParam().message)));
}

INSTANTIATE_TEST_SUITE_P(PlanValidation, PlanRule, ::testing::ValuesIn(PlanCases()),
                         [](const ::testing::TestParamInfo<PlanCase>& param_info) {
                           return param_info.param.name;
                         });

TEST(PlanValidation, TickTockAndModelParallelWavesPlansPass) {
  Plan tick_tock = ValidPlan();
  tick_tock.strategy = Strategy::kTickTock;
  tick_tock.waves = 2;
  tick_tock.wave_offset_fraction = 0.5;
  EXPECT_THAT(Validate(tick_tock), IsOk());
  Plan waves = ValidPlan();
  waves.strategy = Strategy::kModelParallelWaves;
  waves.waves = 8;
  waves.job.clear();
  EXPECT_THAT(Validate(waves), IsOk());
}

TEST(PlanValidation, LoadPlanPointsAtTheLine) {
  nlohmann::json document = ValidPlanJson();
  document["stages"][1]["ranks"] = {0, 1, 2, 9};
  const std::string yaml = JsonToYaml(document);
  // The offending rank's line in the written YAML.
  std::size_t line = 1;
  const std::size_t at = yaml.find("- 9");
  for (std::size_t i = 0; i < at; ++i) line += yaml[i] == '\n' ? 1 : 0;
  EXPECT_THAT(LoadPlan(yaml),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("line " + std::to_string(line) +
                                 ": Plan default/vgg: stages[1].ranks[3]: rank 9 is outside "
                                 "[0, 8)")));
}

}  // namespace
}  // namespace wavepool::api
