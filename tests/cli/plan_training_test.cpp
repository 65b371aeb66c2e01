// `wavepool plan`'s training flags and layer table: what lands in the Plan's `training` and
// `layerTable`, the errors that name the flag, and --json documents that api::Validate accepts
// and Plan::FromJson reads back unchanged.
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cli/cli_test_support.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/plan.h"
#include "wavepool/api/validation.h"
#include "wavepool/cli/plan_command.h"

namespace wavepool::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;
using ::wavepool::cli::testing::MakeTestDir;
using ::wavepool::cli::testing::WriteFile;
using ::wavepool::testing::IsOk;

// The mlp_tiny layers as a layer table (docs/planner.md).
constexpr char kMlpTable[] = R"(# a small MLP, layer by layer
name,type,inputs,input_shape,weight_shape,output_shape,attrs
fc1,linear,,64,128x64,128,
relu1,relu,fc1,128,,128,
fc2,linear,relu1,128,10x128,10,
)";

struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

Result RunPlanFlags(PlanFlags flags) {
  std::ostringstream out, err;
  Result result;
  result.status = RunPlan(flags, out, err);
  result.out = out.str();
  result.err = err.str();
  return result;
}

PlanFlags Tiny() {
  PlanFlags flags;
  flags.model = "mlp_tiny";
  flags.gpus = 2;
  flags.global_batch = 16;
  flags.device = "h100";
  flags.json = true;
  return flags;
}

// The --json document, checked as the workers will read it: valid, and the same after
// Plan::FromJson and ToJson.
api::Plan JsonPlan(const PlanFlags& flags) {
  const Result result = RunPlanFlags(flags);
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.err, IsEmpty());
  const nlohmann::json document = nlohmann::json::parse(result.out, nullptr, false);
  EXPECT_FALSE(document.is_discarded()) << result.out;
  absl::StatusOr<api::Plan> plan = api::Plan::FromJson(document);
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return api::Plan();
  EXPECT_THAT(api::Validate(*plan), IsOk());
  EXPECT_EQ(api::ToJson(*plan), document);
  return *plan;
}

TEST(PlanTraining, FlagsLandInThePlansTraining) {
  PlanFlags flags = Tiny();
  flags.optimizer = "adamw";  // any case, as every enum flag
  flags.steps = 1200;
  flags.learning_rate = 3e-4;
  flags.seed = 42;
  flags.checkpoint_interval_steps = 300;
  const api::Plan plan = JsonPlan(flags);
  EXPECT_EQ(plan.training.optimizer, api::Optimizer::kAdamW);
  EXPECT_EQ(plan.training.steps, 1200);
  EXPECT_DOUBLE_EQ(plan.training.learning_rate, 3e-4);
  EXPECT_EQ(plan.training.seed, 42);
  EXPECT_EQ(plan.training.checkpoint_interval_steps, 300);
  EXPECT_DOUBLE_EQ(plan.training.checkpoint_interval_seconds, 0);
  EXPECT_TRUE(plan.layer_table.empty()) << "a built-in model needs no table";
}

TEST(PlanTraining, DefaultsAreSgdAtOneHundredthWithoutStepsOrCheckpoints) {
  const api::Plan plan = JsonPlan(Tiny());
  EXPECT_EQ(plan.training.optimizer, api::Optimizer::kSgd);
  EXPECT_DOUBLE_EQ(plan.training.learning_rate, 0.01);
  EXPECT_EQ(plan.training.steps, 0);
  EXPECT_EQ(plan.training.seed, 0);
  EXPECT_EQ(plan.training.checkpoint_interval_steps, 0);
}

TEST(PlanTraining, LayerTableTextTravelsInThePlan) {
  PlanFlags flags = Tiny();
  flags.model.clear();
  flags.layer_table = WriteFile(MakeTestDir(), "my_mlp.csv", kMlpTable);
  flags.steps = 10;
  const api::Plan plan = JsonPlan(flags);
  EXPECT_EQ(plan.model, "my_mlp");
  EXPECT_EQ(plan.layer_table, kMlpTable);  // byte for byte, comment and all
  EXPECT_EQ(plan.training.steps, 10);
}

TEST(PlanTraining, TheTableAndTextOutputsAreUnchangedByTheTrainingFlags) {
  PlanFlags plain = Tiny();
  plain.json = false;
  PlanFlags trained = plain;
  trained.steps = 5;
  trained.seed = 9;
  trained.learning_rate = 0.5;
  const Result a = RunPlanFlags(plain);
  const Result b = RunPlanFlags(trained);
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(a.out, b.out) << "training settings do not change the plan's decisions";
}

// A rejected run: exit 1, nothing on stdout, one line on stderr naming every part.
void ExpectRejected(const PlanFlags& flags, const std::vector<std::string>& parts) {
  const Result result = RunPlanFlags(flags);
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.out, IsEmpty());
  EXPECT_THAT(result.err, StartsWith("wavepool plan: "));
  for (const std::string& part : parts) EXPECT_THAT(result.err, HasSubstr(part));
}

TEST(PlanTrainingErrors, EachBadValueNamesItsFlag) {
  PlanFlags flags = Tiny();
  flags.steps = -1;
  ExpectRejected(flags, {"--steps", "must be >= 0", "got -1"});
  flags = Tiny();
  flags.seed = -7;
  ExpectRejected(flags, {"--seed", "must be >= 0", "got -7"});
  flags = Tiny();
  flags.checkpoint_interval_steps = -2;
  ExpectRejected(flags, {"--checkpoint-interval-steps", "got -2"});
  for (const double rate : {0.0, -0.1, std::numeric_limits<double>::infinity(),
                            std::numeric_limits<double>::quiet_NaN()}) {
    flags = Tiny();
    flags.learning_rate = rate;
    ExpectRejected(flags, {"--learning-rate", "must be a finite number > 0"});
  }
  flags = Tiny();
  flags.optimizer = "Lion";
  ExpectRejected(flags, {"--optimizer", "SGD, Adam, AdamW", "Lion"});
}

}  // namespace
}  // namespace wavepool::cli
