// `wavepool plan` in-process: RunPlan's text, tables and JSON checked against the plan it made.
#include "wavepool/cli/plan_command.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cli/cli_test_support.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/plan.h"
#include "wavepool/api/validation.h"
#include "wavepool/planner/zoo.h"

namespace wavepool::cli {
namespace {

using ::testing::AllOf;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;
using ::wavepool::cli::testing::FindTable;
using ::wavepool::cli::testing::Lines;
using ::wavepool::cli::testing::LineStartingWith;
using ::wavepool::cli::testing::Table;
using ::wavepool::testing::IsOk;

const std::vector<std::string> kStageColumns = {"stage",     "layers",  "GPUs",  "ranks",
                                                "batch/GPU", "time ms", "after", "beside"};
const std::vector<std::string> kCompareColumns = {"rank",    "strategy",     "model",
                                                  "GPUs",    "iteration ms", "compute ms",
                                                  "comm ms", "memory",       "status"};
const std::vector<std::string> kLayerColumns = {"layer", "kind", "GPUs (burst search)", "work ms",
                                                "transfer ms"};

struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

Result RunFlags(const PlanFlags& flags) {
  std::ostringstream out, err;
  Result result;
  result.status = RunPlan(flags, out, err);
  result.out = out.str();
  result.err = err.str();
  return result;
}

// The README's command: plan --model vgg16 --gpus 8 --global-batch 32 --device a100 --amp-limit 2
PlanFlags Readme() {
  PlanFlags flags;
  flags.model = "vgg16";
  flags.gpus = 8;
  flags.global_batch = 32;
  flags.device = "a100";
  flags.amp_limit = 2;
  return flags;
}

PlanFlags Flags(const std::string& model, int gpus, std::int64_t global_batch,
                const std::string& device) {
  PlanFlags flags;
  flags.model = model;
  flags.gpus = gpus;
  flags.global_batch = global_batch;
  flags.device = device;
  return flags;
}

// The plan the same flags print with --json, read back through the API.
api::Plan JsonPlan(PlanFlags flags) {
  flags.json = true;
  flags.compare = false;
  flags.layers = false;
  const Result result = RunFlags(flags);
  EXPECT_EQ(result.status, 0) << result.err;
  const nlohmann::json document = nlohmann::json::parse(result.out, nullptr, false);
  EXPECT_FALSE(document.is_discarded()) << result.out;
  absl::StatusOr<api::Plan> plan = api::Plan::FromJson(document);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : api::Plan();
}

std::string Ms(double seconds) { return absl::StrFormat("%.3f", seconds * 1e3); }

// The ranks column as it should read: ascending runs, "0-3" or "5" or "0-1,4-5".
std::string ExpectedRanks(const std::vector<std::int64_t>& ranks) {
  std::vector<std::string> runs;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    runs.push_back(j == i ? absl::StrCat(ranks[i]) : absl::StrCat(ranks[i], "-", ranks[j]));
    i = j + 1;
  }
  return absl::StrJoin(runs, ",");
}

std::string SortedJoin(std::vector<std::int64_t> values) {
  std::sort(values.begin(), values.end());
  return absl::StrJoin(values, ",");
}

TEST(PlanCommand, ReadmeCommandSummaryAgreesWithItsPlanDocument) {
  const Result result = RunFlags(Readme());
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.err, IsEmpty());
  const api::Plan plan = JsonPlan(Readme());
  const api::PlanPredictions& p = plan.predictions;
  ASSERT_EQ(plan.gpus, 8);
  ASSERT_EQ(plan.strategy, api::Strategy::kBurstParallel);

