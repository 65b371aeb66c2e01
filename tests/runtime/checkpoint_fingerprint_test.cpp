// The checkpoint fingerprint (checkpoint_fingerprint.h): a SHA-256 of the model's structure and
// the plan's execution fields, blind to what may change between runs of one job.
#include "wavepool/runtime/checkpoint_fingerprint.h"

#include <openssl/sha.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/planner/layer_table.h"
#include "wavepool/planner/model_builder.h"
#include "wavepool/planner/zoo.h"

namespace wavepool::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

api::Plan TwoStagePlan() {
  api::Plan plan;
  plan.job = "team-a/mlp";
  plan.model = "mlp_tiny";
  plan.device = "a100";
  plan.strategy = api::Strategy::kBurstParallel;
  plan.global_batch_size = 64;
  plan.gpus = 4;
  api::PlanStage first;
  first.index = 0;
  first.layers = {"fc1", "relu1", "fc2", "relu2"};
  first.gpus = 4;
  first.ranks = {0, 1, 2, 3};
  first.per_gpu_batch = 16;
  api::PlanStage second;
  second.index = 1;
  second.layers = {"fc3"};
  second.gpus = 2;
  second.ranks = {0, 1};
  second.per_gpu_batch = 32;
  plan.stages = {first, second};
  api::SyncGroup sync_first;
  sync_first.stage = 0;
  sync_first.ranks = {0, 1, 2, 3};
  api::SyncGroup sync_second;
  sync_second.stage = 1;
  sync_second.ranks = {0, 1};
  plan.sync_groups = {sync_first, sync_second};
  plan.predictions.iteration_seconds = 0.01;
  plan.training.steps = 1000;
  return plan;
}

planner::ModelGraph MlpTiny() {
  absl::StatusOr<planner::ModelGraph> graph = planner::BuiltinModel("mlp_tiny");
  EXPECT_TRUE(graph.ok()) << graph.status();
  return *graph;
}

std::string Fingerprint(const planner::ModelGraph& model, const api::Plan& plan) {
  absl::StatusOr<std::string> fingerprint = CheckpointFingerprint(model, plan);
  EXPECT_TRUE(fingerprint.ok()) << fingerprint.status();
  return fingerprint.ok() ? *fingerprint : std::string();
}

TEST(CheckpointFingerprint, IsTheSha256OfTheCanonicalText) {
  const std::string text = CheckpointFingerprintText(MlpTiny(), TwoStagePlan());
  EXPECT_THAT(text, HasSubstr("strategy BurstParallel\n"));
  EXPECT_THAT(text, HasSubstr("stage 1 layers fc3 ranks 0;1 per_gpu_batch 32\n"));
  EXPECT_THAT(text, HasSubstr("sync_group stage 0 ranks 0;1;2;3\n"));
  EXPECT_THAT(text, HasSubstr("\nfc3,linear,relu2,128,10x128,10,bias=1,1290,,\n"));
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  std::string hex;
  for (unsigned char byte : digest) absl::StrAppendFormat(&hex, "%02x", byte);
  const std::string fingerprint = Fingerprint(MlpTiny(), TwoStagePlan());
  EXPECT_EQ(fingerprint, hex);
  EXPECT_THAT(fingerprint, MatchesRegex("[0-9a-f]{64}"));
  EXPECT_EQ(Fingerprint(MlpTiny(), TwoStagePlan()), fingerprint);  // stable
}

struct PlanChange {
  std::string name;
  std::function<void(api::Plan&)> apply;
};

