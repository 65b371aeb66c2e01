#include "wavepool/cli/plan_command.h"

#include <cmath>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "model_loading.h"
#include "plan_comparison.h"
#include "plan_report.h"
#include "wavepool/api/enums.h"
#include "wavepool/api/plan.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/planner/comm.h"
#include "wavepool/planner/plan_pipeline.h"

namespace wavepool::cli {
namespace {

// An API enum from a flag, case-insensitively ("auto" and "Auto" both work on the command line).
template <typename E>
absl::StatusOr<E> ParseFlag(const std::string& flag, const std::string& value) {
  const std::string names = api::EnumNames<E>();  // "Auto, On, Off"
  for (absl::string_view name : absl::StrSplit(names, ", ")) {
    if (absl::AsciiStrToLower(name) == absl::AsciiStrToLower(value)) {
      return *api::ParseEnum<E>(std::string_view(name.data(), name.size()));
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, ": must be one of ", names, ", got \"", value, "\""));
}

absl::StatusOr<planner::PlanRequest> MakeRequest(const PlanFlags& flags) {
  // 0 is PlanFlags' "not given"; a negative batch is a mistake, not a request for the default.
  if (flags.global_batch < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--global-batch: must be >= 1 (or 0 for --gpus), got ", flags.global_batch));
  }
  planner::PlanRequest r;
  r.job = flags.job;
  r.gpus = flags.gpus;
  r.global_batch = flags.global_batch > 0 ? flags.global_batch : flags.gpus;
  r.amplification_limit = flags.amp_limit;
  r.dataset_samples = flags.dataset_samples;
  absl::StatusOr<api::GpuCounts> counts = ParseFlag<api::GpuCounts>("gpu-counts", flags.gpu_counts);
  absl::StatusOr<api::Strategy> strategy = ParseFlag<api::Strategy>("strategy", flags.strategy);
  absl::StatusOr<api::Toggle> tick_tock = ParseFlag<api::Toggle>("tick-tock", flags.tick_tock);
  absl::StatusOr<api::Toggle> split = ParseFlag<api::Toggle>("cpu-split", flags.cpu_split);
  absl::StatusOr<api::Toggle> preload = ParseFlag<api::Toggle>("preload", flags.preload);
  absl::StatusOr<api::Toggle> compression =
      ParseFlag<api::Toggle>("weight-compression", flags.weight_compression);
  absl::StatusOr<api::Optimizer> optimizer =
      ParseFlag<api::Optimizer>("optimizer", flags.optimizer);
  for (const absl::Status& s :
       {counts.status(), strategy.status(), tick_tock.status(), split.status(), preload.status(),
        compression.status(), optimizer.status()}) {
    WAVEPOOL_RETURN_IF_ERROR(s);
  }
  r.gpu_counts = *counts;
  r.strategy = *strategy;
  r.tick_tock = *tick_tock;
  r.cpu_split = *split;
  r.preload = *preload;
  r.weight_compression = *compression;
  r.optimizer = *optimizer;
  return r;
}

absl::Status AtLeastZero(std::string_view flag, std::int64_t value) {
  if (value >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--", std::string(flag), ": must be >= 0, got ", value));
}

// The Plan's `training` from --optimizer, --learning-rate, --steps, --seed and
// --checkpoint-interval-steps; each error names its flag (api::Validate would name the Plan's
// field instead).
absl::StatusOr<api::PlanTraining> MakeTraining(const PlanFlags& flags) {
  WAVEPOOL_ASSIGN_OR_RETURN(api::Optimizer optimizer,
                            ParseFlag<api::Optimizer>("optimizer", flags.optimizer));
  if (!(flags.learning_rate > 0) || !std::isfinite(flags.learning_rate)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--learning-rate: must be a finite number > 0, got ", flags.learning_rate));
  }
  for (const absl::Status& s :
       {AtLeastZero("steps", flags.steps), AtLeastZero("seed", flags.seed),
        AtLeastZero("checkpoint-interval-steps", flags.checkpoint_interval_steps)}) {
    WAVEPOOL_RETURN_IF_ERROR(s);
  }
  api::PlanTraining training;
  training.optimizer = optimizer;
  training.learning_rate = flags.learning_rate;
  training.steps = flags.steps;
  training.seed = flags.seed;
  training.checkpoint_interval_steps = flags.checkpoint_interval_steps;
  return training;
}

// What the flags ask the planner to plan, the files they name read.
absl::StatusOr<planner::PlanSources> SourcesFor(const PlanFlags& flags) {
  WAVEPOOL_ASSIGN_OR_RETURN(planner::ModelSource model, ModelSourceFor(flags));
  WAVEPOOL_ASSIGN_OR_RETURN(planner::ComputeSource compute, ComputeSourceFor(flags));
  WAVEPOOL_ASSIGN_OR_RETURN(planner::NetworkSource network, NetworkSourceFor(flags));
  WAVEPOOL_ASSIGN_OR_RETURN(planner::PlanRequest request, MakeRequest(flags));
  return planner::PlanSources{std::move(model), std::move(compute), flags.device,
                              std::move(network), std::move(request)};
}

// The planned job as --json, --compare and --layers ask for it.
std::string Format(const PlanFlags& flags, const planner::ResolvedPlan& planned,
                   api::Strategy asked) {
  const planner::PlanReport& report = planned.report;
  if (flags.json && flags.compare) {
    return ComparisonJson(report, asked, planned.device).dump(2) + "\n";
  }
  if (flags.json) return api::ToJson(report.plan).dump(2) + "\n";
  std::string out =
      FormatPlan(report, planned.model, planned.device, planned.network, flags.gpus, flags.layers);
  if (flags.compare) {
    absl::StrAppend(&out, "\nstrategies:\n", FormatComparison(report, asked, planned.device));
  }
  return out;
}

absl::StatusOr<std::string> Plan(const PlanFlags& flags) {
  // --json prints only documents; dropping the layer table silently would hide a mistake.
  if (flags.json && flags.layers) {
    return absl::InvalidArgumentError(
        "--json prints the Plan document (with --compare, the comparison document); drop "
        "--layers");
  }
  WAVEPOOL_ASSIGN_OR_RETURN(api::PlanTraining training, MakeTraining(flags));
  WAVEPOOL_ASSIGN_OR_RETURN(planner::PlanSources sources, SourcesFor(flags));
  WAVEPOOL_ASSIGN_OR_RETURN(planner::ResolvedPlan planned, planner::PlanFromSources(sources));
  planned.report.plan.training = training;
  return Format(flags, planned, sources.request.strategy);
}

}  // namespace

CLI::App* AddPlanCommand(CLI::App* app, PlanFlags* flags) {
  CLI::App* plan = app->add_subcommand(
      "plan", "Plan how a model trains on GPUs: burst-parallel, data-parallel, tick-tock");
  plan->add_option("--model", flags->model, "Built-in model (vgg16, resnet50, ...)");
  plan->add_option("--layer-table", flags->layer_table, "Model described layer by layer (CSV)");
  plan->add_option("--profile", flags->profile, "Measured per-layer profile (CSV)");
  plan->add_flag("--analytic", flags->analytic, "Use the analytical cost model, not a profile");
  plan->add_option("--precision", flags->precision,
                   "Analytical model precision: mixed, tf32 or fp32")
      ->capture_default_str();
  plan->add_option("--device", flags->device, "GPU: v100, a100, h100, h200")->capture_default_str();
  plan->add_option(
      "--network", flags->network,
      absl::StrCat("Network: a preset (", absl::StrJoin(planner::NetworkPresetNames(), ", "),
                   "; default: the device's) or a JSON or YAML file"));
  plan->add_option("--gpus", flags->gpus, "GPUs the job may use")->capture_default_str();
  plan->add_option("--global-batch", flags->global_batch,
                   "Samples per iteration (default, or 0: --gpus)");
  plan->add_option("--amp-limit", flags->amp_limit, "GPU-time amplification limit per layer")
      ->capture_default_str();
  plan->add_option("--gpu-counts", flags->gpu_counts, "PowersOfTwo or AllIntegers")
      ->capture_default_str();
  plan->add_option("--strategy", flags->strategy,
                   "Auto, DataParallel, BurstParallel, TickTock, ModelParallelWaves")
      ->capture_default_str();
  plan->add_option("--tick-tock", flags->tick_tock, "Auto, On, Off")->capture_default_str();
  plan->add_option("--cpu-split", flags->cpu_split, "Auto, On, Off")->capture_default_str();
  plan->add_option("--preload", flags->preload, "Auto, On, Off")->capture_default_str();
  plan->add_option("--weight-compression", flags->weight_compression, "Auto, On, Off")
      ->capture_default_str();
  plan->add_option("--optimizer", flags->optimizer, "SGD, Adam, AdamW")->capture_default_str();
  plan->add_option("--dataset-samples", flags->dataset_samples, "Samples per epoch")
      ->capture_default_str();
  plan->add_option("--steps", flags->steps, "Optimizer steps the workers run (0: not given)")
      ->capture_default_str();
  plan->add_option("--learning-rate", flags->learning_rate, "Learning rate (> 0)")
      ->capture_default_str();
  plan->add_option("--seed", flags->seed, "Seed of the weights, data and sample order")
      ->capture_default_str();
  plan->add_option("--checkpoint-interval-steps", flags->checkpoint_interval_steps,
                   "Checkpoint every N steps (0: never)")
      ->capture_default_str();
  plan->add_option("--job", flags->job, "namespace/name written into the plan");
  plan->add_flag("--compare", flags->compare,
                 "Rank every strategy, and say why the plan wins over faster ones");
  plan->add_flag("--json", flags->json,
                 "Print the Plan document (with --compare: every figure of the comparison)");
  plan->add_flag("--layers", flags->layers, "Also list every layer's GPUs");
  return plan;
}

int RunPlan(const PlanFlags& flags, std::ostream& out, std::ostream& err) {
  absl::StatusOr<std::string> text = Plan(flags);
  if (!text.ok()) {
    err << "wavepool plan: " << text.status().message() << "\n";
    return 1;
  }
  out << *text;
  return 0;
}

}  // namespace wavepool::cli