  EXPECT_EQ(LineStartingWith(result.out, "vgg16 on"),
            "vgg16 on 8 x a100-40gb (NVIDIA A100-SXM4-40GB), global batch 32, amplification "
            "limit 2.00, GPU counts PowersOfTwo");
  // vgg16 on a100 has a shipped measured profile (data/profiles).
  EXPECT_THAT(LineStartingWith(result.out, "compute cost:"),
              StartsWith("compute cost: measured profile of vgg16 (37 layers; others analytical"));
  EXPECT_EQ(LineStartingWith(result.out, "strategy:"), "strategy: BurstParallel");
  // One iteration time, and the parts it counts (the input copy is hidden behind compute here).
  EXPECT_EQ(LineStartingWith(result.out, "iteration:"),
            absl::StrFormat("iteration: %s ms (%.1f samples/s)", Ms(p.iteration_seconds),
                            p.samples_per_second));
  EXPECT_EQ(LineStartingWith(result.out, "  = compute"),
            absl::StrCat("  = compute ", Ms(p.compute_seconds), " ms + communication ",
                         Ms(p.communication_seconds),
                         " ms + input copy 0.000 ms on the critical "
                         "path"));
  EXPECT_THAT(LineStartingWith(result.out, "  input copy"),
              AllOf(HasSubstr(" ms per iteration (every GPU copying its own samples)"),
                    EndsWith("hidden behind compute by preload")));
  EXPECT_THAT(LineStartingWith(result.out, "  data-parallel on 8 GPUs: "),
              EndsWith(" ms, counted the same way"));
  EXPECT_EQ(LineStartingWith(result.out, "network:"),
            "network: a100-40gb default: 8 GPUs per node at 9 us and 300 GB/s each; 8 NICs per "
            "node at 40 us and 25 GB/s each");
  EXPECT_EQ(LineStartingWith(result.out, "memory per GPU:"),
            absl::StrFormat("memory per GPU: %.1f GiB of 40.0 GiB",
                            static_cast<double>(p.memory_per_gpu_bytes) / (1 << 30)));
  EXPECT_EQ(LineStartingWith(result.out, "GPU time:"),
            absl::StrFormat("GPU time: %s GPU-ms per iteration, %.2fx the one-GPU time",
                            Ms(p.gpu_seconds), p.amplification));
  EXPECT_EQ(LineStartingWith(result.out, "idle for background jobs:"),
            absl::StrFormat("idle for background jobs: %s GPU-ms per iteration (%.0f%% of 8 GPUs)",
                            Ms(p.background_idle_gpu_seconds),
                            100 * p.background_idle_gpu_seconds / (8 * p.iteration_seconds)));
  // Idle time is what the 8 GPUs could do in an iteration minus what the plan keeps them busy:
  // 8 x 15.549 ms - 66.234 GPU-ms = 58.158 GPU-ms with the shipped profile (printed 58.159 from
  // unrounded figures).
  EXPECT_NEAR(p.background_idle_gpu_seconds, 8 * p.iteration_seconds - p.gpu_seconds, 1e-9);
  EXPECT_THAT(LineStartingWith(result.out, "data movement:"),
              StartsWith("data movement: cpu split "));
  EXPECT_THAT(result.out, HasSubstr("\nwhy:\n  - burst-parallel search: "));
}

TEST(PlanCommand, SameFlagsPrintTheSameText) {
  // The planner is deterministic and the report prints no clock, so plans can be diffed.
  EXPECT_EQ(RunFlags(Readme()).out, RunFlags(Readme()).out);
}

