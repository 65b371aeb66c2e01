// Planning a TrainingJob in the cluster (job_planner.h): the job's spec and the referenced
// ConfigMaps' text become the planner's PlanSources (plan_pipeline.h), which resolves the model,
// compute cost, device and network as `wavepool plan` does and plans. Pure and deterministic.
#include "wavepool/controller/job_planner.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "wavepool/api/defaults.h"
#include "wavepool/api/enums.h"
#include "wavepool/api/validation.h"
#include "wavepool/base/plural.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/controller/placement.h"
#include "wavepool/planner/device.h"
#include "wavepool/planner/plan_pipeline.h"

namespace wavepool::controller {
namespace {

// The GPU families of the planner's catalog (device.h), as the token NVML puts in a model name:
// "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-32GB". A100-80GB parts plan
// as the catalog's 40 GB A100: a plan that fits 40 GB fits 80 GB.
constexpr std::pair<std::string_view, std::string_view> kGpuFamilies[] = {
    {"v100", "v100"}, {"a100", "a100-40gb"}, {"h100", "h100"}, {"h200", "h200"}};

// The lower-cased alphanumeric words of `text` ("NVIDIA A100-SXM4-80GB" -> nvidia a100 sxm4
// 80gb): whole words, so that a GH200 is not taken for an H200.
std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> words(1);
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      words.back().push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else if (!words.back().empty()) {
      words.emplace_back();
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

// "<path>: <the status's message>".
std::string Field(std::string_view path, const absl::Status& status) {
  return absl::StrCat(std::string(path), ": ", status.message());
}

// MakePlan names the request's fields ("gpus: ...", "global batch 4 is smaller ..."); the user
// wrote the job's spec, so its errors name the spec's fields instead.
absl::Status NameSpecField(const absl::Status& status, api::Role role) {
  static constexpr std::pair<std::string_view, std::string_view> kFields[] = {
      {"gpus:", "spec.gpus"},
      {"global batch", "spec.globalBatchSize"},
      {"amplification limit:", "spec.parallelism.amplificationLimit"},
      {"dataset samples:", "spec.datasetSamples"},
      {"tick-tock:", "spec.parallelism.tickTock"},
      {"job:", "metadata"},
  };
  const std::string_view message(status.message().data(), status.message().size());
  for (const auto& [prefix, field] : kFields) {
    if (message.substr(0, prefix.size()) != prefix) continue;
    // A bg job always plans on one GPU: its spec.gpus is not what the planner saw.
    if (field == "spec.gpus" && role == api::Role::kBackground) break;
    return absl::Status(status.code(), Field(field, status));
  }
  return status;
}

// The job's model as the planner's source: spec.model.name, or spec.model.layerTable's text.
absl::StatusOr<planner::ModelSource> ModelSourceOf(const api::ModelSpec& spec,
                                                   const std::optional<std::string>& layer_table) {
  if (spec.name.has_value()) return planner::BuiltinModelSource{*spec.name, "spec.model.name"};
  if (!spec.layer_table.has_value()) {
    return absl::InvalidArgumentError("spec.model: give exactly one of name and layerTable");
  }
  if (!layer_table.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat("spec.model.layerTable: the text of ConfigMap ", spec.layer_table->config_map,
                     " key ", spec.layer_table->key, " was not read"));
  }
  // The model is named after its ConfigMap, the object the user created for it.
  return planner::LayerTableSource{spec.layer_table->config_map, *layer_table,
                                   "spec.model.layerTable"};
}

// The compute cost as `wavepool plan` chooses it: spec.model.profile's text, else the profile
// shipped for this model and device, else the analytical model (mixed precision, as the workers
// train).
absl::StatusOr<planner::ComputeSource> ComputeSourceOf(
    const api::ModelSpec& spec, const std::optional<std::string>& profile_text) {
  if (spec.profile.has_value() && !profile_text.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat("spec.model.profile: the text of ConfigMap ",
                                                      spec.profile->config_map, " key ",
                                                      spec.profile->key, " was not read"));
  }
  planner::ComputeSource source;
  source.precision = planner::Precision::kMixed;
  if (profile_text.has_value()) {
    source.times = planner::MeasuredProfileSource{*profile_text, "spec.model.profile"};
  } else {
    source.times = planner::ShippedProfileSource{"spec.model"};
  }
  return source;
}

absl::StatusOr<planner::PlanRequest> MakeRequest(const api::TrainingJob& job) {
  const api::TrainingJobSpec& spec = job.spec;
  if (!spec.role.has_value() || !spec.global_batch_size.has_value() ||
      (*spec.role == api::Role::kForeground && !spec.gpus.has_value())) {
    return absl::InvalidArgumentError(
        "spec: role, globalBatchSize and (for a Foreground job) gpus must be set");
  }
  planner::PlanRequest r;
  r.job = api::NamespacedName(job.metadata);
  // A bg job runs on one GPU beside the fg jobs (docs/controller.md).
  const std::int64_t gpus = *spec.role == api::Role::kForeground ? *spec.gpus : 1;
  if (gpus < 1 || gpus > (std::int64_t{1} << 16)) {
    return absl::InvalidArgumentError(absl::StrCat("spec.gpus: must be in [1, 65536], got ", gpus));
  }
  r.gpus = static_cast<int>(gpus);
  r.global_batch = *spec.global_batch_size;
  const api::ParallelismSpec& p = spec.parallelism;
  r.amplification_limit = p.amplification_limit.value_or(r.amplification_limit);
  r.gpu_counts = p.gpu_counts.value_or(r.gpu_counts);
  r.strategy = p.strategy.value_or(r.strategy);
  r.tick_tock = p.tick_tock.value_or(r.tick_tock);
  const api::DataMovementSpec& d = spec.data_movement;
  r.cpu_split = d.cpu_split.value_or(r.cpu_split);
  r.preload = d.preload.value_or(r.preload);
  r.weight_compression = d.weight_compression.value_or(r.weight_compression);
  r.optimizer = spec.optimizer.value_or(api::kDefaultOptimizer);
  r.dataset_samples = spec.dataset_samples.value_or(r.dataset_samples);
  return r;
}

// What the planner plans `job` from; `inputs` supply the device and the ConfigMaps' text.
absl::StatusOr<planner::PlanSources> SourcesFor(const api::TrainingJob& job,
                                                const PlanInputs& inputs) {
  WAVEPOOL_ASSIGN_OR_RETURN(planner::ModelSource model,
                            ModelSourceOf(job.spec.model, inputs.layer_table));
  WAVEPOOL_ASSIGN_OR_RETURN(planner::ComputeSource compute,
                            ComputeSourceOf(job.spec.model, inputs.profile));
  WAVEPOOL_ASSIGN_OR_RETURN(planner::PlanRequest request, MakeRequest(job));
  return planner::PlanSources{std::move(model), std::move(compute), inputs.device,
                              planner::DefaultNetworkSource{}, std::move(request)};
}

// "0.125 s", or "8.12 ms" below a tenth of a second, so that small models do not read "0.000 s".
std::string FormatSeconds(double seconds) {
  return seconds >= 0.1 ? absl::StrFormat("%.3f s", seconds)
                        : absl::StrFormat("%.3g ms", seconds * 1e3);
}

// "12.0 GiB", or "310.5 MiB" below one GiB.
std::string FormatBytes(std::int64_t bytes) {
  constexpr double kMiB = 1 << 20;
  const double mib = static_cast<double>(bytes) / kMiB;
  return mib >= 1024 ? absl::StrFormat("%.1f GiB", mib / 1024) : absl::StrFormat("%.1f MiB", mib);
}

std::string Describe(const api::Plan& plan) {
  return absl::StrFormat("%s on %s, %s per iteration, %s per GPU", api::ToString(plan.strategy),
                         Plural(plan.gpus, "GPU"),
                         FormatSeconds(plan.predictions.iteration_seconds),
                         FormatBytes(plan.predictions.memory_per_gpu_bytes));
}

// a x b, or nullopt past the int64 range. REQUIRES: a, b >= 0.
std::optional<std::int64_t> CheckedProduct(std::int64_t a, std::int64_t b) {
  if (b != 0 && a > std::numeric_limits<std::int64_t>::max() / b) return std::nullopt;
  return a * b;
}

// ceil(a / b). REQUIRES: a >= 0, b >= 1.
std::int64_t CeilDiv(std::int64_t a, std::int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// The samples the spec asks for: steps x globalBatchSize, or epochs x datasetSamples.
absl::StatusOr<std::int64_t> SpecSamples(const api::TrainingJobSpec& spec) {
  const std::int64_t batch = spec.global_batch_size.value_or(0);
  if (spec.steps.has_value() == spec.epochs.has_value()) {
    return absl::InvalidArgumentError("spec: must set exactly one of steps or epochs");
  }
  if (spec.steps.has_value()) {
    if (*spec.steps < 1 || batch < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.steps: must be >= 1 with spec.globalBatchSize >= 1, got ", *spec.steps,
                       " and ", batch));
    }
    std::optional<std::int64_t> samples = CheckedProduct(*spec.steps, batch);
    if (!samples) {
      return absl::InvalidArgumentError(absl::StrCat("spec.steps: ", *spec.steps, " steps of ",
                                                     batch, " samples exceed 2^63 samples"));
    }
    return *samples;
  }
  if (!spec.dataset_samples.has_value() || *spec.dataset_samples < 1 || *spec.epochs < 1) {
    return absl::InvalidArgumentError(
        "spec.epochs: must be >= 1, with spec.datasetSamples >= 1 (required with epochs)");
  }
  std::optional<std::int64_t> samples = CheckedProduct(*spec.epochs, *spec.dataset_samples);
  if (!samples) {
    return absl::InvalidArgumentError(absl::StrCat("spec.epochs: ", *spec.epochs, " epochs of ",
                                                   *spec.dataset_samples,
                                                   " samples exceed 2^63 samples"));
  }
  return *samples;
}

