#include "staged_executor.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "step_timer.h"
#include "wavepool/base/seconds.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime {

StagedExecutor::StagedExecutor(std::unique_ptr<Communicator> communicator,
                               std::unique_ptr<StageEngine> engine, LaunchPacer* pacer, Data data)
    : communicator_(std::move(communicator)),
      engine_(std::move(engine)),
      pacer_(pacer),
      data_(std::move(data)) {
  for (int r = 0; r < communicator_->world_size(); ++r) world_.push_back(r);
}

absl::Status StagedExecutor::SynchronizeInitialWeights() { return engine_->BroadcastWeights(); }

std::vector<Replica> StagedExecutor::Replicas() {
  return {Replica{"model", &engine_->model(), &engine_->optimizer()}};
}

absl::Status StagedExecutor::LoadExtraState(
    std::int64_t /*step*/, const std::vector<std::pair<std::string, torch::Tensor>>& state) {
  if (state.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("unexpected executor state '", state.front().first, "' for this plan"));
}

absl::Status StagedExecutor::StartLoader(std::int64_t first) {
  if (loader_ != nullptr && first == next_step_) return absl::OkStatus();
  const std::vector<BatchBlock> blocks = engine_->DataBlocks();
  next_step_ = first;
  if (blocks.empty()) return absl::OkStatus();  // this rank reads no samples
  BatchLoader::Options options;
  options.preload = data_.preload;
  options.device = engine_->device().device();
  options.first_step = first;
  WAVEPOOL_ASSIGN_OR_RETURN(std::unique_ptr<BatchLoader> loader,
                            BatchLoader::Create(data_.source,
                                                SampleOrder(data_.seed, data_.source->size(),
                                                            engine_->program().samples_per_step()),
                                                blocks, options));
  loader_ = std::move(loader);
  return absl::OkStatus();
}

absl::Status StagedExecutor::Agree(double loss_sum, const StepRequests& mine, StepReport* report) {
  torch::Tensor total = torch::tensor(
      {loss_sum, mine.checkpoint ? 1.0 : 0.0, mine.stop ? 1.0 : 0.0}, torch::kFloat64);
  if (communicator_->world_size() > 1) {
    WAVEPOOL_ASSIGN_OR_RETURN(Pending pending, communicator_->AllReduceSum(world_, {total}));
    WAVEPOOL_RETURN_IF_ERROR(pending.Wait());
  }
  report->loss =
      total[0].item<double>() / static_cast<double>(engine_->program().samples_per_step());
  report->agreed.checkpoint = total[1].item<double>() > 0;
  report->agreed.stop = total[2].item<double>() > 0;
  return absl::OkStatus();
}

absl::StatusOr<std::int64_t> StagedExecutor::Train(std::int64_t first, std::int64_t end,
                                                   const StepHooks& hooks) {
  absl::StatusOr<std::int64_t> next = TrainSteps(first, end, hooks);
  // The weights are read next by the worker's thread (a checkpoint), on no stream of ours.
  WAVEPOOL_RETURN_IF_ERROR(engine_->device().Synchronize());
  return next;
}

absl::StatusOr<std::int64_t> StagedExecutor::TrainSteps(std::int64_t first, std::int64_t end,
                                                        const StepHooks& hooks) {
  // The loader's batches are made ready for the replica's stream.
  const c10::OptionalStreamGuard on_device = engine_->device().Enter();
  WAVEPOOL_RETURN_IF_ERROR(StartLoader(first));
  for (std::int64_t step = first; step < end; ++step) {
    const auto start = std::chrono::steady_clock::now();
    StepReport report;
    report.step = step;
    std::vector<Batch> batches;
    if (loader_ != nullptr) {
      StepTimer timer(&report.times.data);
      WAVEPOOL_ASSIGN_OR_RETURN(std::vector<Batch> loaded, loader_->Next());
      batches = std::move(loaded);
    }
    ++next_step_;
    const std::int64_t rows = batches.size() == 1 ? batches.front().rows() : 0;
    WAVEPOOL_ASSIGN_OR_RETURN(StageEngine::StepResult result,
                              engine_->RunStep(step, batches, hooks.slice_rows(rows)));
    WAVEPOOL_RETURN_IF_ERROR(Agree(result.loss_sum, hooks.requests(step), &report));
    const double data_seconds = report.times.data;
    report.times = result.times;
    report.times.data = data_seconds;
    report.samples = engine_->program().samples_per_step();
    report.seconds = Seconds(std::chrono::steady_clock::now() - start).count();
    pacer_->ReportIteration(step, report.seconds, report.samples);
    hooks.after_step(report);
    if (report.agreed.any()) return step + 1;
  }
  return end;
}

}  // namespace wavepool::runtime
