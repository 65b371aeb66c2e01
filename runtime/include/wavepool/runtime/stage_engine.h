// One rank's replica of a model running a StageProgram: the stage instances this rank runs,
// forward in program order and backward in reverse, layer by layer as launch groups, with the
// activations and their gradients moving between ranks as the program says and each stage's
// gradients summed over its sync group while backward runs (gradient_reducer.h).
//
// Layer by layer: every layer's forward and backward is one launch group (DeepPool §5 captures
// one graph per layer forward and backward; the CPU runs them as op groups). Each layer reads
// detached copies of its inputs, so its backward is its own autograd call and the gradient of a
// fork is the sum its consumers leave in the copy.
//
// Thread safety: not synchronised; one thread runs a StageEngine (tick-tock's two waves each own
// one). Ownership: owns its model and optimizer; borrows the program, communicator and pacer,
// which must outlive it.
#ifndef WAVEPOOL_RUNTIME_STAGE_ENGINE_H_
#define WAVEPOOL_RUNTIME_STAGE_ENGINE_H_

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/api/plan.h"
#include "wavepool/runtime/batch.h"
#include "wavepool/runtime/batch_loader.h"
#include "wavepool/runtime/communicator.h"
#include "wavepool/runtime/executable_model.h"
#include "wavepool/runtime/executor.h"
#include "wavepool/runtime/gradient_reducer.h"
#include "wavepool/runtime/launch_pacer.h"
#include "wavepool/runtime/replica_device.h"
#include "wavepool/runtime/stage_program.h"

namespace wavepool::runtime {

// The optimizer a plan's training settings name, over `parameters`: SGD with momentum 0.9,
// Adam (betas 0.9/0.999, eps 1e-8) or AdamW (the same, weight decay 0.01), as PyTorch defaults.
std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(const api::PlanTraining& training,
                                                       std::vector<torch::Tensor> parameters);

class StageEngine {
 public:
  struct Options {
    int rank = 0;
    std::uint64_t seed = 0;
    // All-reduce each stage's gradients while backward runs (off for tick-tock, which averages
    // across its waves before it all-reduces).
    bool reduce_gradients = true;
    std::int64_t bucket_bytes = std::int64_t{4} << 20;
    // Broadcast the initial weights through the 3:1 codec (weight_codec.h) when the plan says
    // so (scalednn-data-movement §IV-C).
    bool compress_weights = false;
    // Where the replica trains, and the role whose stream priority it launches with on a GPU
    // (replica_device.h).
    torch::Device device = torch::kCPU;
    agent::Role role = agent::Role::kForeground;
  };

  struct StepResult {
    double loss_sum = 0;  // this rank's loss terms (0 on ranks without the sink)
    StepTimes times;
  };

  // Builds the layers this rank runs (seeded: ExecutableModel, so the same weights on every
  // device) on Options::device, and their optimizer. ReplicaDevice::Create's errors;
  // ResourceExhausted when the layers do not fit the device.
  static absl::StatusOr<std::unique_ptr<StageEngine>> Create(
      std::shared_ptr<const StageProgram> program, std::shared_ptr<const planner::ModelGraph> graph,
      const api::PlanTraining& training, Communicator* communicator, LaunchPacer* pacer,
      Options options);
  ~StageEngine();
  StageEngine(const StageEngine&) = delete;
  StageEngine& operator=(const StageEngine&) = delete;

  // The blocks of every step this rank reads from the data loader, in the order RunStep and
  // ComputeGradients expect them: one per instance that reads the model input or computes the
  // loss.
  std::vector<BatchBlock> DataBlocks() const;

  // One optimizer step: gradients of sum(loss) / samples_per_step, summed over each stage's
  // sync group, applied. `data` as DataBlocks() says. With `slice_rows` > 0 and CanSliceSteps(),
  // this rank's block runs as slices of at most that many samples, one after another, their
  // gradients accumulated and summed over the sync group once (executor.h, StepHooks).
  absl::StatusOr<StepResult> RunStep(std::int64_t step, const std::vector<Batch>& data,
                                     std::int64_t slice_rows = 0);
  // True when this rank runs one stage instance that reads the input and computes the loss, with
  // no activations to or from other ranks: its block can be cut into slices anywhere.
  bool CanSliceSteps() const;

