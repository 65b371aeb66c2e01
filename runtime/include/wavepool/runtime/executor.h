// What every executor (data parallel, burst parallel, model-parallel waves, tick-tock) offers the
// worker's training loop: train a range of steps, report each, stop at a step boundary when
// asked, and expose the state a checkpoint holds.
#ifndef WAVEPOOL_RUNTIME_EXECUTOR_H_
#define WAVEPOOL_RUNTIME_EXECUTOR_H_

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/runtime/executable_model.h"

namespace wavepool::runtime {

// Where one step's time went on this rank (seconds).
struct StepTimes {
  double compute = 0;    // forward, backward and optimizer
  double transfer = 0;   // waiting for activations or gradients from other ranks
  double allreduce = 0;  // waiting for gradient all-reduces
  double data = 0;       // waiting for the data loader
};

// What a rank asks for at the end of a step; the gang agrees on it (any rank asking is enough),
// so that every rank returns from Train after the same step.
struct StepRequests {
  bool checkpoint = false;  // a periodic checkpoint is due
  bool stop = false;        // the worker was asked to stop (SIGTERM)

  bool any() const { return checkpoint || stop; }
};

struct StepReport {
  std::int64_t step = 0;  // the global iteration just completed
  int wave = 0;           // tick-tock: 0 tick, 1 tock; else 0
  double loss = 0;        // mean loss over the step's samples (the whole gang's)
  std::int64_t samples = 0;
  double seconds = 0;  // wall time of the step on this rank
  StepTimes times;
  StepRequests agreed;  // what some rank asked for at this step
};

struct StepHooks {
  // This rank's requests at the end of step `step` (asked from the executor's threads; must be
  // safe to call concurrently).
  std::function<StepRequests(std::int64_t step)> requests = [](std::int64_t) {
    return StepRequests{};
  };
  // Called once per completed step, in step order, never concurrently.
  std::function<void(const StepReport&)> after_step = [](const StepReport&) {};
  // The most samples one pass may hold when this rank's block of a step has `rows` samples; 0:
  // the whole block. An executor that slices steps (Executor::SlicesSteps) then runs the block as
  // consecutive slices and accumulates their gradients before the all-reduce and the optimizer:
  // the step trains as it would whole (the same samples, losses and dropout masks; BatchNorm
  // normalises each slice), while each launch holds fewer samples. A background task follows its
  // node agent's smaller batch recommendation this way, so that the foreground waits less for its
  // kernels. Asked from the executor's thread before each step.
  std::function<std::int64_t(std::int64_t rows)> slice_rows = [](std::int64_t) { return 0; };
};

// One trained replica of the model: its modules and its optimizer (tick-tock has two).
struct Replica {
  std::string name;  // "model"; "tick" and "tock"
  ExecutableModel* model = nullptr;
  torch::optim::Optimizer* optimizer = nullptr;
};

// Thread safety: one thread calls the methods; an executor may run threads of its own inside
// Train. Replicas() pointers are valid for the executor's life.
class Executor {
 public:
  virtual ~Executor() = default;

  // Makes every rank's initial weights identical (broadcast from the lowest rank holding each
  // stage). Called once, for a job that starts without a checkpoint.
  virtual absl::Status SynchronizeInitialWeights() = 0;

  // Trains steps [first, end) and returns the next step to train: `end`, or earlier when a rank
  // made a request (every rank returns after the same step). Steps that started are finished.
  virtual absl::StatusOr<std::int64_t> Train(std::int64_t first, std::int64_t end,
                                             const StepHooks& hooks) = 0;

  // Whether Train follows StepHooks::slice_rows (a plan whose every stage runs on all of this
  // rank's samples with no transfers between ranks: data parallel); otherwise it ignores it.
  virtual bool SlicesSteps() const { return false; }

  virtual std::vector<Replica> Replicas() = 0;
  // State beyond the replicas that a resumed run needs (tick-tock: the last local gradient),
  // named; LoadExtraState receives what ExtraState returned after `step` completed steps (a
  // checkpoint's step, from which Train resumes). It may come from a file: FailedPrecondition
  // naming what does not fit this executor and step, and nothing loaded.
  virtual std::vector<std::pair<std::string, torch::Tensor>> ExtraState() = 0;
  virtual absl::Status LoadExtraState(
      std::int64_t step, const std::vector<std::pair<std::string, torch::Tensor>>& state) = 0;
};

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_EXECUTOR_H_
