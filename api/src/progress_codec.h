// JSON and validation of TrainingProgress, shared by TrainingJob status and GPUNode tasks.
#ifndef WAVEPOOL_API_SRC_PROGRESS_CODEC_H_
#define WAVEPOOL_API_SRC_PROGRESS_CODEC_H_

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "wavepool/api/field_path.h"
#include "wavepool/api/progress.h"

namespace wavepool::api {

absl::Status DecodeValue(const nlohmann::json& value, const FieldPath& path,
                         TrainingProgress* out);
nlohmann::json EncodeValue(const TrainingProgress& progress);
// Every field >= 0.
absl::Status ValidateProgress(const TrainingProgress& progress, const FieldPath& path);

}  // namespace wavepool::api

#endif  // WAVEPOOL_API_SRC_PROGRESS_CODEC_H_