// Every stage row agrees with the plan's stage: GPUs, ranks, batch, time and dependencies.
void ExpectStageTableMatchesPlan(const std::string& text, const api::Plan& plan) {
  absl::StatusOr<Table> table = FindTable(text, kStageColumns);
  ASSERT_TRUE(table.ok()) << table.status() << "\n" << text;
  ASSERT_EQ(table->rows.size(), plan.stages.size()) << text;
  for (size_t i = 0; i < plan.stages.size(); ++i) {
    const api::PlanStage& stage = plan.stages[i];
    auto& row = table->rows[i];
    SCOPED_TRACE(absl::StrCat("stage ", i));
    EXPECT_EQ(row["stage"], absl::StrCat(stage.index));
    EXPECT_THAT(row["layers"], StartsWith(stage.layers.front()));
    if (stage.layers.size() > 1) {
      EXPECT_EQ(row["layers"], absl::StrCat(stage.layers.front(), " .. ", stage.layers.back(), " (",
                                            stage.layers.size(), ")"));
    }
    EXPECT_EQ(row["GPUs"], absl::StrCat(stage.gpus));
    EXPECT_EQ(static_cast<std::int64_t>(stage.ranks.size()), stage.gpus);
    EXPECT_EQ(row["ranks"], ExpectedRanks(stage.ranks));
    for (std::int64_t rank : stage.ranks) EXPECT_LT(rank, plan.gpus);
    EXPECT_EQ(row["batch/GPU"], absl::StrCat(stage.per_gpu_batch));
    EXPECT_EQ(row["time ms"], Ms(stage.predicted_seconds));
    EXPECT_EQ(row["after"], SortedJoin(stage.depends_on));
    EXPECT_EQ(row["beside"], SortedJoin(stage.concurrent_with));
    // Every stage trains on the whole global batch, split evenly over its GPUs.
    EXPECT_EQ(stage.per_gpu_batch * stage.gpus, plan.global_batch_size);
  }
}

struct PlanCase {
  std::string model;
  int gpus;
  std::int64_t global_batch;
  std::string device;
};

void PrintTo(const PlanCase& c, std::ostream* os) {
  *os << c.model << " on " << c.gpus << " x " << c.device << ", global batch " << c.global_batch;
}

class PlanCommandStages : public ::testing::TestWithParam<PlanCase> {};

TEST_P(PlanCommandStages, StageTableAndJsonAgreeWithThePlan) {
  const PlanCase& c = GetParam();
  PlanFlags flags = Flags(c.model, c.gpus, c.global_batch, c.device);
  const Result result = RunFlags(flags);
  ASSERT_EQ(result.status, 0) << result.err;
  const api::Plan plan = JsonPlan(flags);
  EXPECT_THAT(api::Validate(plan), IsOk());
  EXPECT_EQ(plan.model, c.model);
  EXPECT_EQ(plan.global_batch_size, c.global_batch);
  EXPECT_LE(plan.gpus, c.gpus);
  ExpectStageTableMatchesPlan(result.out, plan);
  // The summary counts the GPUs the plan uses and says when that is fewer than allowed.
  const std::string allowed =
      plan.gpus < c.gpus ? absl::StrCat(" of ", c.gpus, " allowed") : std::string();
  EXPECT_THAT(result.out, StartsWith(absl::StrCat(c.model, " on ", plan.gpus, " x ")));
  EXPECT_THAT(Lines(result.out).front(), HasSubstr(absl::StrCat(")", allowed, ", global batch ")));
}

INSTANTIATE_TEST_SUITE_P(
    Models, PlanCommandStages,
    ::testing::Values(PlanCase{"vgg16", 8, 32, "a100"}, PlanCase{"resnet50", 16, 96, "v100"},
                      PlanCase{"wide_resnet101_2", 8, 64, "a100"},
                      PlanCase{"inception_v3", 8, 64, "a100"}, PlanCase{"bert_base", 8, 64, "h100"},
                      PlanCase{"mlp_tiny", 4, 64, "h200"}, PlanCase{"cnn_tiny", 8, 96, "v100"},
                      PlanCase{"branchy_tiny", 8, 64, "v100"}),
    [](const ::testing::TestParamInfo<PlanCase>& param) {
      return absl::StrCat(param.param.model, "_", param.param.device);
    });

