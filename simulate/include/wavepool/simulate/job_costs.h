// What a job costs on the simulated cluster, from the planner: every distinct (model, GPUs,
// batch, strategy) is planned once, through the controller's PlanJob (controller/job_planner.h,
// the same call the reconciler makes for a TrainingJob), and kept. Planning is the expensive part
// of a simulation (milliseconds per plan against microseconds per event), and a trace of 10,000
// jobs has only a few hundred distinct plans.
//
// A PlanCache is not thread-safe; the JobCosts it hands out live as long as the cache.
#ifndef WAVEPOOL_SIMULATE_JOB_COSTS_H_
#define WAVEPOOL_SIMULATE_JOB_COSTS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "absl/status/statusor.h"
#include "wavepool/api/enums.h"
#include "wavepool/planner/units.h"

namespace wavepool::simulate {

// The request a job's plan is made for.
struct CostKey {
  std::string model;
  api::Role role = api::Role::kForeground;
  std::int64_t gpus = 1;                                  // asked for; 1 for a background job
  std::int64_t global_batch = 1;                          // >= gpus
  api::Strategy strategy = api::Strategy::kDataParallel;  // DataParallel or BurstParallel

  bool operator<(const CostKey& o) const {
    return std::tie(model, role, gpus, global_batch, strategy) <
           std::tie(o.model, o.role, o.gpus, o.global_batch, o.strategy);
  }
};

// One plan's predictions, as the simulation uses them.
struct JobCost {
  api::Strategy strategy = api::Strategy::kDataParallel;
  // GPUs the plan runs on: a burst-parallel plan may need fewer than were asked for (its widest
  // stage, deeppool-burst-parallel §4); placement asks for these.
  std::int64_t gpus = 1;
  double iteration_seconds = 0;  // alone on its GPUs
  std::int64_t samples_per_iteration = 1;
  // Share of its GPUs' time the plan leaves idle (controller::IdleFraction: the plan's
  // backgroundIdleGpuSeconds over GPUs x iteration), in [0, 1].
  double idle_fraction = 0;
  // Mean time one layer keeps one GPU busy (forward and backward): the plan's busy GPU-seconds
  // over its (layer, GPU) pairs. Stands for the length of the job's kernels in the interference
  // model (agent/simulated_gpu.h), whose blocking term depends only on the ratio of two lengths.
  double layer_seconds = 0;
  planner::Bytes memory_per_gpu_bytes = 0;
  std::string description;  // the controller's one-line plan description
};

class PlanCache {
 public:
  // `device`: a planner catalog name ("a100", "h100"); `amplification_limit` >= 1 for every
  // burst-parallel plan.
  PlanCache(std::string device, double amplification_limit);

  // The cost of `key`, planned on first use. Errors as controller::PlanJob returns them (for
  // example FailedPrecondition when the batch does not fit the device's memory), prefixed with
  // the request: "vgg16 on 8 GPUs, batch 32, BurstParallel: ...". A failed request is not kept.
  absl::StatusOr<const JobCost*> Get(const CostKey& key);

  std::size_t plans() const { return costs_.size(); }
  const std::string& device() const { return device_; }

 private:
  std::string device_;
  double amplification_limit_;
  std::map<CostKey, std::unique_ptr<JobCost>> costs_;
};

}  // namespace wavepool::simulate

#endif  // WAVEPOOL_SIMULATE_JOB_COSTS_H_
