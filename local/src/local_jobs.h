// The jobs of a local run: read from manifests, planned as the controller plans them, and given
// GPUs of the local node.
#ifndef WAVEPOOL_LOCAL_SRC_LOCAL_JOBS_H_
#define WAVEPOOL_LOCAL_SRC_LOCAL_JOBS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/api/training_job.h"
#include "wavepool/controller/job_planner.h"

namespace wavepool::local {

struct LocalJob {
  api::TrainingJob job;  // defaulted and validated
  std::string manifest;  // the file it came from
  std::string key;       // "namespace/name"
  std::string slug;      // "namespace-name", for files
  controller::JobPlan plan;
  std::vector<std::uint32_t> gpus;  // the node-local GPU of each rank

  bool background() const;
};

// Reads every TrainingJob of `files` (api::LoadTrainingJobs: defaults and validation; errors
// prefixed with the file), refuses two jobs with one namespace/name, and plans each for `device`
// (controller::PlanJob). Local mode trains built-in models: a job whose model is a layer-table
// ConfigMap is InvalidArgument naming spec.model.layerTable.
absl::StatusOr<std::vector<LocalJob>> LoadJobs(const std::vector<std::string>& files,
                                               const std::string& device);

// Gives every foreground job GPUs of its own, in order from GPU 0, and every background job one
// GPU, the foreground's first (round-robin over the foreground GPUs, so that each background job
// shares a GPU with a foreground job; any GPU when there is no foreground job). `*gpus` is the
// node's GPU count: 0 asks for as many as the foreground jobs need (at least 1).
// FailedPrecondition naming the job when the foreground jobs need more GPUs than `*gpus`.
absl::Status AssignGpus(std::vector<LocalJob>& jobs, std::uint32_t* gpus);

}  // namespace wavepool::local

#endif  // WAVEPOOL_LOCAL_SRC_LOCAL_JOBS_H_
