#include "tick_tock_executor.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "step_timer.h"
#include "wavepool/base/seconds.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime {
namespace {

constexpr std::string_view kPreviousGradient = "previous_gradient";
constexpr std::string_view kPreviousGradientStep = "previous_gradient_step";

torch::Tensor FlattenGradients(ExecutableModel& model) {
  std::vector<torch::Tensor> flat;
  for (const torch::Tensor& p : model.Parameters()) {
    flat.push_back(p.grad().defined() ? p.grad().reshape({-1})
                                      : torch::zeros({p.numel()}, p.options()));
  }
  return torch::cat(flat);
}

// "[3, 10] Long" (LibTorch's dtype name), for a small tensor read from a checkpoint.
std::string DescribeValues(const torch::Tensor& tensor) {
  std::vector<std::string> values;
  const torch::Tensor flat = tensor.reshape({-1}).to(torch::kDouble);
  for (std::int64_t i = 0; i < flat.numel() && i < 4; ++i) {
    values.push_back(absl::StrCat(flat[i].item<double>()));
  }
  if (flat.numel() > 4) values.push_back("...");
  return absl::StrCat("[", absl::StrJoin(values, ", "), "] ", c10::toString(tensor.scalar_type()));
}

void SetGradients(ExecutableModel& model, const torch::Tensor& flat) {
  std::int64_t offset = 0;
  for (torch::Tensor& p : model.Parameters()) {
    torch::Tensor value = flat.narrow(0, offset, p.numel()).view(p.sizes());
    offset += p.numel();
    if (p.grad().defined()) {
      p.mutable_grad().copy_(value);
    } else {
      p.mutable_grad() = value.clone();
    }
  }
}

}  // namespace

TickTockExecutor::TickTockExecutor(std::unique_ptr<SummedMemoryPacers> memory,
                                   std::array<Wave, 2> waves, LaunchPacer* pacer, Data data)
    : memory_(std::move(memory)), waves_(std::move(waves)), pacer_(pacer), data_(std::move(data)) {
  for (int r = 0; r < waves_[0].communicator->world_size(); ++r) world_.push_back(r);
}

TickTockExecutor::~TickTockExecutor() = default;

absl::Status TickTockExecutor::SynchronizeInitialWeights() {
  for (Wave& wave : waves_) {
    WAVEPOOL_RETURN_IF_ERROR(wave.engine->BroadcastWeights());
  }
  return absl::OkStatus();
}

std::vector<Replica> TickTockExecutor::Replicas() {
  return {Replica{"tick", &waves_[0].engine->model(), &waves_[0].engine->optimizer()},
          Replica{"tock", &waves_[1].engine->model(), &waves_[1].engine->optimizer()}};
}

std::vector<std::pair<std::string, torch::Tensor>> TickTockExecutor::ExtraState() {
  absl::MutexLock lock(&mu_);
  if (mailbox_.empty()) return {};
  const auto& [step, gradient] = *mailbox_.rbegin();
  return {
      {std::string(kPreviousGradient), gradient.sum},
      {std::string(kPreviousGradientStep), torch::tensor({step, gradient.samples}, torch::kInt64)}};
}

absl::Status TickTockExecutor::LoadExtraState(
    std::int64_t step, const std::vector<std::pair<std::string, torch::Tensor>>& state) {
  torch::Tensor sum, iteration;
  for (const auto& [name, tensor] : state) {
    if (name == kPreviousGradient) {
      sum = tensor;
    } else if (name == kPreviousGradientStep) {
      iteration = tensor;
    } else {
      return absl::FailedPreconditionError(absl::StrCat("unexpected tick-tock state '", name, "'"));
    }
  }
  if (!sum.defined() || !iteration.defined()) {
    return absl::FailedPreconditionError("tick-tock state lacks the previous iteration's gradient");
  }
  // Checked here because nothing later can: iteration `step` waits for the gradient of `step - 1`
  // (forever, were it another), adds it to its own (a c10::Error on a wave's thread, which ends
  // the process, were its shape another) and divides by the summed sample counts.
  const torch::Tensor own = FlattenGradients(waves_[0].engine->model());
  if (sum.dim() != 1 || sum.numel() != own.numel() || sum.scalar_type() != own.scalar_type()) {
    return absl::FailedPreconditionError(
        absl::StrCat("tick-tock state '", std::string(kPreviousGradient), "' has ", sum.dim(),
                     " dimensions, ", sum.numel(), " values of ", c10::toString(sum.scalar_type()),
                     "; the model's gradients are ", own.numel(), " values of ",
                     c10::toString(own.scalar_type())));
  }
  const std::int64_t samples = waves_[0].engine->program().samples_per_step();
  const torch::Tensor expected = torch::tensor({step - 1, samples}, torch::kInt64);
  if (iteration.scalar_type() != torch::kInt64 || !iteration.sizes().equals({2}) ||
      !iteration.equal(expected)) {
    return absl::FailedPreconditionError(
        absl::StrCat("tick-tock state '", std::string(kPreviousGradientStep), "' is ",
                     DescribeValues(iteration), "; resuming after step ", step, " needs ",
                     DescribeValues(expected), " (the previous iteration and its samples)"));
  }
  absl::MutexLock lock(&mu_);
  mailbox_.clear();
  mailbox_[step - 1] = {sum.clone(), samples};
  return absl::OkStatus();
}