TEST(PlanCommand, JsonIsAValidPlanDocumentForEveryModelAndDevice) {
  for (const std::string& model : planner::BuiltinModelNames()) {
    for (const std::string device : {"v100", "a100", "h100", "h200"}) {
      SCOPED_TRACE(absl::StrCat(model, " on ", device));
      PlanFlags flags = Flags(model, 8, 64, device);
      flags.json = true;
      flags.steps = 100;
      flags.learning_rate = 0.05;
      flags.seed = 3;
      flags.checkpoint_interval_steps = 25;
      const Result result = RunFlags(flags);
      ASSERT_EQ(result.status, 0) << result.err;
      EXPECT_THAT(result.err, IsEmpty());
      const nlohmann::json document = nlohmann::json::parse(result.out, nullptr, false);
      ASSERT_FALSE(document.is_discarded()) << result.out;
      // FromJson is strict: apiVersion wavepool.dev/v1alpha1, kind Plan, no unknown field.
      ASSERT_OK_AND_ASSIGN(api::Plan plan, api::Plan::FromJson(document));
      EXPECT_THAT(api::Validate(plan), IsOk());
      EXPECT_EQ(api::ToJson(plan), document);  // nothing lost on the way back
      EXPECT_EQ(plan.model, model);
      EXPECT_EQ(plan.global_batch_size, 64);
      EXPECT_EQ(plan.training.steps, 100);
      EXPECT_DOUBLE_EQ(plan.training.learning_rate, 0.05);
      EXPECT_EQ(plan.training.seed, 3);
      EXPECT_EQ(plan.training.checkpoint_interval_steps, 25);
    }
  }
}

TEST(PlanCommand, JsonCarriesTheJobName) {
  PlanFlags flags = Readme();
  flags.job = "research/vgg";
  EXPECT_EQ(JsonPlan(flags).job, "research/vgg");
}

// The --compare table's rows by strategy name.
std::map<std::string, std::map<std::string, std::string>> CompareRows(const std::string& text) {
  std::map<std::string, std::map<std::string, std::string>> rows;
  absl::StatusOr<Table> table = FindTable(text, kCompareColumns);
  EXPECT_TRUE(table.ok()) << table.status() << "\n" << text;
  if (!table.ok()) return rows;
  for (size_t i = 0; i < table->rows.size(); ++i) {
    auto& row = table->rows[i];
    EXPECT_EQ(row["rank"], absl::StrCat(i + 1)) << "ranks are 1, 2, 3, ... in row order";
    EXPECT_TRUE(rows.emplace(row["strategy"], row).second) << "twice: " << row["strategy"];
  }
  return rows;
}

TEST(PlanCommand, CompareRanksEveryStrategy) {
  PlanFlags flags = Readme();
  flags.compare = true;
  const Result result = RunFlags(flags);
  ASSERT_EQ(result.status, 0) << result.err;
  // The plan comes first, unchanged; the comparison follows it.
  EXPECT_THAT(result.out, StartsWith(RunFlags(Readme()).out));
  EXPECT_THAT(result.out, AllOf(HasSubstr("\nstrategies:\n"), HasSubstr("\nParaDL breakdown:\n")));
  const auto rows = CompareRows(result.out);
  for (const char* name : {"burst-parallel", "data-parallel"}) {
    ASSERT_TRUE(rows.count(name)) << name << "\n" << result.out;
    EXPECT_EQ(rows.at(name).at("model"), "burst search");
  }
  for (const char* name :
       {"data", "spatial", "filter", "channel", "pipeline", "data+filter", "data+spatial"}) {
    ASSERT_TRUE(rows.count(name)) << name << "\n" << result.out;
    EXPECT_EQ(rows.at(name).at("model"), "ParaDL");
    EXPECT_EQ(rows.at(name).at("GPUs"), "8");
  }
  EXPECT_EQ(rows.size(), 9u) << "no tick-tock row: a burst-parallel plan is not analysed for it";
  // The burst-parallel row is the plan's own iteration.
  const api::Plan plan = JsonPlan(Readme());
  EXPECT_EQ(rows.at("burst-parallel").at("iteration ms"), Ms(plan.predictions.iteration_seconds));
}

