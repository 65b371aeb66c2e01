// The executor of data-parallel, burst-parallel and model-parallel-waves plans: one StageEngine
// stepping the compiled program, fed by a BatchLoader (executor_factory.h).
#ifndef WAVEPOOL_RUNTIME_SRC_EXEC_STAGED_EXECUTOR_H_
#define WAVEPOOL_RUNTIME_SRC_EXEC_STAGED_EXECUTOR_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "wavepool/runtime/batch_loader.h"
#include "wavepool/runtime/communicator.h"
#include "wavepool/runtime/executor.h"
#include "wavepool/runtime/stage_engine.h"

namespace wavepool::runtime {

class StagedExecutor final : public Executor {
 public:
  struct Data {
    SampleSourcePtr source;
    std::uint64_t seed = 0;
    bool preload = true;
  };

  StagedExecutor(std::unique_ptr<Communicator> communicator, std::unique_ptr<StageEngine> engine,
                 LaunchPacer* pacer, Data data);

  absl::Status SynchronizeInitialWeights() override;
  absl::StatusOr<std::int64_t> Train(std::int64_t first, std::int64_t end,
                                     const StepHooks& hooks) override;
  bool SlicesSteps() const override { return engine_->CanSliceSteps(); }
  std::vector<Replica> Replicas() override;
  std::vector<std::pair<std::string, torch::Tensor>> ExtraState() override { return {}; }
  absl::Status LoadExtraState(
      std::int64_t step, const std::vector<std::pair<std::string, torch::Tensor>>& state) override;

 private:
  // Train's steps, before the device is synchronised.
  absl::StatusOr<std::int64_t> TrainSteps(std::int64_t first, std::int64_t end,
                                          const StepHooks& hooks);
  absl::Status StartLoader(std::int64_t first);
  // The gang's mean loss of a step from every rank's loss terms, and what any rank requested.
  absl::Status Agree(double loss_sum, const StepRequests& mine, StepReport* report);

  std::unique_ptr<Communicator> communicator_;
  std::unique_ptr<StageEngine> engine_;
  LaunchPacer* const pacer_;
  const Data data_;
  std::unique_ptr<BatchLoader> loader_;  // from the first Train
  std::int64_t next_step_ = -1;          // what the loader serves next
  std::vector<int> world_;
};

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_SRC_EXEC_STAGED_EXECUTOR_H_
