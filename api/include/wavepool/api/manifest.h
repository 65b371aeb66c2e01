// Reading API objects from manifest text: the files users `kubectl apply` or `wavepool run`,
// YAML or JSON, possibly several documents separated by `---` lines.
//
// Errors name the document (1-based, counting empty documents too) and, for YAML, the line of
// the offending field: `document 2 (line 14): spec.gpus: must be an integer, got string "eight"`.
// Empty documents are skipped. All functions are thread-safe.
#ifndef WAVEPOOL_API_MANIFEST_H_
#define WAVEPOOL_API_MANIFEST_H_

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/api/gpu_node.h"
#include "wavepool/api/plan.h"
#include "wavepool/api/training_job.h"

namespace wavepool::api {

// Every TrainingJob in `text`, decoded strictly (TrainingJob::FromJson): each document must be
// wavepool.dev/v1alpha1 TrainingJob. Neither defaults nor validates. A manifest without any
// document is an error.
absl::StatusOr<std::vector<TrainingJob>> ParseTrainingJobs(std::string_view text);

// ParseTrainingJobs, then SetDefaults and Validate on each job, and no two jobs with the same
// namespace/name: what a cluster would accept. Errors read
// `document 1 (line 9): TrainingJob default/vgg: spec.globalBatchSize: must be >= 1, got 0`.
absl::StatusOr<std::vector<TrainingJob>> LoadTrainingJobs(std::string_view text);

// The one GPUNode in `text`, decoded strictly; not validated.
absl::StatusOr<GpuNode> ParseGpuNode(std::string_view text);

// The one Plan in `text` (what a worker reads from its ConfigMap), decoded strictly and
// validated (Validate(const Plan&)).
absl::StatusOr<Plan> LoadPlan(std::string_view text);

}  // namespace wavepool::api

#endif  // WAVEPOOL_API_MANIFEST_H_