TEST(PlanCommand, CompareRanksRunnableRowsByIterationThenTheRest) {
  // cnn_tiny with 187,500 samples per GPU on a V100: one wave fits (25.0 GiB), two do not (38.6
  // GiB of 31.0 usable), and every ParaDL strategy is out of memory under its own memory model.
  PlanFlags flags = Flags("cnn_tiny", 8, 1'500'000, "v100");
  flags.compare = true;
  const Result result = RunFlags(flags);
  ASSERT_EQ(result.status, 0) << result.err;
  absl::StatusOr<Table> table = FindTable(result.out, kCompareColumns);
  ASSERT_TRUE(table.ok()) << table.status();
  bool seen_one_that_cannot_run = false;
  double previous = 0;
  for (auto& row : table->rows) {
    const bool runs = row["status"] == "ok" || row["status"] == "no gain" ||
                      row["status"] == "recommended" || row["status"] == "double batch fits";
    if (!runs) {
      seen_one_that_cannot_run = true;
      continue;
    }
    EXPECT_FALSE(seen_one_that_cannot_run)
        << row["strategy"] << " ranks after a row that cannot run";
    EXPECT_GE(std::stod(row["iteration ms"]), previous) << row["strategy"];
    previous = std::stod(row["iteration ms"]);
  }
  const auto rows = CompareRows(result.out);
  ASSERT_TRUE(rows.count("tick-tock (2 waves)")) << result.out;
  EXPECT_EQ(rows.at("tick-tock (2 waves)").at("status"), "two waves do not fit");
  EXPECT_GT(std::stoi(rows.at("tick-tock (2 waves)").at("rank")),
            std::stoi(rows.at("data-parallel").at("rank")));
}

TEST(PlanCommand, ModelParallelCompareRowIsThePlansOwnPrediction) {
  PlanFlags flags = Flags("vgg16", 4, 64, "a100");
  flags.strategy = "ModelParallelWaves";
  flags.compare = true;
  const Result result = RunFlags(flags);
  ASSERT_EQ(result.status, 0) << result.err;
  const api::Plan plan = JsonPlan(flags);
  ASSERT_EQ(plan.strategy, api::Strategy::kModelParallelWaves);
  EXPECT_EQ(LineStartingWith(result.out, "strategy:"),
            absl::StrFormat("strategy: ModelParallelWaves, %d waves offset by %.2f of an iteration",
                            plan.waves, plan.wave_offset_fraction));
  const auto rows = CompareRows(result.out);
  const std::string name = absl::StrCat("model-parallel (", plan.waves, " waves)");
  ASSERT_TRUE(rows.count(name)) << result.out;
  EXPECT_EQ(rows.at(name).at("iteration ms"), Ms(plan.predictions.iteration_seconds));
  EXPECT_EQ(rows.at(name).at("compute ms"), Ms(plan.predictions.compute_seconds));
  EXPECT_EQ(rows.at(name).at("comm ms"), Ms(plan.predictions.communication_seconds));
  ExpectStageTableMatchesPlan(result.out, plan);
}

TEST(PlanCommand, TickTockPlanShowsTwoWavesHalfAnIterationApart) {
  // wide_resnet101_2 at 128 samples per V100: two waves fit (25.4 GiB of 31.0 usable).
  PlanFlags flags = Flags("wide_resnet101_2", 8, 1024, "v100");
  flags.strategy = "TickTock";
  flags.compare = true;
  const Result result = RunFlags(flags);
  ASSERT_EQ(result.status, 0) << result.err;
  const api::Plan plan = JsonPlan(flags);
  EXPECT_EQ(plan.strategy, api::Strategy::kTickTock);
  EXPECT_EQ(plan.waves, 2);
  EXPECT_EQ(LineStartingWith(result.out, "strategy:"),
            "strategy: TickTock, 2 waves offset by 0.50 of an iteration");
  EXPECT_THAT(result.out, HasSubstr("  - strategy TickTock was asked for\n"));
  EXPECT_TRUE(CompareRows(result.out).count("tick-tock (2 waves)"));
}

