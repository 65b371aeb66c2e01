// A job's progress from its tasks in the GPUNodes (job_progress.h).
#include "wavepool/controller/job_progress.h"

#include <algorithm>
#include <limits>
#include <map>

namespace wavepool::controller {
namespace {

// a + b for rates >= 0, saturating at the largest finite double. Each GPUNode rate is finite (the
// codec refuses others) but unbounded: a broken or hostile agent can publish rates near the largest
// double, whose sum would overflow to +inf, which JSON cannot carry and the TrainingJob CRD's
// samplesPerSecond would refuse, and with it the job's whole status.
double SaturatingRateSum(double a, double b) {
  constexpr double kMax = std::numeric_limits<double>::max();
  return a > kMax - b ? kMax : a + b;
}

}  // namespace

std::optional<api::TrainingProgress> JobProgress(const std::vector<api::GpuNode>& nodes,
                                                 std::string_view ns, std::string_view job,
                                                 const std::vector<std::string>& pods) {
  // One report per pod: a pod on several GPUs is one worker process listed under each of them
  // (or one rank per GPU reporting the same step); its largest step is its latest report.
  std::map<std::string_view, const api::TrainingProgress*> by_pod;
  for (const api::GpuNode& node : nodes) {
    for (const api::GpuStatus& gpu : node.status.gpus) {
      for (const api::GpuTask& task : gpu.tasks) {
        if (!task.progress || task.namespace_ != ns || task.job != job) continue;
        if (std::find(pods.begin(), pods.end(), task.pod) == pods.end()) continue;
        const api::TrainingProgress*& seen = by_pod[task.pod];
        if (seen == nullptr || task.progress->step > seen->step) seen = &*task.progress;
      }
    }
  }
  if (by_pod.empty()) return std::nullopt;
  api::TrainingProgress total;
  total.step = by_pod.begin()->second->step;
  for (const auto& [pod, progress] : by_pod) {
    // A gang is as far as its slowest rank; its throughput is every rank's together, and the
    // iteration and the slowdown are those of the rank that holds the others back.
    total.step = std::min(total.step, progress->step);
    total.samples_per_second =
        SaturatingRateSum(total.samples_per_second, progress->samples_per_second);
    total.iteration_seconds = std::max(total.iteration_seconds, progress->iteration_seconds);
    total.foreground_slowdown = std::max(total.foreground_slowdown, progress->foreground_slowdown);
  }
  return total;
}

}  // namespace wavepool::controller
