#include "progress_codec.h"

#include "validation_util.h"
#include "wavepool/api/json_codec.h"

namespace wavepool::api {

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path,
                         TrainingProgress* out) {
  ObjectReader reader(value, path);
  reader.Read("step", &out->step);
  reader.Read("samplesPerSecond", &out->samples_per_second);
  reader.Read("iterationSeconds", &out->iteration_seconds);
  reader.Read("foregroundSlowdown", &out->foreground_slowdown);
  return reader.Finish();
}

nlohmann::json EncodeValue(const TrainingProgress& progress) {
  return ObjectWriter()
      .Put("step", progress.step)
      .Put("samplesPerSecond", progress.samples_per_second)
      .Put("iterationSeconds", progress.iteration_seconds)
      .Put("foregroundSlowdown", progress.foreground_slowdown)
      .Take();
}

absl::Status ValidateProgress(const TrainingProgress& progress, const FieldPath& path) {
  WAVEPOOL_RETURN_IF_ERROR(CheckAtLeast(path.Child("step"), progress.step, 0));
  WAVEPOOL_RETURN_IF_ERROR(
      CheckAtLeast(path.Child("samplesPerSecond"), progress.samples_per_second, 0.0));
  WAVEPOOL_RETURN_IF_ERROR(
      CheckAtLeast(path.Child("iterationSeconds"), progress.iteration_seconds, 0.0));
  return CheckAtLeast(path.Child("foregroundSlowdown"), progress.foreground_slowdown, 0.0);
}

}  // namespace wavepool::api