absl::Status TickTockExecutor::StartLoaders(std::int64_t first) {
  if (loaders_[0] != nullptr && first == next_step_) return absl::OkStatus();
  next_step_ = first;
  for (int wave = 0; wave < 2; ++wave) {
    const std::vector<BatchBlock> blocks =
        waves_[static_cast<std::size_t>(wave)].engine->DataBlocks();
    loaders_[static_cast<std::size_t>(wave)].reset();
    if (blocks.empty()) continue;
    BatchLoader::Options options;
    options.preload = data_.preload;
    options.device = waves_[static_cast<std::size_t>(wave)].engine->device().device();
    options.first_step = first % 2 == wave ? first : first + 1;
    options.step_stride = 2;
    WAVEPOOL_ASSIGN_OR_RETURN(
        std::unique_ptr<BatchLoader> loader,
        BatchLoader::Create(data_.source,
                            SampleOrder(data_.seed, data_.source->size(),
                                        waves_[0].engine->program().samples_per_step()),
                            blocks, options));
    loaders_[static_cast<std::size_t>(wave)] = std::move(loader);
  }
  return absl::OkStatus();
}

void TickTockExecutor::Fail(absl::Status status) {
  absl::MutexLock lock(&mu_);
  if (error_.ok()) error_ = std::move(status);
}

bool TickTockExecutor::WaitForTurn(std::int64_t step) {
  absl::MutexLock lock(&mu_);
  // B.1.1: a wave's forward pass starts when the other wave's previous forward pass has ended.
  const auto turn = [this, step]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !error_.ok() || step >= limit_ || step == first_step_ || forward_done_ >= step - 1;
  };
  mu_.Await(absl::Condition(&turn));
  return error_.ok() && step < limit_;
}

