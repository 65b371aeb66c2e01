// Tick-tock (wavelet-tick-tock §3.2, Appendix B.1): two waves of one data-parallel job on every
// rank, each a replica of the model with its own optimizer, driven by a thread of its own. The
// tick wave trains global iterations 0, 2, 4, ..., the tock wave 1, 3, 5, ...; iteration m's
// forward pass starts when iteration m-1's forward pass has ended (B.1.1), so that one wave's
// memory peak meets the other's trough.
//
// Gradients (§3.2.3, planner/ticktock.h): iteration m's backward leaves S_i^m, the sum of the loss
// gradients over rank i's samples. The iteration then takes the other wave's S_i^(m-1) (waiting
// for it if it is late), and its wave all-reduces S_i^m + S_i^(m-1) over the N ranks:
//   G_m = sum_i (S_i^m + S_i^(m-1)) / (B_m + B_(m-1)),
// the mean gradient over the 2N wave micro-batches of iterations m-1 and m (Eq. 2; with equal
// blocks each rank's term is Eq. 1's average). G_0 = sum_i S_i^0 / B_0. Iteration m applies G_m
// to its own replica only. By Lemma 1 this is data parallelism over 2N workers.
//
// Each wave has its own communicator (its own process groups), so the two waves' collectives
// never interleave on one group.
#ifndef WAVEPOOL_RUNTIME_SRC_EXEC_TICK_TOCK_EXECUTOR_H_
#define WAVEPOOL_RUNTIME_SRC_EXEC_TICK_TOCK_EXECUTOR_H_

#include <array>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "summed_memory_pacer.h"
#include "wavepool/runtime/batch_loader.h"
#include "wavepool/runtime/communicator.h"
#include "wavepool/runtime/executor.h"
#include "wavepool/runtime/stage_engine.h"

namespace wavepool::runtime {

class TickTockExecutor final : public Executor {
 public:
  struct Wave {
    std::unique_ptr<Communicator> communicator;
    std::unique_ptr<StageEngine> engine;
  };
  struct Data {
    SampleSourcePtr source;
    std::uint64_t seed = 0;
    bool preload = true;
  };

  // REQUIRES: both engines run the same one-stage program with reduce_gradients off.
  // `memory` gives the waves' engines their pacers (views of `pacer`); it must outlive them.
  TickTockExecutor(std::unique_ptr<SummedMemoryPacers> memory, std::array<Wave, 2> waves,
                   LaunchPacer* pacer, Data data);
  ~TickTockExecutor() override;

  absl::Status SynchronizeInitialWeights() override;
  absl::StatusOr<std::int64_t> Train(std::int64_t first, std::int64_t end,
                                     const StepHooks& hooks) override;
  std::vector<Replica> Replicas() override;
  // "previous_gradient.<step>": S^(next-1), which the next iteration averages with its own.
  std::vector<std::pair<std::string, torch::Tensor>> ExtraState() override;
  absl::Status LoadExtraState(
      std::int64_t step, const std::vector<std::pair<std::string, torch::Tensor>>& state) override;

 private:
  // S_i^m of one iteration, flattened over the replica's parameters.
  struct LocalGradient {
    torch::Tensor sum;
    std::int64_t samples = 0;  // B_m: the whole wave's samples
  };

  void RunWave(int wave, std::int64_t first, std::int64_t end, const StepHooks& hooks);
  absl::Status RunIteration(int wave, std::int64_t step, const StepHooks& hooks);
  absl::Status StartLoaders(std::int64_t first);
  // Waits until step may start (its predecessor's forward ended) or must not (past the limit).
  bool WaitForTurn(std::int64_t step) ABSL_LOCKS_EXCLUDED(mu_);
  void Fail(absl::Status status) ABSL_LOCKS_EXCLUDED(mu_);

  std::unique_ptr<SummedMemoryPacers> memory_;  // before the waves: destroyed after them
  std::array<Wave, 2> waves_;
  LaunchPacer* const pacer_;
  const Data data_;
  std::array<std::unique_ptr<BatchLoader>, 2> loaders_;
  std::int64_t next_step_ = -1;  // what the loaders serve next
  std::vector<int> world_;

  absl::Mutex mu_;
  std::int64_t first_step_ ABSL_GUARDED_BY(mu_) = 0;  // of the current Train
  // Every step <= this has finished its forward pass.
  std::int64_t forward_done_ ABSL_GUARDED_BY(mu_) = -1;
  std::int64_t limit_ ABSL_GUARDED_BY(mu_) = 0;  // steps >= limit_ do not start
  // S^m until iteration m+1 has used it.
  std::map<std::int64_t, LocalGradient> mailbox_ ABSL_GUARDED_BY(mu_);
  std::map<std::int64_t, StepReport> done_ ABSL_GUARDED_BY(mu_);  // completed, not yet reported
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_SRC_EXEC_TICK_TOCK_EXECUTOR_H_
