#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/api/api_fixtures.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/field_path.h"
#include "wavepool/api/training_job.h"
#include "wavepool/api/yaml.h"

namespace wavepool::api {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::wavepool::api::testing::EveryFieldTrainingJob;
using ::wavepool::testing::StatusIs;

// EveryFieldTrainingJob with the value at JSON pointer `pointer` replaced by `value`.
absl::StatusOr<TrainingJob> DecodeWith(const std::string& pointer, const nlohmann::json& value) {
  nlohmann::json document = EveryFieldTrainingJob();
  document[nlohmann::json::json_pointer(pointer)] = value;
  return TrainingJob::FromJson(document);
}

TEST(TrainingJobJson, EveryFieldSurvivesAJsonRoundTrip) {
  const nlohmann::json document = EveryFieldTrainingJob();
  ASSERT_OK_AND_ASSIGN(TrainingJob job, TrainingJob::FromJson(document));
  EXPECT_EQ(ToJson(job), document) << ToJson(job).dump(2);

  // Spot checks that the values landed in the right fields.
  EXPECT_EQ(job.metadata.namespace_, "team-a");
  EXPECT_EQ(job.metadata.generation, 3);
  EXPECT_EQ(job.metadata.owner_references.at(0).controller, true);
  EXPECT_EQ(job.spec.role, Role::kForeground);
  EXPECT_EQ(job.spec.model.layer_table->key, "table.csv");
  EXPECT_EQ(job.spec.model.profile->config_map, "vgg-profile");
  EXPECT_EQ(job.spec.optimizer, Optimizer::kAdamW);
  EXPECT_EQ(job.spec.parallelism.gpu_counts, GpuCounts::kAllIntegers);
  EXPECT_EQ(job.spec.parallelism.tick_tock, Toggle::kOn);
  EXPECT_EQ(job.spec.data_movement.preload, Toggle::kOff);
  EXPECT_DOUBLE_EQ(*job.spec.checkpoint.interval_seconds, 60.5);
  EXPECT_EQ(job.spec.pod_template["spec"]["containers"][0]["image"], "w:1");
  EXPECT_EQ(job.status.phase, JobPhase::kRunning);
  EXPECT_EQ(job.status.conditions.at(1).status, ConditionStatus::kFalse);
  EXPECT_EQ(job.status.plan->memory_per_gpu_bytes, 12884901888);
  EXPECT_EQ(job.status.plan->stage_gpus, (std::vector<std::int64_t>{8, 4, 1}));
  EXPECT_EQ(job.status.placement.at(0).gpu_uuids.at(1), "GPU-bbbb");
  EXPECT_DOUBLE_EQ(job.status.progress->foreground_slowdown, 1.04);
  EXPECT_EQ(job.status.gpus, std::optional<std::int64_t>(8));
  EXPECT_EQ(job.status.restarts, 2);
}

// RESTARTS in `kubectl get tj -o wide` reads status.restarts: a job with a phase carries it, 0
// included; a job the controller has not looked at yet has no status at all.
TEST(TrainingJobJson, RestartsAreWrittenOnceTheJobHasAPhase) {
  TrainingJob job;
  job.metadata.name = "tiny";
  EXPECT_FALSE(ToJson(job).contains("status"));
  job.status.phase = JobPhase::kPending;
  const nlohmann::json status = ToJson(job)["status"];
  ASSERT_TRUE(status.contains("restarts")) << status.dump();
  EXPECT_EQ(status["restarts"], 0);
  EXPECT_FALSE(status.contains("gpus"));  // not planned yet
  job.status.gpus = 3;
  EXPECT_EQ(ToJson(job)["status"]["gpus"], 3);
  ASSERT_OK_AND_ASSIGN(TrainingJob back, TrainingJob::FromJson(ToJson(job)));
  EXPECT_EQ(back.status.gpus, std::optional<std::int64_t>(3));
  EXPECT_EQ(back.status.restarts, 0);
}

TEST(TrainingJobJson, EveryFieldSurvivesAYamlRoundTrip) {
  ASSERT_OK_AND_ASSIGN(TrainingJob job, TrainingJob::FromJson(EveryFieldTrainingJob()));
  const std::string yaml = ToYaml(job);
  ASSERT_OK_AND_ASSIGN(TrainingJob back, FromYaml<TrainingJob>(yaml));
  EXPECT_EQ(ToJson(back), EveryFieldTrainingJob()) << yaml;
  // Integers stay integers and floats stay floats through YAML.
  EXPECT_EQ(ToJson(back).dump(), EveryFieldTrainingJob().dump()) << yaml;
}

TEST(TrainingJobJson, UnsetFieldsStayUnset) {
  TrainingJob job;
  job.metadata.name = "tiny";
  job.spec.role = Role::kForeground;
  job.spec.model.name = "mlp_tiny";
  job.spec.steps = 20;
  const nlohmann::json json = ToJson(job);
  EXPECT_EQ(json, nlohmann::json::parse(R"({
    "apiVersion": "wavepool.dev/v1alpha1", "kind": "TrainingJob",
    "metadata": {"name": "tiny"},
    "spec": {"role": "Foreground", "model": {"name": "mlp_tiny"}, "steps": 20}
  })"));
  ASSERT_OK_AND_ASSIGN(TrainingJob back, TrainingJob::FromJson(json));
  EXPECT_FALSE(back.spec.optimizer.has_value());
  EXPECT_FALSE(back.spec.parallelism.amplification_limit.has_value());
  EXPECT_FALSE(back.spec.collocation.allow_background.has_value());
  EXPECT_TRUE(back.spec.pod_template.is_null());
  EXPECT_FALSE(back.status.phase.has_value());
}

TEST(TrainingJobJson, ReadModifyWriteKeepsUnmodelledMetadata) {
  ASSERT_OK_AND_ASSIGN(TrainingJob job, TrainingJob::FromJson(EveryFieldTrainingJob()));
  job.spec.gpus = 4;
  job.metadata.labels["tier"] = "gold";
  const nlohmann::json written = ToJson(job);
  EXPECT_EQ(written["metadata"]["managedFields"],
            EveryFieldTrainingJob()["metadata"]["managedFields"]);
  EXPECT_EQ(written["metadata"]["selfLink"], EveryFieldTrainingJob()["metadata"]["selfLink"]);
  EXPECT_EQ(written["metadata"]["deletionGracePeriodSeconds"], 30);
  EXPECT_EQ(written["metadata"]["labels"]["tier"], "gold");
  EXPECT_EQ(written["spec"]["gpus"], 4);
  EXPECT_EQ(job.metadata.unknown_fields.size(), 3u);
}

TEST(TrainingJobJson, UnknownFieldsOutsideMetadataAreErrorsNamingThePath) {
  nlohmann::json document = EveryFieldTrainingJob();
  document["spec"]["gpu"] = 8;
  EXPECT_THAT(TrainingJob::FromJson(document),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.gpu: unknown field (did you mean \"gpus\"?)")));

