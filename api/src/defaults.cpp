#include "wavepool/api/defaults.h"

#include <optional>
#include <string>

namespace wavepool::api {
namespace {

template <typename T, typename U>
void Default(std::optional<T>* field, const U& value) {
  if (!field->has_value()) *field = value;
}

}  // namespace

void SetDefaults(TrainingJob* job) {
  if (job->metadata.namespace_.empty()) job->metadata.namespace_ = std::string(kDefaultNamespace);

  TrainingJobSpec& spec = job->spec;
  Default(&spec.optimizer, kDefaultOptimizer);
  Default(&spec.learning_rate, kDefaultLearningRate);
  Default(&spec.parallelism.strategy, kDefaultStrategy);
  Default(&spec.parallelism.amplification_limit, kDefaultAmplificationLimit);
  Default(&spec.parallelism.gpu_counts, kDefaultGpuCounts);
  Default(&spec.parallelism.tick_tock, kDefaultToggle);
  Default(&spec.data_movement.cpu_split, kDefaultToggle);
  Default(&spec.data_movement.preload, kDefaultToggle);
  Default(&spec.data_movement.weight_compression, kDefaultToggle);
  // Only a Foreground job has a slowdown SLO to enforce; giving a Background job these fields
  // would make it invalid.
  if (spec.role == Role::kForeground) {
    Default(&spec.collocation.max_foreground_slowdown, kDefaultMaxForegroundSlowdown);
    Default(&spec.collocation.allow_background, kDefaultAllowBackground);
  }
  Default(&spec.suspend, false);
  Default(&spec.backoff_limit, kDefaultBackoffLimit);
}

}  // namespace wavepool::api
