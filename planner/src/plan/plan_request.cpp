// Checks of a PlanRequest and the optimizer mapping (planner.h, plan_request.h).
#include "plan/plan_request.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "wavepool/api/object_key.h"
#include "wavepool/api/validation.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::planner {
namespace {

// Bounds that keep every product of sizes and times in 64-bit integers.
constexpr int kMaxGpus = 1 << 16;
constexpr std::int64_t kMaxGlobalBatch = std::int64_t{1} << 31;
// The most bytes a job's activations at the global batch and its parameter state may come to:
// the planner multiplies them by up to 2 (tick-tock's doubled batch) and adds them in 64-bit
// integers. 1 EiB is over a hundred times what 65536 GPUs of 141 GB hold, so a model this large
// could never be planned to fit anyway.
constexpr double kMaxJobBytes = static_cast<double>(std::int64_t{1} << 60);

absl::Status ValidateJobName(const std::string& job) {
  if (job.empty()) return absl::OkStatus();
  const absl::StatusOr<api::ObjectKey> key = api::ObjectKey::Parse(job);
  if (!key.ok() || !api::IsDns1123Label(key->namespace_) || !api::IsDns1123Subdomain(key->name)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "job: must be namespace/name (a DNS-1123 label, a slash, a DNS-1123 subdomain), got \"",
        job, "\""));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateRequest(const PlanRequest& r) {
  if (r.gpus < 1 || r.gpus > kMaxGpus) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpus: must be in [1, ", kMaxGpus, "], got ", r.gpus));
  }
  if (r.global_batch > kMaxGlobalBatch) {
    return absl::InvalidArgumentError(
        absl::StrCat("global batch: must be <= ", kMaxGlobalBatch, ", got ", r.global_batch));
  }
  WAVEPOOL_RETURN_IF_ERROR(ValidateJobName(r.job));
  if (r.global_batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("global batch: must be >= 1, got ", r.global_batch));
  }
  if (r.global_batch < r.gpus) {
    return absl::FailedPreconditionError(
        absl::StrCat("global batch ", r.global_batch, " is smaller than the ", r.gpus,
                     " GPUs: every GPU needs at least one sample (use at most ", r.global_batch,
                     " GPUs or a global batch of at least ", r.gpus, ")"));
  }
  if (!(r.amplification_limit >= 1.0) || !std::isfinite(r.amplification_limit)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "amplification limit: must be a finite number >= 1.0, got ", r.amplification_limit));
  }
  if (r.dataset_samples < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset samples: must be >= 1, got ", r.dataset_samples));
  }
  return absl::OkStatus();
}

absl::Status ValidateJobSize(const ModelGraph& model, const PlanRequest& r) {
  // In doubles: the sums themselves may pass 2^63.
  double activations = static_cast<double>(model.input_shape().Elements());
  for (const Layer& layer : model.layers()) {
    activations += static_cast<double>(layer.output.Elements());
  }
  activations *= static_cast<double>(kBytesPerItem) * static_cast<double>(r.global_batch);
  // Weights, gradients and the optimizer's moments.
  const double state = static_cast<double>(model.TotalParams()) *
                       static_cast<double>(kBytesPerItem) * (2 + OptimizerMoments(r.optimizer));
  if (activations + state <= kMaxJobBytes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "model %s at a global batch of %d: %.3g bytes of activations and %.3g bytes of weights, "
      "gradients and optimizer state, more than the %.3g bytes (1 EiB) the planner counts, and "
      "far more than any cluster's GPUs hold",
      model.name(), r.global_batch, activations, state, kMaxJobBytes));
}

int OptimizerMoments(api::Optimizer optimizer) {
  switch (optimizer) {
    case api::Optimizer::kSgd:
      return 1;  // the momentum buffer
    case api::Optimizer::kAdam:
    case api::Optimizer::kAdamW:
      return 2;  // first and second moments
  }
  return 2;  // Only a cast of an out-of-range integer gets here: count the larger state.
}

}  // namespace wavepool::planner