TEST(PlanCommand, LayersListsEveryLayerOnTheGpusOfItsStage) {
  PlanFlags flags = Readme();
  flags.layers = true;
  const Result result = RunFlags(flags);
  ASSERT_EQ(result.status, 0) << result.err;
  absl::StatusOr<Table> table = FindTable(result.out, kLayerColumns);
  ASSERT_TRUE(table.ok()) << table.status() << "\n" << result.out;
  ASSERT_OK_AND_ASSIGN(planner::ModelGraph model, planner::BuiltinModel("vgg16"));
  ASSERT_EQ(table->rows.size(), static_cast<size_t>(model.size()));
  // A burst-parallel plan's stages are the burst search's layers, grouped.
  const api::Plan plan = JsonPlan(Readme());
  std::map<std::string, std::int64_t> stage_gpus;
  for (const api::PlanStage& stage : plan.stages) {
    for (const std::string& layer : stage.layers) stage_gpus[layer] = stage.gpus;
  }
  for (size_t i = 0; i < table->rows.size(); ++i) {
    auto& row = table->rows[i];
    const planner::Layer& layer = model.layers()[i];
    EXPECT_EQ(row["layer"], layer.name);
    EXPECT_EQ(row["kind"], planner::LayerKindName(layer.kind));
    EXPECT_EQ(row["GPUs (burst search)"], absl::StrCat(stage_gpus[layer.name])) << layer.name;
  }
}

TEST(PlanCommand, LayersListsEveryLayerOfABranchyModel) {
  PlanFlags flags = Flags("inception_v3", 8, 64, "a100");
  flags.layers = true;
  const Result result = RunFlags(flags);
  ASSERT_EQ(result.status, 0) << result.err;
  absl::StatusOr<Table> table = FindTable(result.out, kLayerColumns);
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_OK_AND_ASSIGN(planner::ModelGraph model, planner::BuiltinModel("inception_v3"));
  std::vector<std::string> printed, expected;
  for (auto& row : table->rows) printed.push_back(row["layer"]);
  for (const planner::Layer& layer : model.layers()) expected.push_back(layer.name);
  EXPECT_EQ(printed, expected);
}

TEST(PlanCommand, SmallFootprintsPrintInMiB) {
  // mlp_tiny's plan needs well under a GiB: "0.0 GiB" would say nothing.
  const Result result = RunFlags(Flags("mlp_tiny", 8, 8, "a100"));
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(LineStartingWith(result.out, "memory per GPU:"),
              AllOf(HasSubstr(" MiB of 40.0 GiB"), ::testing::Not(HasSubstr(": 0.0 "))));
}

TEST(PlanCommand, ShippedProfileBindsUnderTheZooNameAndItsAlias) {
  // The shipped CSV names wide_resnet101_2 "wrn101_2"; --profile must find it either way.
  for (const std::string model : {"wide_resnet101_2", "wrn101_2"}) {
    PlanFlags flags = Flags(model, 8, 32, "a100");
    flags.profile =
        std::string(WAVEPOOL_SOURCE_DIR) + "/data/profiles/deeppool_a100_layer_profiles.csv";
    const Result result = RunFlags(flags);
    ASSERT_EQ(result.status, 0) << model << ": " << result.err;
    EXPECT_THAT(LineStartingWith(result.out, "compute cost:"),
                StartsWith("compute cost: measured profile of wrn101_2 (39 layers"));
  }
}

TEST(PlanCommand, AnalyticIgnoresTheShippedProfile) {
  PlanFlags flags = Readme();
  flags.analytic = true;
  const Result result = RunFlags(flags);
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(LineStartingWith(result.out, "compute cost:"),
            "compute cost: analytical, a100-40gb, mixed precision");
  flags.precision = "fp32";
  EXPECT_EQ(LineStartingWith(RunFlags(flags).out, "compute cost:"),
            "compute cost: analytical, a100-40gb, fp32");
}

