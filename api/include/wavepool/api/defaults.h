// Defaulting of TrainingJob, as Kubernetes API defaulting does it: a separate, explicit step
// between decoding and validation. Decoding never invents a value; SetDefaults fills every
// unset field that has a default, and nothing else.
//
//   field                                   default
//   metadata.namespace                      "default"
//   spec.optimizer                          SGD
//   spec.learningRate                       0.01
//   spec.parallelism.strategy               Auto
//   spec.parallelism.amplificationLimit     2.0
//   spec.parallelism.gpuCounts              PowersOfTwo
//   spec.parallelism.tickTock               Auto
//   spec.dataMovement.{cpuSplit,preload,weightCompression}   Auto
//   spec.collocation.maxForegroundSlowdown  1.10   (Foreground jobs only)
//   spec.collocation.allowBackground        true   (Foreground jobs only)
//   spec.suspend                            false
//   spec.backoffLimit                       6
//
// The role-dependent collocation defaults cannot be expressed in a CRD schema; the controller
// applies them by calling SetDefaults. Every other default is also in the CRD.
#ifndef WAVEPOOL_API_DEFAULTS_H_
#define WAVEPOOL_API_DEFAULTS_H_

#include <cstdint>
#include <string_view>

#include "wavepool/api/training_job.h"

namespace wavepool::api {

inline constexpr std::string_view kDefaultNamespace = "default";
inline constexpr Optimizer kDefaultOptimizer = Optimizer::kSgd;
inline constexpr double kDefaultLearningRate = 0.01;
inline constexpr Strategy kDefaultStrategy = Strategy::kAuto;
// deeppool-burst-parallel §4: a layer may use at most this many times its one-GPU GPU-seconds.
inline constexpr double kDefaultAmplificationLimit = 2.0;
inline constexpr GpuCounts kDefaultGpuCounts = GpuCounts::kPowersOfTwo;
inline constexpr Toggle kDefaultToggle = Toggle::kAuto;
// deeppool-burst-parallel §5: background work may slow the foreground by at most 10 %.
inline constexpr double kDefaultMaxForegroundSlowdown = 1.10;
inline constexpr bool kDefaultAllowBackground = true;
inline constexpr std::int64_t kDefaultBackoffLimit = 6;  // batch/v1 Job's default

// Fills the unset defaulted fields of *job. Idempotent; never overwrites a set field and never
// fails: values are checked afterwards by Validate.
// REQUIRES: job != nullptr.
void SetDefaults(TrainingJob* job);

}  // namespace wavepool::api

#endif  // WAVEPOOL_API_DEFAULTS_H_