  document = EveryFieldTrainingJob();
  document["spec"]["parallelism"]["amplificationLimt"] = 2;
  EXPECT_THAT(TrainingJob::FromJson(document),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.parallelism.amplificationLimt: unknown field (did you "
                                 "mean \"amplificationLimit\"?)")));

  document = EveryFieldTrainingJob();
  document["spec"]["priorityClass"] = "high";
  EXPECT_THAT(TrainingJob::FromJson(document),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.priorityClass: unknown field (valid fields: role, model, "
                                 "globalBatchSize, gpus,")));

  document = EveryFieldTrainingJob();
  document["spec"]["model"]["layerTable"]["configmap"] = "x";
  EXPECT_THAT(TrainingJob::FromJson(document),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.model.layerTable.configmap: unknown field (did you mean "
                                 "\"configMap\"?)")));

  document = EveryFieldTrainingJob();
  document["status"]["progress"]["loss"] = 0.5;
  EXPECT_THAT(TrainingJob::FromJson(document),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("status.progress.loss: unknown field")));

  document = EveryFieldTrainingJob();
  document["specs"] = nlohmann::json::object();
  EXPECT_THAT(TrainingJob::FromJson(document),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("specs: unknown field (did you mean \"spec\"?)")));
}

TEST(TrainingJobJson, WrongTypesNameThePathAndTheExpectedType) {
  struct Case {
    std::string pointer;
    nlohmann::json value;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"/spec/gpus", "eight", "spec.gpus: must be an integer, got string \"eight\""},
      {"/spec/gpus", 2.5, "spec.gpus: must be an integer, got number 2.5"},
      {"/spec/gpus", 8.0, "spec.gpus: must be an integer, got number 8.0"},
      {"/spec/gpus", 1e30, "spec.gpus: must be an integer, got number 1e+30"},
      {"/spec/gpus", 18446744073709551615ull,
       "spec.gpus: must be an integer in the 64-bit signed range, got 18446744073709551615"},
      {"/spec/globalBatchSize", true, "spec.globalBatchSize: must be an integer, got boolean true"},
      {"/spec/learningRate", "fast", "spec.learningRate: must be a number, got string \"fast\""},
      {"/spec/suspend", "yes", "spec.suspend: must be a boolean, got string \"yes\""},
      {"/spec/model", "vgg16", "spec.model: must be an object, got string \"vgg16\""},
      {"/spec/model/name", 16, "spec.model.name: must be a string, got number 16"},
      {"/spec/template", "pod", "spec.template: must be an object, got string \"pod\""},
      {"/spec/parallelism", nlohmann::json::array(),
       "spec.parallelism: must be an object, got array"},
      {"/metadata", "vgg", "metadata: must be an object, got string \"vgg\""},
      {"/metadata/labels/app", 1, "metadata.labels[app]: must be a string, got number 1"},
      {"/metadata/generation", "3", "metadata.generation: must be an integer, got string \"3\""},
      {"/status/plan/stageGpus/1", "4",
       "status.plan.stageGpus[1]: must be an integer, got string \"4\""},
      {"/status/placement/0/gpuUUIDs", 5,
       "status.placement[0].gpuUUIDs: must be an array, got number 5"},
      {"/status/conditions/0/observedGeneration", nlohmann::json::object(),
       "status.conditions[0].observedGeneration: must be an integer, got object"},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(DecodeWith(c.pointer, c.value),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.pointer;
  }
}

