#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/api/api_fixtures.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/defaults.h"
#include "wavepool/api/validation.h"

namespace wavepool::api {
namespace {

using ::testing::HasSubstr;
using ::wavepool::api::testing::ValidBackgroundJob;
using ::wavepool::api::testing::ValidForegroundJob;
using ::wavepool::testing::IsOk;
using ::wavepool::testing::StatusIs;

Condition PlannedCondition() {
  return {"Planned", ConditionStatus::kTrue, 1, "2026-05-01T10:00:00Z", "PlanFound", ""};
}

TEST(TrainingJobDefaults, FillEveryDocumentedDefault) {
  TrainingJob job;
  job.spec.role = Role::kForeground;
  SetDefaults(&job);
  EXPECT_EQ(job.metadata.namespace_, "default");
  EXPECT_EQ(job.spec.optimizer, Optimizer::kSgd);
  EXPECT_EQ(job.spec.learning_rate, 0.01);
  EXPECT_EQ(job.spec.parallelism.strategy, Strategy::kAuto);
  EXPECT_EQ(job.spec.parallelism.amplification_limit, 2.0);
  EXPECT_EQ(job.spec.parallelism.gpu_counts, GpuCounts::kPowersOfTwo);
  EXPECT_EQ(job.spec.parallelism.tick_tock, Toggle::kAuto);
  EXPECT_EQ(job.spec.data_movement.cpu_split, Toggle::kAuto);
  EXPECT_EQ(job.spec.data_movement.preload, Toggle::kAuto);
  EXPECT_EQ(job.spec.data_movement.weight_compression, Toggle::kAuto);
  EXPECT_EQ(job.spec.collocation.max_foreground_slowdown, 1.10);
  EXPECT_EQ(job.spec.collocation.allow_background, true);
  EXPECT_FALSE(job.spec.collocation.max_batch_size.has_value());
  EXPECT_EQ(job.spec.suspend, false);
  EXPECT_EQ(job.spec.backoff_limit, 6);
  // Fields without a default stay unset.
  EXPECT_FALSE(job.spec.gpus.has_value());
  EXPECT_FALSE(job.spec.steps.has_value());
  EXPECT_FALSE(job.spec.checkpoint.path.has_value());
}

TEST(TrainingJobDefaults, BackgroundJobsGetNoForegroundCollocationDefaults) {
  TrainingJob job = ValidBackgroundJob();
  EXPECT_FALSE(job.spec.collocation.max_foreground_slowdown.has_value());
  EXPECT_FALSE(job.spec.collocation.allow_background.has_value());
  EXPECT_THAT(Validate(job), IsOk());
}

TEST(TrainingJobDefaults, NeverOverwriteAndAreIdempotent) {
  TrainingJob job;
  job.metadata.namespace_ = "team-a";
  job.spec.role = Role::kForeground;
  job.spec.optimizer = Optimizer::kAdam;
  job.spec.parallelism.amplification_limit = 3.0;
  job.spec.collocation.allow_background = false;
  job.spec.data_movement.preload = Toggle::kOn;
  SetDefaults(&job);
  const nlohmann::json once = ToJson(job);
  SetDefaults(&job);
  EXPECT_EQ(ToJson(job), once);
  EXPECT_EQ(job.metadata.namespace_, "team-a");
  EXPECT_EQ(job.spec.optimizer, Optimizer::kAdam);
  EXPECT_EQ(job.spec.parallelism.amplification_limit, 3.0);
  EXPECT_EQ(job.spec.collocation.allow_background, false);
  EXPECT_EQ(job.spec.data_movement.preload, Toggle::kOn);
}

TEST(TrainingJobValidation, ValidJobsPass) {
  EXPECT_THAT(Validate(ValidForegroundJob()), IsOk());
  EXPECT_THAT(Validate(ValidBackgroundJob()), IsOk());
  TrainingJob by_layer_table = ValidForegroundJob();
  by_layer_table.spec.model.name.reset();
  by_layer_table.spec.model.layer_table = ConfigMapKeyRef{"vgg-layers", "table.csv"};
  by_layer_table.spec.model.profile = ConfigMapKeyRef{"vgg-profile", "a100.json"};
  EXPECT_THAT(Validate(by_layer_table), IsOk());
  TrainingJob with_status = ValidForegroundJob();
  with_status.status.conditions = {PlannedCondition()};
  with_status.status.plan = PlanSummary{Strategy::kBurstParallel, 0.1, 1 << 30, {8, 4}, 1.5};
  with_status.status.placement = {{"vgg-0", "node-a", {"GPU-aaaa"}}};
  with_status.status.progress = TrainingProgress{10, 100.0, 0.32, 1.05};
  EXPECT_THAT(Validate(with_status), IsOk());
}

TEST(TrainingJobValidation, ErrorsNameTheObjectThePathAndTheProblem) {
  TrainingJob job = ValidForegroundJob();
  job.spec.parallelism.amplification_limit = 0.5;
  const absl::Status status = Validate(job);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      status.message(),
      "TrainingJob default/vgg: spec.parallelism.amplificationLimit: must be >= 1.0, got 0.5");
  EXPECT_EQ(FieldPathOf(status), "spec.parallelism.amplificationLimit");

