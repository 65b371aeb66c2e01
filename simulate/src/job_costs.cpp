// The plan cache (job_costs.h): each request becomes the TrainingJob a user would write, planned by
// the controller's PlanJob, and is reduced to the predictions the simulation needs.
#include "wavepool/simulate/job_costs.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "wavepool/api/defaults.h"
#include "wavepool/api/training_job.h"
#include "wavepool/api/validation.h"
#include "wavepool/base/plural.h"
#include "wavepool/controller/job_planner.h"
#include "wavepool/controller/placement.h"

namespace wavepool::simulate {
namespace {

// The TrainingJob of `key`: a built-in model, one step (the simulation counts steps itself),
// tick-tock off so that an iteration trains exactly one global batch.
api::TrainingJob JobFor(const CostKey& key, double amplification_limit) {
  api::TrainingJob job;
  job.metadata.namespace_ = "simulate";
  job.metadata.name = "job";
  job.spec.role = key.role;
  job.spec.model.name = key.model;
  job.spec.global_batch_size = key.global_batch;
  job.spec.gpus = key.gpus;
  job.spec.steps = 1;
  job.spec.parallelism.strategy = key.strategy;
  job.spec.parallelism.amplification_limit = amplification_limit;
  job.spec.parallelism.tick_tock = api::Toggle::kOff;
  if (key.role == api::Role::kBackground) job.spec.checkpoint.path = "/checkpoints/job";
  api::SetDefaults(&job);
  return job;
}

std::string Describe(const CostKey& key) {
  return absl::StrFormat("%s on %s, batch %d, %s", key.model, Plural(key.gpus, "GPU"),
                         key.global_batch, api::ToString(key.strategy));
}

JobCost CostOf(const controller::JobPlan& planned) {
  const api::Plan& plan = planned.plan;
  JobCost cost;
  cost.strategy = plan.strategy;
  cost.gpus = plan.gpus;
  cost.iteration_seconds = plan.predictions.iteration_seconds;
  cost.samples_per_iteration = plan.global_batch_size * plan.waves;
  cost.idle_fraction = planned.idle_fraction;
  std::int64_t layer_gpus = 0;
  for (const api::PlanStage& stage : plan.stages) {
    layer_gpus += stage.gpus * static_cast<std::int64_t>(stage.layers.size());
  }
  const double busy = plan.predictions.gpu_seconds > 0
                          ? plan.predictions.gpu_seconds
                          : plan.predictions.iteration_seconds * static_cast<double>(plan.gpus);
  cost.layer_seconds = busy / static_cast<double>(std::max<std::int64_t>(1, layer_gpus));
  cost.memory_per_gpu_bytes = planned.memory_per_gpu_bytes;
  cost.description = planned.description;
  return cost;
}

}  // namespace

PlanCache::PlanCache(std::string device, double amplification_limit)
    : device_(std::move(device)), amplification_limit_(amplification_limit) {}

absl::StatusOr<const JobCost*> PlanCache::Get(const CostKey& key) {
  if (auto it = costs_.find(key); it != costs_.end()) return it->second.get();
  const api::TrainingJob job = JobFor(key, amplification_limit_);
  absl::Status status = api::Validate(job);
  absl::StatusOr<controller::JobPlan> planned =
      status.ok() ? controller::PlanJob(job, {device_, std::nullopt, std::nullopt}) : status;
  if (!planned.ok()) {
    return absl::Status(planned.status().code(),
                        absl::StrCat(Describe(key), ": ", planned.status().message()));
  }
  if (!(planned->plan.predictions.iteration_seconds > 0)) {
    return absl::FailedPreconditionError(
        absl::StrCat(Describe(key), ": the plan predicts no iteration time"));
  }
  auto cost = std::make_unique<JobCost>(CostOf(*planned));
  const JobCost* out = cost.get();
  costs_.emplace(key, std::move(cost));
  return out;
}

}  // namespace wavepool::simulate