JobPlan MakeJobPlan(api::Plan plan) {
  JobPlan out;
  out.summary.strategy = plan.strategy;
  out.summary.predicted_iteration_seconds = plan.predictions.iteration_seconds;
  out.summary.memory_per_gpu_bytes = plan.predictions.memory_per_gpu_bytes;
  for (const api::PlanStage& stage : plan.stages) out.summary.stage_gpus.push_back(stage.gpus);
  out.summary.amplification = plan.predictions.amplification;
  out.memory_per_gpu_bytes = plan.predictions.memory_per_gpu_bytes;
  out.idle_fraction = IdleFraction(plan.predictions, plan.gpus);
  out.description = Describe(plan);
  out.plan = std::move(plan);
  return out;
}

}  // namespace

absl::StatusOr<std::string> DeviceForGpuModel(std::string_view gpu_model) {
  for (const std::string& word : Words(gpu_model)) {
    for (const auto& [family, device] : kGpuFamilies) {
      if (word == family) return std::string(device);
    }
  }
  std::vector<std::string> known;
  for (const planner::DeviceSpec& device : planner::DeviceCatalog()) known.push_back(device.name);
  return absl::NotFoundError(absl::StrCat("GPU model \"", std::string(gpu_model),
                                          "\" is none of the planner's devices (",
                                          absl::StrJoin(known, ", "), ")"));
}

