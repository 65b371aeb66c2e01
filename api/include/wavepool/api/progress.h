// Training progress as the workers report it: a TrainingJob's status.progress, and each task's
// progress in its GPUNode (the agent publishes what the worker reports over its socket; the
// controller reads it from there into the job's status).
#ifndef WAVEPOOL_API_PROGRESS_H_
#define WAVEPOOL_API_PROGRESS_H_

#include <cstdint>

namespace wavepool::api {

struct TrainingProgress {
  std::int64_t step = 0;
  double samples_per_second = 0;
  double iteration_seconds = 0;    // Observed.
  double foreground_slowdown = 0;  // Observed iteration time over solo time; 0 when unknown.
};

}  // namespace wavepool::api

#endif  // WAVEPOOL_API_PROGRESS_H_