TEST(PlanCommand, GlobalBatchDefaultsToOneSamplePerGpu) {
  PlanFlags flags = Readme();
  flags.global_batch = 0;  // not given
  EXPECT_EQ(JsonPlan(flags).global_batch_size, 8);
}

// Bad input RunPlan finds after parsing: exit 1, nothing on `out`, one line on `err`.
void ExpectRejected(const PlanFlags& flags, const std::vector<std::string>& parts) {
  const Result result = RunFlags(flags);
  EXPECT_EQ(result.status, 1);
  EXPECT_THAT(result.out, IsEmpty());
  EXPECT_THAT(result.err, StartsWith("wavepool plan: "));
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  for (const std::string& part : parts) EXPECT_THAT(result.err, HasSubstr(part));
}

TEST(PlanCommandErrors, NegativeGlobalBatchIsNotSilentlyDefaulted) {
  PlanFlags flags = Readme();
  flags.global_batch = -5;
  ExpectRejected(flags, {"--global-batch", "got -5"});
}

TEST(PlanCommandErrors, JsonWithTheLayerTable) {
  // --json --compare is the comparison document (plan_comparison_test.cpp); the layer table has
  // no document.
  PlanFlags flags = Readme();
  flags.json = true;
  flags.layers = true;
  ExpectRejected(flags, {"--json", "--layers"});
}

TEST(PlanCommandErrors, AnalyticWithAProfile) {
  PlanFlags flags = Readme();
  flags.analytic = true;
  flags.profile = "/nonexistent/profile.csv";
  ExpectRejected(flags, {"--analytic", "--profile"});
}

TEST(PlanCommandErrors, BadValuesNameTheFlagAndWhatIsValid) {
  PlanFlags flags = Readme();
  flags.precision = "bf16";
  ExpectRejected(flags, {"--precision", "mixed, tf32 or fp32", "bf16"});
  flags = Readme();
  flags.optimizer = "Lion";
  ExpectRejected(flags, {"--optimizer", "SGD, Adam, AdamW", "Lion"});
  flags = Readme();
  flags.cpu_split = "sometimes";
  ExpectRejected(flags, {"--cpu-split", "Auto, On, Off", "sometimes"});
  flags = Readme();
  flags.gpus = 0;
  ExpectRejected(flags, {"gpus", "must be in [1, 65536]", "got 0"});
  flags = Readme();
  flags.dataset_samples = 0;
  ExpectRejected(flags, {"dataset samples", "got 0"});
}

// Every file flag takes a regular file: a directory read as an empty table would be reported as
// a table without a header, /dev/zero would be read until memory runs out, and a FIFO without a
// writer would block the open forever.
TEST(PlanCommandErrors, FileFlagsRefuseWhatIsNotARegularFile) {
  const std::string dir = ::wavepool::cli::testing::MakeTestDir();
  const std::string fifo = dir + "/table.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  for (const std::string& path : {dir, std::string("/dev/zero"), fifo}) {
    PlanFlags table = Readme();
    table.model.clear();
    table.layer_table = path;
    ExpectRejected(table, {path, "not a regular file"});
    PlanFlags profile = Readme();
    profile.profile = path;
    ExpectRejected(profile, {path, "not a regular file"});
    PlanFlags network = Readme();
    network.network = path;
    ExpectRejected(network, {path, "not a regular file"});
  }
}

TEST(PlanCommandErrors, EnumFlagsAcceptAnyCase) {
  PlanFlags flags = Readme();
  flags.strategy = "dataparallel";
  flags.gpu_counts = "allintegers";
  flags.tick_tock = "off";
  const Result result = RunFlags(flags);
  ASSERT_EQ(result.status, 0) << result.err;
  EXPECT_EQ(LineStartingWith(result.out, "strategy:"), "strategy: DataParallel");
  EXPECT_THAT(Lines(result.out).front(), HasSubstr("GPU counts AllIntegers"));
}

}  // namespace
}  // namespace wavepool::cli