std::string PlanningDevice(const std::vector<api::GpuNode>& nodes, std::string_view fallback) {
  // Models counted first: a cluster has thousands of GPUs of a few models, and every reconcile
  // that plans asks.
  std::map<std::string_view, int> per_model;
  for (const api::GpuNode& node : nodes) {
    for (const api::GpuStatus& gpu : node.status.gpus) ++per_model[gpu.model];
  }
  std::map<std::string, int> count;  // Sorted by name, so the first maximum wins a tie.
  for (const auto& [model, n] : per_model) {
    absl::StatusOr<std::string> device = DeviceForGpuModel(model);
    if (device.ok()) count[*device] += n;
  }
  std::string best(fallback);
  int best_count = 0;
  for (const auto& [device, n] : count) {
    if (n > best_count) {
      best = device;
      best_count = n;
    }
  }
  return best;
}

absl::StatusOr<api::PlanTraining> TrainingFor(const api::TrainingJob& job, const api::Plan& plan) {
  const api::TrainingJobSpec& spec = job.spec;
  api::PlanTraining training;
  training.optimizer = spec.optimizer.value_or(api::kDefaultOptimizer);
  training.learning_rate = spec.learning_rate.value_or(api::kDefaultLearningRate);
  training.seed = 0;
  WAVEPOOL_ASSIGN_OR_RETURN(const std::int64_t samples, SpecSamples(spec));
  // wavelet-tick-tock §3.3.3: a model-parallel-waves step updates every partition once, after
  // one batch of each wave; tick-tock (§3.2.3) updates after every wave's batch.
  const std::int64_t waves_per_step = plan.strategy == api::Strategy::kModelParallelWaves
                                          ? std::max<std::int64_t>(plan.waves, 1)
                                          : 1;
  const std::optional<std::int64_t> per_step =
      CheckedProduct(std::max<std::int64_t>(plan.global_batch_size, 1), waves_per_step);
  if (!per_step) {
    return absl::InvalidArgumentError("spec.globalBatchSize: one step's samples exceed 2^63");
  }
  training.steps = CeilDiv(samples, *per_step);
  if (spec.checkpoint.interval_steps.has_value()) {
    const std::optional<std::int64_t> interval =
        CheckedProduct(std::max<std::int64_t>(*spec.checkpoint.interval_steps, 1),
                       std::max<std::int64_t>(spec.global_batch_size.value_or(1), 1));
    if (!interval) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.checkpoint.intervalSteps: ", *spec.checkpoint.interval_steps,
                       " steps exceed 2^63 samples"));
    }
    training.checkpoint_interval_steps = std::max<std::int64_t>(1, CeilDiv(*interval, *per_step));
  }
  training.checkpoint_interval_seconds = spec.checkpoint.interval_seconds.value_or(0.0);
  training.dataset_samples = spec.dataset_samples.value_or(0);
  return training;
}

absl::StatusOr<JobPlan> PlanJob(const api::TrainingJob& job, const PlanInputs& inputs) {
  WAVEPOOL_ASSIGN_OR_RETURN(planner::PlanSources sources, SourcesFor(job, inputs));
  absl::StatusOr<planner::ResolvedPlan> planned = planner::PlanFromSources(sources);
  if (!planned.ok()) {
    return NameSpecField(planned.status(), job.spec.role.value_or(api::Role::kForeground));
  }
  // plan.layer_table already holds a layer table's text: the workers build the model from the
  // same text the planner read (plan.h).
  api::Plan& plan = planned->report.plan;
  WAVEPOOL_ASSIGN_OR_RETURN(api::PlanTraining training, TrainingFor(job, plan));
  plan.training = training;
  if (absl::Status valid = api::Validate(plan); !valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec: the plan made for this job is invalid: ", valid.message()));
  }
  return MakeJobPlan(std::move(plan));
}

}  // namespace wavepool::controller