TEST(TrainingJobJson, BadEnumValuesListTheValidOnes) {
  EXPECT_THAT(DecodeWith("/spec/role", "foreground"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.role: must be one of Foreground, Background, got "
                                 "\"foreground\"")));
  EXPECT_THAT(DecodeWith("/spec/optimizer", "adam"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.optimizer: must be one of SGD, Adam, AdamW, got \"adam\"")));
  EXPECT_THAT(DecodeWith("/spec/parallelism/strategy", "Pipeline"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.parallelism.strategy: must be one of Auto, DataParallel, "
                                 "BurstParallel, TickTock, ModelParallelWaves, got \"Pipeline\"")));
  EXPECT_THAT(DecodeWith("/spec/parallelism/gpuCounts", 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.parallelism.gpuCounts: must be one of PowersOfTwo, "
                                 "AllIntegers, got number 2")));
  EXPECT_THAT(DecodeWith("/spec/dataMovement/preload", "maybe"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.dataMovement.preload: must be one of Auto, On, Off, got "
                                 "\"maybe\"")));
  EXPECT_THAT(DecodeWith("/status/phase", "Done"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("status.phase: must be one of Pending, Planned, Placed, Running, "
                                 "Succeeded, Failed, Preempted, Suspended, got \"Done\"")));
  EXPECT_THAT(DecodeWith("/status/conditions/1/status", "true"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("status.conditions[1].status: must be one of True, False, "
                                 "Unknown, got \"true\"")));
}

TEST(TrainingJobJson, SwitchesAcceptBooleansAsOnAndOff) {
  // kubectl's YAML 1.1 reader turns an unquoted `preload: On` into true.
  ASSERT_OK_AND_ASSIGN(TrainingJob job, DecodeWith("/spec/dataMovement/preload", true));
  EXPECT_EQ(job.spec.data_movement.preload, Toggle::kOn);
  ASSERT_OK_AND_ASSIGN(job, DecodeWith("/spec/parallelism/tickTock", false));
  EXPECT_EQ(job.spec.parallelism.tick_tock, Toggle::kOff);
  EXPECT_EQ(ToJson(job)["spec"]["parallelism"]["tickTock"], "Off");
}

TEST(TrainingJobJson, NullMeansAbsent) {
  ASSERT_OK_AND_ASSIGN(TrainingJob job, DecodeWith("/spec/checkpoint", nullptr));
  EXPECT_FALSE(job.spec.checkpoint.path.has_value());
  ASSERT_OK_AND_ASSIGN(job, DecodeWith("/spec/optimizer", nullptr));
  EXPECT_FALSE(job.spec.optimizer.has_value());
}

TEST(TrainingJobJson, ApiVersionAndKindAreChecked) {
  EXPECT_THAT(DecodeWith("/apiVersion", "wavepool.dev/v1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("apiVersion: must be \"wavepool.dev/v1alpha1\", got "
                                 "\"wavepool.dev/v1\"")));
  EXPECT_THAT(DecodeWith("/kind", "GPUNode"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("kind: must be \"TrainingJob\", got \"GPUNode\"")));
  nlohmann::json document = EveryFieldTrainingJob();
  document.erase("kind");
  EXPECT_THAT(TrainingJob::FromJson(document),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("kind: required, must be \"TrainingJob\"")));
  EXPECT_THAT(
      TrainingJob::FromJson(nlohmann::json::array()),
      StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("must be an object, got array")));
}

TEST(TrainingJobJson, ErrorsCarryTheFieldPathAsPayload) {
  absl::StatusOr<TrainingJob> job = DecodeWith("/spec/parallelism/amplificationLimit", "x");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(FieldPathOf(job.status()), "spec.parallelism.amplificationLimit");
}

}  // namespace
}  // namespace wavepool::api