  // The parts of a step, for executors that combine gradients themselves (tick-tock): leaves the
  // gradients of sum(loss) * loss_scale over this rank's samples in the parameters (summed over
  // the sync groups only when Options::reduce_gradients), then ApplyGradients steps the
  // optimizer. `after_forward`, when set, runs between the forward and the backward pass.
  absl::StatusOr<StepResult> ComputeGradients(std::int64_t step, const std::vector<Batch>& data,
                                              double loss_scale,
                                              const std::function<void()>& after_forward = {});
  absl::Status ApplyGradients();

  // Broadcasts every stage's parameters and buffers from the lowest rank of its sync group
  // (compressed when Options::compress_weights: every replica then holds the decoded weights).
  absl::Status BroadcastWeights();

  ExecutableModel& model() { return *model_; }
  // The replica's device: executors enter it around a step and synchronise it before another
  // thread reads the replica's tensors.
  ReplicaDevice& device() { return *device_; }
  torch::optim::Optimizer& optimizer() { return *optimizer_; }
  const StageProgram& program() const { return *program_; }
  int rank() const { return options_.rank; }
  // Bytes of parameters, gradients and activations this replica holds now.
  std::uint64_t held_bytes() const;

 private:
  struct InstanceState;

  StageEngine(std::shared_ptr<const StageProgram> program, Communicator* communicator,
              Options options);

  // ComputeGradients' passes without clearing the gradients first: they add to what the
  // parameters hold. `rows`, when set, are the samples of this rank's single instance that `data`
  // holds (a slice of its block); `reduce`: sum the gradients over the sync groups at the end.
  absl::StatusOr<StepResult> AccumulateGradients(std::int64_t step, const std::vector<Batch>& data,
                                                 double loss_scale,
                                                 const std::function<void()>& after_forward,
                                                 std::optional<RowRange> rows, bool reduce);
  absl::StatusOr<StepResult> RunSlicedStep(std::int64_t step, const Batch& block,
                                           std::int64_t slice_rows);
  absl::Status Forward(const StageInstance& instance, const std::vector<Batch>& data,
                       std::optional<RowRange> rows, std::int64_t step, StepTimes* times);
  // Adds the instance's loss terms to `loss_sum` (a tensor on the device: read once per step).
  absl::Status Backward(const StageInstance& instance, double loss_scale, bool reduce,
                        torch::Tensor* loss_sum, StepTimes* times);
  // Transfers (stage_transfers.cpp).
  absl::StatusOr<torch::Tensor> GatherActivations(const StageEdge& edge, int wave,
                                                  const RowRange& rows, StepTimes* times);
  absl::Status ScatterActivations(const StageEdge& edge, int wave, const RowRange& rows,
                                  const torch::Tensor& output);
  absl::StatusOr<torch::Tensor> GatherGradients(const StageEdge& edge, int wave,
                                                const RowRange& rows, const torch::Tensor& like,
                                                StepTimes* times);
  absl::Status ScatterGradients(const StageEdge& edge, int wave, const RowRange& rows,
                                const torch::Tensor& gradient);
  absl::Status WaitForReceives(std::vector<Pending>& receives, int stage, StepTimes* times);
  absl::Status WaitForSends();
  absl::Status Broadcast(const std::vector<int>& group, torch::Tensor& tensor);
  absl::Status BroadcastCompressed(const std::vector<int>& group, torch::Tensor& flat);
  void ReportMemory();

  const std::shared_ptr<const StageProgram> program_;
  Communicator* const communicator_;
  const Options options_;
  // Before the tensors on it: destroyed after them. Launch groups go through its pacer.
  std::unique_ptr<ReplicaDevice> device_;
  std::unique_ptr<ExecutableModel> model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::vector<std::unique_ptr<GradientReducer>> reducers_;  // by stage; null: nothing to sum
  std::vector<int> instances_on_rank_;                      // ids, forward order
  std::vector<int> instances_per_stage_;                    // on this rank
  std::vector<int> instances_left_;                         // this step's backward, by stage
  std::vector<std::unique_ptr<InstanceState>> states_;      // by instance id, this step
  std::vector<Pending> sends_;                              // this step's, waited at its end
  std::uint64_t parameter_bytes_ = 0;
  std::uint64_t activation_bytes_ = 0;
};

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_STAGE_ENGINE_H_