TEST(CheckpointFingerprint, ChangesWithEveryExecutionField) {
  const std::string base = Fingerprint(MlpTiny(), TwoStagePlan());
  const std::vector<PlanChange> changes = {
      {"strategy", [](api::Plan& p) { p.strategy = api::Strategy::kDataParallel; }},
      {"global batch", [](api::Plan& p) { p.global_batch_size = 128; }},
      {"gpus", [](api::Plan& p) { p.gpus = 8; }},
      {"waves", [](api::Plan& p) { p.waves = 2; }},
      {"wave placement", [](api::Plan& p) { p.wave_placement = api::WavePlacement::kRoundRobin; }},
      {"optimizer", [](api::Plan& p) { p.training.optimizer = api::Optimizer::kAdam; }},
      {"stage layers", [](api::Plan& p) { p.stages[0].layers.pop_back(); }},
      {"stage ranks",
       [](api::Plan& p) {
         p.stages[1].ranks = {2, 3};
       }},
      {"per-GPU batch", [](api::Plan& p) { p.stages[1].per_gpu_batch = 16; }},
      {"sync group ranks", [](api::Plan& p) { p.sync_groups[1].ranks = {0}; }},
      {"sync group stage", [](api::Plan& p) { p.sync_groups[1].stage = 0; }},
  };
  for (const PlanChange& change : changes) {
    api::Plan plan = TwoStagePlan();
    change.apply(plan);
    EXPECT_NE(Fingerprint(MlpTiny(), plan), base) << change.name;
  }
  planner::ModelBuilder builder("mlp_tiny", planner::TensorShape{{64}});
  planner::LayerId x = builder.Linear("fc1", planner::ModelBuilder::kInput, 128);
  x = builder.ReLU("relu1", x);
  x = builder.Linear("fc2", x, 64);  // 128 in mlp_tiny
  x = builder.ReLU("relu2", x);
  builder.Linear("fc3", x, 10);
  absl::StatusOr<planner::ModelGraph> narrower = std::move(builder).Build();
  ASSERT_TRUE(narrower.ok()) << narrower.status();
  EXPECT_NE(Fingerprint(*narrower, TwoStagePlan()), base);
  absl::StatusOr<planner::ModelGraph> cnn = planner::BuiltinModel("cnn_tiny");
  ASSERT_TRUE(cnn.ok()) << cnn.status();
  EXPECT_NE(Fingerprint(*cnn, TwoStagePlan()), base);
}

TEST(CheckpointFingerprint, IgnoresWhatMayChangeBetweenRunsOfOneJob) {
  const std::string base = Fingerprint(MlpTiny(), TwoStagePlan());
  const std::vector<PlanChange> changes = {
      {"job", [](api::Plan& p) { p.job = "team-b/other"; }},
      {"training steps (extending a job)", [](api::Plan& p) { p.training.steps = 5000; }},
      {"learning rate", [](api::Plan& p) { p.training.learning_rate = 0.1; }},
      {"checkpoint interval", [](api::Plan& p) { p.training.checkpoint_interval_steps = 10; }},
      {"predictions", [](api::Plan& p) { p.predictions.iteration_seconds = 7; }},
      {"stage prediction", [](api::Plan& p) { p.stages[0].predicted_seconds = 3; }},
      {"sync bytes and algorithm",
       [](api::Plan& p) {
         p.sync_groups[0].bytes = 99;
         p.sync_groups[0].algorithm = api::CollectiveAlgorithm::kTree;
       }},
      {"device", [](api::Plan& p) { p.device = "h100"; }},
      {"data movement", [](api::Plan& p) { p.data_movement.preload = true; }},
  };
  for (const PlanChange& change : changes) {
    api::Plan plan = TwoStagePlan();
    change.apply(plan);
    EXPECT_EQ(Fingerprint(MlpTiny(), plan), base) << change.name;
  }
  // The same layers with measured times (a re-profiled layer table).
  std::vector<std::string> lines = absl::StrSplit(planner::FormatLayerTable(MlpTiny()), '\n');
  for (std::size_t i = 2; i < lines.size(); ++i) {
    if (!lines[i].empty()) lines[i] += "12.5";
  }
  absl::StatusOr<planner::ModelGraph> measured =
      planner::ParseLayerTable("mlp_tiny", absl::StrJoin(lines, "\n"));
  ASSERT_TRUE(measured.ok()) << measured.status();
  ASSERT_TRUE(measured->layer(0).measured_time_per_sample.has_value());
  EXPECT_EQ(Fingerprint(*measured, TwoStagePlan()), base);
}

}  // namespace
}  // namespace wavepool::runtime
