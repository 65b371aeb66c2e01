// Turning a Plan into the executor that runs it on one rank:
//   DataParallel, BurstParallel, ModelParallelWaves   a StageEngine stepping the compiled program
//                                                     (data parallel is the one-stage program)
//   TickTock                                          two StageEngines, one per wave, on threads of
//                                                     their own (tick_tock_executor.cpp)
#ifndef WAVEPOOL_RUNTIME_EXECUTOR_FACTORY_H_
#define WAVEPOOL_RUNTIME_EXECUTOR_FACTORY_H_

#include <chrono>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "wavepool/api/plan.h"
#include "wavepool/planner/model.h"
#include "wavepool/runtime/executor.h"
#include "wavepool/runtime/launch_pacer.h"
#include "wavepool/runtime/rendezvous.h"
#include "wavepool/runtime/replica_device.h"
#include "wavepool/runtime/sample_source.h"

namespace wavepool::runtime {

// Everything an executor is built from. Borrowed pointers must outlive the executor.
struct ExecutorSetup {
  api::Plan plan;  // validated (api::Validate)
  std::shared_ptr<const planner::ModelGraph> graph;
  int rank = 0;
  StorePtr store;  // after Rendezvous
  LaunchPacer* pacer = nullptr;
  SampleSourcePtr source;
  // Where the replicas train, and the role whose stream priority they launch with on a GPU
  // (replica_device.h).
  torch::Device device = torch::kCPU;
  agent::Role role = agent::Role::kForeground;
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};  // any one collective or transfer
  // Gradient buckets (gradient_reducer.h).
  std::int64_t bucket_bytes = std::int64_t{4} << 20;
};

// Compiles the plan against the graph (StageProgram::Compile's errors), joins the process groups
// the plan needs and builds this rank's layers. InvalidArgument for a rank outside the plan's
// GPUs or a plan whose strategy the runtime cannot run; ReplicaDevice::Create's errors.
absl::StatusOr<std::unique_ptr<Executor>> MakeExecutor(const ExecutorSetup& setup);

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_EXECUTOR_FACTORY_H_
