// `wavepool plan --compare` in-process: every row counted as it says, exactly one row is the plan,
// every faster row says why the plan was chosen over it, and --json gives every figure exactly.
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/cli/cli_test_support.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/plan.h"
#include "wavepool/cli/plan_command.h"

namespace wavepool::cli {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;
using ::wavepool::cli::testing::LineStartingWith;

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

PlanFlags Flags(const std::string& model, int gpus, std::int64_t global_batch,
                const std::string& device) {
  PlanFlags flags;
  flags.model = model;
  flags.gpus = gpus;
  flags.global_batch = global_batch;
  flags.device = device;
  return flags;
}

nlohmann::json CompareJson(PlanFlags flags) {
  flags.compare = true;
  flags.json = true;
  const Result result = RunFlags(flags);
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_THAT(result.err, IsEmpty());
  nlohmann::json document = nlohmann::json::parse(result.out, nullptr, false);
  EXPECT_FALSE(document.is_discarded()) << result.out;
  return document;
}

TEST(PlanComparisonJson, EveryFigureAtFullPrecision) {
  const nlohmann::json document = CompareJson(Flags("vgg16", 8, 32, "a100"));
  ASSERT_TRUE(document.contains("plan") && document.contains("strategies") &&
              document.contains("paradl") && document.contains("decisions"))
      << document.dump(2);
  ASSERT_OK_AND_ASSIGN(const api::Plan plan, api::Plan::FromJson(document["plan"]));
  const nlohmann::json& rows = document["strategies"];
  ASSERT_EQ(rows.size(), 9u);
  int plans = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const nlohmann::json& row = rows[i];
    EXPECT_EQ(row["rank"], i + 1);
    EXPECT_TRUE(row["iterationSeconds"].is_number_float());
    if (!row["isPlan"].get<bool>()) continue;
    ++plans;
    // The plan's row holds the plan's own figures, bit for bit.
    EXPECT_EQ(row["strategy"], "burst-parallel");
    EXPECT_EQ(row["iterationSeconds"].get<double>(), plan.predictions.iteration_seconds);
    EXPECT_EQ(row["computeSeconds"].get<double>(), plan.predictions.compute_seconds);
    EXPECT_EQ(row["gpuSeconds"].get<double>(), plan.predictions.gpu_seconds);
    EXPECT_EQ(row["memoryPerGpuBytes"].get<double>(),
              static_cast<double>(plan.predictions.memory_per_gpu_bytes));
    EXPECT_TRUE(row["whyNot"].is_null());
  }
  EXPECT_EQ(plans, 1);
  // Every ParaDL prediction, with its parts and memory.
  ASSERT_EQ(document["paradl"].size(), 7u);
  for (const nlohmann::json& p : document["paradl"]) {
    if (!p["feasible"].get<bool>()) continue;
    double parts = 0;
    for (const nlohmann::json& part : p["communicationParts"])
      parts += part["seconds"].get<double>();
    EXPECT_NEAR(parts, p["communicationSeconds"].get<double>(), 1e-15) << p["strategy"];
    EXPECT_EQ(p["memory"]["totalBytes"].get<std::int64_t>(),
              p["memory"]["activationsBytes"].get<std::int64_t>() +
                  p["memory"]["weightsBytes"].get<std::int64_t>() +
                  p["memory"]["gradientsBytes"].get<std::int64_t>() +
                  p["memory"]["optimizerStateBytes"].get<std::int64_t>());
  }
}

TEST(PlanComparison, EveryFasterRowSaysWhyThePlanWins) {
  // vgg16 on 8 A100s: ParaDL's spatial, data+spatial and data rows and the burst search's
  // data-parallel row are faster than the burst-parallel plan.
  const nlohmann::json document = CompareJson(Flags("vgg16", 8, 32, "a100"));
  double plan_iteration = 0;
  for (const nlohmann::json& row : document["strategies"]) {
    if (row["isPlan"].get<bool>()) plan_iteration = row["iterationSeconds"].get<double>();
  }
  int faster = 0;
  for (const nlohmann::json& row : document["strategies"]) {
    const bool is_faster = !row["isPlan"].get<bool>() && !row["gpuSeconds"].is_null() &&
                           row["iterationSeconds"].get<double>() < plan_iteration;
    EXPECT_EQ(is_faster, row["whyNot"].is_string()) << row.dump();
    if (!is_faster) continue;
    ++faster;
    const std::string why = row["whyNot"];
    if (row["model"] == "ParaDL") {
      EXPECT_THAT(why, AllOf(HasSubstr("the ParaDL oracle's estimate under its own cost model"),
                             HasSubstr("keeps all 8 GPUs busy"), HasSubstr("the plan leaves ")));
    } else {
      EXPECT_EQ(row["strategy"], "data-parallel");
      EXPECT_THAT(why, AllOf(HasSubstr("beyond the amplification limit of 2.00x per layer"),
                             HasSubstr("GPU-ms per iteration to background jobs")));
    }
  }
  EXPECT_GE(faster, 2);
  PlanFlags flags = Flags("vgg16", 8, 32, "a100");
  flags.compare = true;
  const Result text = RunFlags(flags);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_THAT(text.out, AllOf(HasSubstr("\nwhat the figures count:\n  iteration: "),
                              HasSubstr("\n  memory: burst search and wavelet rows as the plan's "
                                        "own"),
                              HasSubstr("; why not the faster rows:\n  - rank 1 ")));
  EXPECT_THAT(LineStartingWith(text.out, "the plan is rank "), HasSubstr("(burst-parallel)"));
}

TEST(PlanComparison, AStrategyAskedForIsTheReason) {
  PlanFlags flags = Flags("vgg16", 8, 32, "a100");
  flags.strategy = "ModelParallelWaves";
  const nlohmann::json document = CompareJson(flags);
  for (const nlohmann::json& row : document["strategies"]) {
    if (row["whyNot"].is_string() && row["runs"].get<bool>()) {
      EXPECT_EQ(row["whyNot"], "strategy ModelParallelWaves was asked for") << row.dump();
    }
    if (row["isPlan"].get<bool>()) {
      EXPECT_THAT(row["strategy"], StartsWith("model-parallel ("));
    }
  }
}

TEST(PlanComparison, BurstRowsShowTheirMemoryAsThePlanCountsIt) {
  const nlohmann::json document = CompareJson(Flags("resnet50", 16, 96, "v100"));
  ASSERT_OK_AND_ASSIGN(const api::Plan plan, api::Plan::FromJson(document["plan"]));
  for (const nlohmann::json& row : document["strategies"]) {
    if (row["model"] != "burst search") continue;
    EXPECT_TRUE(row["memoryPerGpuBytes"].is_number()) << row.dump();
    EXPECT_EQ(row["status"], "ok");
    EXPECT_NEAR(row["computeSeconds"].get<double>() + row["communicationSeconds"].get<double>(),
                row["iterationSeconds"].get<double>(), 1e-15);
  }
}

}  // namespace
}  // namespace wavepool::cli