  job = ValidForegroundJob();
  job.spec.global_batch_size = 4;
  EXPECT_EQ(Validate(job).message(),
            "TrainingJob default/vgg: spec.globalBatchSize: must be >= spec.gpus (8), got 4");
}

TEST(TrainingJobValidation, NamespaceComesOnlyFromSetDefaults) {
  TrainingJob job = ValidForegroundJob();
  job.metadata.namespace_.clear();
  EXPECT_THAT(Validate(job), StatusIs(absl::StatusCode::kInvalidArgument,
                                      HasSubstr("TrainingJob vgg: metadata.namespace: required")));
  SetDefaults(&job);
  EXPECT_THAT(Validate(job), IsOk());
}

struct RuleCase {
  std::string name;
  std::function<TrainingJob()> make;
  std::string message;  // "<path>: <problem>"
};

// One valid job with one change.
std::function<TrainingJob()> Foreground(std::function<void(TrainingJob&)> change) {
  return [change] {
    TrainingJob job = ValidForegroundJob();
    change(job);
    return job;
  };
}
std::function<TrainingJob()> Background(std::function<void(TrainingJob&)> change) {
  return [change] {
    TrainingJob job = ValidBackgroundJob();
    change(job);
    return job;
  };
}

std::vector<RuleCase> RuleCases() {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  return {
      {"NameRequired", Foreground([](TrainingJob& j) { j.metadata.name.clear(); }),
       "metadata.name: required"},
      {"NameIsSubdomain", Foreground([](TrainingJob& j) { j.metadata.name = "VGG_16"; }),
       "metadata.name: must be a DNS-1123 subdomain (at most 253 lowercase letters, digits, '-' "
       "and '.', starting and ending with a letter or digit), got \"VGG_16\""},
      {"NameNotTooLong",
       Foreground([](TrainingJob& j) { j.metadata.name = std::string(254, 'a'); }),
       "metadata.name: must be a DNS-1123 subdomain"},
      {"NamespaceIsLabel", Foreground([](TrainingJob& j) { j.metadata.namespace_ = "team.a"; }),
       "metadata.namespace: must be a DNS-1123 label"},
      {"RoleRequired", Foreground([](TrainingJob& j) { j.spec.role.reset(); }),
       "spec.role: required, one of Foreground, Background"},
      {"ModelBoth", Foreground([](TrainingJob& j) {
         j.spec.model.layer_table = ConfigMapKeyRef{"a", "b"};
       }),
       "spec.model: must set exactly one of name or layerTable, got both"},
      {"ModelNeither", Foreground([](TrainingJob& j) { j.spec.model.name.reset(); }),
       "spec.model: must set exactly one of name or layerTable, got neither"},
      {"ModelNameShape", Foreground([](TrainingJob& j) { j.spec.model.name = "VGG 16"; }),
       "spec.model.name: must be a model name (at most 63 lowercase letters, digits, '_', '-' "
       "and '.', starting and ending with a letter or digit), got \"VGG 16\""},
      {"ModelNameNotEmpty", Foreground([](TrainingJob& j) { j.spec.model.name = ""; }),
       "spec.model.name: must be a model name"},
      {"LayerTableConfigMapRequired", Foreground([](TrainingJob& j) {
         j.spec.model.name.reset();
         j.spec.model.layer_table = ConfigMapKeyRef{"", "table.csv"};
       }),
       "spec.model.layerTable.configMap: required"},
      {"LayerTableKeyShape", Foreground([](TrainingJob& j) {
         j.spec.model.name.reset();
         j.spec.model.layer_table = ConfigMapKeyRef{"layers", "a/b"};
       }),
       "spec.model.layerTable.key: must be a ConfigMap key (letters, digits, '-', '_' and '.'), "
       "got \"a/b\""},
      {"ProfileKeyRequired", Foreground([](TrainingJob& j) {
         j.spec.model.profile = ConfigMapKeyRef{"profile", ""};
       }),
       "spec.model.profile.key: required"},
      {"GlobalBatchRequired", Foreground([](TrainingJob& j) { j.spec.global_batch_size.reset(); }),
       "spec.globalBatchSize: required, an integer >= 1"},
      {"GlobalBatchAtLeastOne", Foreground([](TrainingJob& j) { j.spec.global_batch_size = 0; }),
       "spec.globalBatchSize: must be >= 1, got 0"},
      {"GpusRequired", Foreground([](TrainingJob& j) { j.spec.gpus.reset(); }),
       "spec.gpus: required, an integer >= 1"},
      {"GpusAtLeastOne", Foreground([](TrainingJob& j) { j.spec.gpus = -2; }),
       "spec.gpus: must be >= 1, got -2"},
      {"BackgroundOneGpu", Background([](TrainingJob& j) { j.spec.gpus = 2; }),
       "spec.gpus: must be 1 for a Background job, got 2"},
      {"BatchAtLeastGpus", Foreground([](TrainingJob& j) { j.spec.global_batch_size = 4; }),
       "spec.globalBatchSize: must be >= spec.gpus (8), got 4"},
      {"StepsAndEpochs", Foreground([](TrainingJob& j) { j.spec.epochs = 2; }),
       "spec: must set exactly one of steps or epochs, got both"},
      {"NeitherStepsNorEpochs", Foreground([](TrainingJob& j) { j.spec.steps.reset(); }),
       "spec: must set exactly one of steps or epochs, got neither"},
      {"StepsAtLeastOne", Foreground([](TrainingJob& j) { j.spec.steps = 0; }),
       "spec.steps: must be >= 1, got 0"},
      {"EpochsAtLeastOne", Foreground([](TrainingJob& j) {
         j.spec.steps.reset();
         j.spec.epochs = 0;
         j.spec.dataset_samples = 100;
       }),
       "spec.epochs: must be >= 1, got 0"},
      {"EpochsNeedDatasetSamples", Foreground([](TrainingJob& j) {
         j.spec.steps.reset();
         j.spec.epochs = 3;
       }),
       "spec.datasetSamples: required when spec.epochs is set"},
      {"DatasetSamplesAtLeastOne", Foreground([](TrainingJob& j) { j.spec.dataset_samples = 0; }),
       "spec.datasetSamples: must be >= 1, got 0"},
      {"DatasetHoldsABatch", Foreground([](TrainingJob& j) { j.spec.dataset_samples = 10; }),
       "spec.datasetSamples: must be >= spec.globalBatchSize (32), got 10"},
      {"LearningRatePositive", Foreground([](TrainingJob& j) { j.spec.learning_rate = 0.0; }),
       "spec.learningRate: must be > 0.0, got 0.0"},
      {"LearningRateFinite", Foreground([nan](TrainingJob& j) { j.spec.learning_rate = nan; }),
       "spec.learningRate: must be a finite number > 0.0, got NaN"},
      // The workers' float32 optimizers refuse it, but only after the job holds its GPUs.
      {"LearningRateFitsFloat32", Foreground([](TrainingJob& j) { j.spec.learning_rate = 1e300; }),
       "spec.learningRate: must be at most 3.4028234663852886e+38 (the largest float32"},
      {"AmplificationAtLeastOne",
       Foreground([](TrainingJob& j) { j.spec.parallelism.amplification_limit = 0.5; }),
       "spec.parallelism.amplificationLimit: must be >= 1.0, got 0.5"},
      {"AmplificationFinite", Foreground([](TrainingJob& j) {
         j.spec.parallelism.amplification_limit = std::numeric_limits<double>::infinity();
       }),
       "spec.parallelism.amplificationLimit: must be a finite number >= 1.0, got +Inf"},
      {"BurstNeedsTwoGpus",
       Background([](TrainingJob& j) { j.spec.parallelism.strategy = Strategy::kBurstParallel; }),
       "spec.parallelism.strategy: BurstParallel needs spec.gpus >= 2, got 1"},
      {"WavesNeedTwoGpus", Foreground([](TrainingJob& j) {
         j.spec.gpus = 1;
         j.spec.parallelism.strategy = Strategy::kModelParallelWaves;
       }),
       "spec.parallelism.strategy: ModelParallelWaves needs spec.gpus >= 2, got 1"},
      {"TickTockNotOff", Foreground([](TrainingJob& j) {
         j.spec.parallelism.strategy = Strategy::kTickTock;
         j.spec.parallelism.tick_tock = Toggle::kOff;
       }),
       "spec.parallelism.tickTock: must not be Off when spec.parallelism.strategy is TickTock"},
      {"ForegroundNoMaxBatch",
       Foreground([](TrainingJob& j) { j.spec.collocation.max_batch_size = 8; }),
       "spec.collocation.maxBatchSize: only valid for a Background job"},
      {"SlowdownAtLeastOne",
       Foreground([](TrainingJob& j) { j.spec.collocation.max_foreground_slowdown = 0.9; }),
       "spec.collocation.maxForegroundSlowdown: must be >= 1.0, got 0.9"},
      {"BackgroundNoSlowdown",
       Background([](TrainingJob& j) { j.spec.collocation.max_foreground_slowdown = 1.1; }),
       "spec.collocation.maxForegroundSlowdown: only valid for a Foreground job"},
      {"BackgroundNoAllowBackground",
       Background([](TrainingJob& j) { j.spec.collocation.allow_background = true; }),
       "spec.collocation.allowBackground: only valid for a Foreground job"},
      {"MaxBatchAtLeastOne",
       Background([](TrainingJob& j) { j.spec.collocation.max_batch_size = 0; }),
       "spec.collocation.maxBatchSize: must be >= 1, got 0"},
      {"BackgroundNeedsCheckpoint",
       Background([](TrainingJob& j) { j.spec.checkpoint.path.reset(); }),
       "spec.checkpoint.path: required for a Background job (Background jobs are preemptible "
       "and resume from their checkpoint)"},
      {"CheckpointPathNotEmpty", Foreground([](TrainingJob& j) { j.spec.checkpoint.path = ""; }),
       "spec.checkpoint.path: must not be empty"},
      {"IntervalStepsAtLeastOne",
       Background([](TrainingJob& j) { j.spec.checkpoint.interval_steps = 0; }),
       "spec.checkpoint.intervalSteps: must be >= 1, got 0"},
      {"IntervalSecondsPositive",
       Background([](TrainingJob& j) { j.spec.checkpoint.interval_seconds = -5.0; }),
       "spec.checkpoint.intervalSeconds: must be > 0.0, got -5.0"},
      {"IntervalNeedsPath",
       Foreground([](TrainingJob& j) { j.spec.checkpoint.interval_steps = 10; }),
       "spec.checkpoint.path: required when an interval is set"},
      {"TemplateIsObject",
       Foreground([](TrainingJob& j) { j.spec.pod_template = nlohmann::json::array(); }),
       "spec.template: must be an object (a PodTemplateSpec), got array"},
      {"ConditionTypeRequired", Foreground([](TrainingJob& j) {
         j.status.conditions = {PlannedCondition()};
         j.status.conditions[0].type.clear();
       }),
       "status.conditions[0].type: required"},
      {"ConditionTypeShape", Foreground([](TrainingJob& j) {
         j.status.conditions = {PlannedCondition()};
         j.status.conditions[0].type = "plan ready";
       }),
       "status.conditions[0].type: must be a CamelCase name"},
      {"ConditionReasonShape", Foreground([](TrainingJob& j) {
         j.status.conditions = {PlannedCondition()};
         j.status.conditions[0].reason = "no plan";
       }),
       "status.conditions[0].reason: must be a CamelCase word"},
      {"ConditionReasonRequired", Foreground([](TrainingJob& j) {
         j.status.conditions = {PlannedCondition()};
         j.status.conditions[0].reason.clear();
       }),
       "status.conditions[0].reason: required"},
      {"ConditionTimeRfc3339", Foreground([](TrainingJob& j) {
         j.status.conditions = {PlannedCondition()};
         j.status.conditions[0].last_transition_time = "yesterday";
       }),
       "status.conditions[0].lastTransitionTime: must be an RFC 3339 time such as "
       "\"2026-05-01T10:00:00Z\", got \"yesterday\""},
      {"ConditionTypesUnique", Foreground([](TrainingJob& j) {
         j.status.conditions = {PlannedCondition(), PlannedCondition()};
       }),
       "status.conditions[1].type: duplicates status.conditions[0].type \"Planned\""},
      {"ConditionGenerationNonNegative", Foreground([](TrainingJob& j) {
         j.status.conditions = {PlannedCondition()};
         j.status.conditions[0].observed_generation = -1;
       }),
       "status.conditions[0].observedGeneration: must be >= 0, got -1"},
      {"ObservedGenerationNonNegative",
       Foreground([](TrainingJob& j) { j.status.observed_generation = -1; }),
       "status.observedGeneration: must be >= 0, got -1"},
      {"PlanStrategyResolved", Foreground([](TrainingJob& j) {
         j.status.plan = PlanSummary{Strategy::kAuto, 0, 0, {}, 0};
       }),
       "status.plan.strategy: must be the strategy the planner chose, got Auto"},
      {"PlanStageGpusPositive", Foreground([](TrainingJob& j) {
         j.status.plan = PlanSummary{Strategy::kBurstParallel, 0.1, 0, {8, 0}, 1};
       }),
       "status.plan.stageGpus[1]: must be >= 1, got 0"},
      {"PlacementPodRequired", Foreground([](TrainingJob& j) {
         j.status.placement = {{"", "node-a", {}}};
       }),
       "status.placement[0].pod: required"},
      {"PlacementUuidNotEmpty", Foreground([](TrainingJob& j) {
         j.status.placement = {{"p", "n", {"GPU-a", ""}}};
       }),
       "status.placement[0].gpuUUIDs[1]: required"},
      {"ProgressNonNegative", Foreground([](TrainingJob& j) {
         j.status.progress = TrainingProgress{1, -2.0, 0, 0};
       }),
       "status.progress.samplesPerSecond: must be >= 0.0, got -2.0"},
      {"RestartsNonNegative", Foreground([](TrainingJob& j) { j.status.restarts = -1; }),
       "status.restarts: must be >= 0, got -1"},
      {"StatusGpusAtLeastOne", Foreground([](TrainingJob& j) { j.status.gpus = 0; }),
       "status.gpus: must be >= 1, got 0"},
      {"GangGenerationNonNegative",
       Foreground([](TrainingJob& j) { j.status.gang_generation = -1; }),
       "status.gangGeneration: must be >= 0, got -1"},
      {"BackoffLimitNonNegative", Foreground([](TrainingJob& j) { j.spec.backoff_limit = -1; }),
       "spec.backoffLimit: must be >= 0, got -1"},
  };
}

class TrainingJobRule : public ::testing::TestWithParam<RuleCase> {};

TEST_P(TrainingJobRule, ReportsItsPathAndProblem) {
  const TrainingJob job = GetParam().make();
  const std::string object = "TrainingJob " + NamespacedName(job.metadata) + ": ";
  EXPECT_THAT(Validate(job),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(object + GetParam().message)));
}

INSTANTIATE_TEST_SUITE_P(TrainingJobValidation, TrainingJobRule, ::testing::ValuesIn(RuleCases()),
                         [](const ::testing::TestParamInfo<RuleCase>& param_info) {
                           return param_info.param.name;
                         });

}  // namespace
}  // namespace wavepool::api