absl::Status TickTockExecutor::RunIteration(int wave, std::int64_t step, const StepHooks& hooks) {
  StageEngine& engine = *waves_[static_cast<std::size_t>(wave)].engine;
  const c10::OptionalStreamGuard on_device = engine.device().Enter();
  const auto start = std::chrono::steady_clock::now();
  StepReport report;
  report.step = step;
  report.wave = wave;
  std::vector<Batch> batches;
  if (loaders_[static_cast<std::size_t>(wave)] != nullptr) {
    StepTimer timer(&report.times.data);
    WAVEPOOL_ASSIGN_OR_RETURN(std::vector<Batch> loaded,
                              loaders_[static_cast<std::size_t>(wave)]->Next());
    batches = std::move(loaded);
  }
  WAVEPOOL_ASSIGN_OR_RETURN(const StageEngine::StepResult result,
                            engine.ComputeGradients(step, batches, 1.0, [&] {
                              absl::MutexLock lock(&mu_);
                              forward_done_ = std::max(forward_done_, step);
                            }));
  const std::int64_t samples = engine.program().samples_per_step();
  LocalGradient mine{FlattenGradients(engine.model()), samples};
  // The other wave reads it on its own thread and stream.
  WAVEPOOL_RETURN_IF_ERROR(engine.device().Synchronize());
  LocalGradient previous;
  {
    absl::MutexLock lock(&mu_);
    mailbox_[step] = mine;
    StepTimer timer(&report.times.allreduce);
    const auto previous_ready = [this, step]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !error_.ok() || step == 0 || mailbox_.count(step - 1) > 0;
    };
    mu_.Await(absl::Condition(&previous_ready));
    WAVEPOOL_RETURN_IF_ERROR(error_);
    if (step > 0) {
      previous = mailbox_[step - 1];
      mailbox_.erase(step - 1);  // iteration `step` is the last to read it
    }
  }
  // Eq. 1-2 (class comment): one all-reduce carries the combined gradient, the loss and the
  // ranks' requests.
  // A resumed run's previous gradient comes from the checkpoint, on the host.
  torch::Tensor combined =
      previous.sum.defined() ? mine.sum + previous.sum.to(mine.sum.device()) : mine.sum.clone();
  const StepRequests requests = hooks.requests(step);
  torch::Tensor flat = torch::cat(
      {combined, torch::tensor({static_cast<float>(result.loss_sum),
                                requests.checkpoint ? 1.0F : 0.0F, requests.stop ? 1.0F : 0.0F})
                     .to(combined.device())});
  if (world_.size() > 1) {
    StepTimer timer(&report.times.allreduce);
    absl::Status reduced;
    WAVEPOOL_RETURN_IF_ERROR(pacer_->Run(AllReduceGroup(0), [&] {
      absl::StatusOr<Pending> pending =
          waves_[static_cast<std::size_t>(wave)].communicator->AllReduceSum(world_, {flat});
      reduced = pending.ok() ? pending->Wait() : pending.status();
    }));
    WAVEPOOL_RETURN_IF_ERROR(reduced);
  }
  const std::int64_t total = mine.samples + previous.samples;
  SetGradients(engine.model(), flat.narrow(0, 0, combined.numel()) / static_cast<double>(total));
  {
    StepTimer timer(&report.times.compute);
    WAVEPOOL_RETURN_IF_ERROR(engine.ApplyGradients());
  }
  report.loss = flat[combined.numel()].item<double>() / static_cast<double>(samples);
  report.agreed.checkpoint = flat[combined.numel() + 1].item<double>() > 0;
  report.agreed.stop = flat[combined.numel() + 2].item<double>() > 0;
  report.samples = samples;
  report.times.compute += result.times.compute;
  report.times.transfer = result.times.transfer;
  report.times.data += result.times.data;
  report.seconds = Seconds(std::chrono::steady_clock::now() - start).count();
  pacer_->ReportIteration(step, report.seconds, report.samples);
  absl::MutexLock lock(&mu_);
  done_[step] = report;
  // Every rank stops after the same iteration: the next one, step + 1, may already run on the
  // other wave; step + 2 would be this thread's next and has not started anywhere.
  if (report.agreed.any()) limit_ = std::min(limit_, step + 2);
  return absl::OkStatus();
}

void TickTockExecutor::RunWave(int wave, std::int64_t first, std::int64_t end,
                               const StepHooks& hooks) {
  for (std::int64_t step = first % 2 == wave ? first : first + 1; step < end; step += 2) {
    if (!WaitForTurn(step)) return;
    if (absl::Status s = RunIteration(wave, step, hooks); !s.ok()) {
      Fail(s);
      return;
    }
  }
  // The weights are read next by the worker's thread (a checkpoint) or the other wave.
  if (absl::Status s = waves_[static_cast<std::size_t>(wave)].engine->device().Synchronize();
      !s.ok()) {
    Fail(s);
  }
}

absl::StatusOr<std::int64_t> TickTockExecutor::Train(std::int64_t first, std::int64_t end,
                                                     const StepHooks& hooks) {
  WAVEPOOL_RETURN_IF_ERROR(StartLoaders(first));
  {
    absl::MutexLock lock(&mu_);
    first_step_ = first;
    forward_done_ = first - 1;
    limit_ = end;
    done_.clear();
    error_ = absl::OkStatus();
  }
  int finished = 0;
  std::array<std::thread, 2> threads;
  for (int wave = 0; wave < 2; ++wave) {
    threads[static_cast<std::size_t>(wave)] =
        std::thread([this, wave, first, end, &hooks, &finished] {
          RunWave(wave, first, end, hooks);
          absl::MutexLock lock(&mu_);
          ++finished;
        });
  }
  std::int64_t next = first;
  absl::Status error;
  while (true) {
    absl::ReleasableMutexLock lock(&mu_);
    const auto ready = [this, next, &finished]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !error_.ok() || done_.count(next) > 0 || finished == 2;
    };
    mu_.Await(absl::Condition(&ready));
    if (!error_.ok()) {
      error = error_;
      break;
    }
    auto it = done_.find(next);
    if (it == done_.end()) break;  // both waves stopped and every completed step is reported
    const StepReport report = it->second;
    done_.erase(it);
    lock.Release();
    hooks.after_step(report);
    ++next;
  }
  for (std::thread& thread : threads) thread.join();
  WAVEPOOL_RETURN_IF_ERROR(error);
  next_step_ = next;
  return next;
}

}  // namespace wavepool::runtime
