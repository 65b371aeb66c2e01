// A job's progress as its workers report it, read from the GPUNodes: each node's agent publishes
// the tasks on its GPUs with what each worker last reported over the agent's socket (step,
// samples/s, iteration time, foreground slowdown). Pure functions.
#ifndef WAVEPOOL_CONTROLLER_JOB_PROGRESS_H_
#define WAVEPOOL_CONTROLLER_JOB_PROGRESS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wavepool/api/gpu_node.h"
#include "wavepool/api/progress.h"

namespace wavepool::controller {

// The progress of job `ns`/`job` over the tasks of `pods` (the current gang's pod names; tasks of
// an earlier gang still listed by a slow agent are ignored) that report one (a pod on several
// GPUs counts once): the step is the smallest over the pods (a gang is as far as its slowest
// rank; for a bg job, its one pod), samples/s the sum (capped at the largest finite double: a
// report may hold any finite rate), iteration seconds and foreground slowdown the largest.
// nullopt when no task of the job reports progress.
std::optional<api::TrainingProgress> JobProgress(const std::vector<api::GpuNode>& nodes,
                                                 std::string_view ns, std::string_view job,
                                                 const std::vector<std::string>& pods);

}  // namespace wavepool::controller

#endif  // WAVEPOOL_CONTROLLER_JOB_PROGRESS_H_
