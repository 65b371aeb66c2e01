#include "wavepool/runtime/stage_engine.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "stage_engine_internal.h"
#include "step_timer.h"
#include "wavepool/base/seconds.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/runtime/weight_codec.h"

namespace wavepool::runtime {

std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(const api::PlanTraining& training,
                                                       std::vector<torch::Tensor> parameters) {
  switch (training.optimizer) {
    case api::Optimizer::kAdam:
      return std::make_unique<torch::optim::Adam>(
          std::move(parameters), torch::optim::AdamOptions(training.learning_rate));
    case api::Optimizer::kAdamW:
      return std::make_unique<torch::optim::AdamW>(
          std::move(parameters), torch::optim::AdamWOptions(training.learning_rate));
    case api::Optimizer::kSgd:
      break;
  }
  return std::make_unique<torch::optim::SGD>(
      std::move(parameters), torch::optim::SGDOptions(training.learning_rate).momentum(0.9));
}

StageEngine::StageEngine(std::shared_ptr<const StageProgram> program, Communicator* communicator,
                         Options options)
    : program_(std::move(program)), communicator_(communicator), options_(options) {}

StageEngine::~StageEngine() = default;

absl::StatusOr<std::unique_ptr<StageEngine>> StageEngine::Create(
    std::shared_ptr<const StageProgram> program, std::shared_ptr<const planner::ModelGraph> graph,
    const api::PlanTraining& training, Communicator* communicator, LaunchPacer* pacer,
    Options options) {
  std::unique_ptr<StageEngine> engine(new StageEngine(std::move(program), communicator, options));
  const StageProgram& p = *engine->program_;
  WAVEPOOL_ASSIGN_OR_RETURN(engine->device_,
                            ReplicaDevice::Create(options.device, options.role, pacer));
  WAVEPOOL_ASSIGN_OR_RETURN(
      std::unique_ptr<ExecutableModel> model,
      ExecutableModel::Build(std::move(graph), p.LayersOn(options.rank), options.seed));
  engine->model_ = std::move(model);
  engine->model_->Train(true);
  try {
    const c10::OptionalStreamGuard on_device = engine->device_->Enter();
    engine->model_->To(options.device);
  } catch (const c10::Error& e) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "moving the model's layers to ", options.device.str(), ": ", e.what_without_backtrace()));
  }
  engine->optimizer_ = MakeOptimizer(training, engine->model_->Parameters());
  for (const torch::Tensor& t : engine->model_->Parameters()) {
    engine->parameter_bytes_ += 2 * internal::Bytes(t);  // the weights and their gradients
  }
  engine->instances_on_rank_ = p.InstancesOn(options.rank);
  engine->instances_per_stage_.assign(static_cast<std::size_t>(p.stage_count()), 0);
  for (int id : engine->instances_on_rank_) {
    ++engine->instances_per_stage_[static_cast<std::size_t>(p.forward_order()[id].stage)];
  }
  engine->reducers_.resize(static_cast<std::size_t>(p.stage_count()));
  engine->states_.resize(p.forward_order().size());
  if (options.reduce_gradients) {
    for (int s = 0; s < p.stage_count(); ++s) {
      const std::vector<int>& group = p.sync_group(s);
      if (group.size() < 2 || !std::binary_search(group.begin(), group.end(), options.rank)) {
        continue;
      }
      std::vector<std::pair<int, std::vector<torch::Tensor>>> layers;
      const std::vector<planner::LayerId>& ids = p.stage_layers(s);
      for (auto it = ids.rbegin(); it != ids.rend(); ++it) {  // the order backward finishes them
        layers.emplace_back(*it, engine->model_->Parameters(*it));
      }
      engine->reducers_[static_cast<std::size_t>(s)] = std::make_unique<GradientReducer>(
          communicator, group, std::move(layers), options.bucket_bytes);
    }
  }
  return engine;
}

std::vector<BatchBlock> StageEngine::DataBlocks() const {
  std::vector<BatchBlock> blocks;
  for (int id : instances_on_rank_) {
    const StageInstance& instance = program_->forward_order()[static_cast<std::size_t>(id)];
    const RowRange rows = instance.BlockOf(options_.rank);
    if (rows.empty()) continue;
    if (program_->reads_input(instance.stage) || program_->holds_sink(instance.stage)) {
      blocks.push_back({rows.begin, rows.size()});
    }
  }
  return blocks;
}

bool StageEngine::CanSliceSteps() const {
  if (instances_on_rank_.size() != 1) return false;
  const StageInstance& instance =
      program_->forward_order()[static_cast<std::size_t>(instances_on_rank_.front())];
  return program_->reads_input(instance.stage) && program_->holds_sink(instance.stage) &&
         program_->edges_into(instance.stage).empty() &&
         program_->edges_out_of(instance.stage).empty();
}

absl::StatusOr<StageEngine::StepResult> StageEngine::RunStep(std::int64_t step,
                                                             const std::vector<Batch>& data,
                                                             std::int64_t slice_rows) {
  // `result` is the returned object itself (named return value), so the timer's destructor,
  // which runs after the return statement, still adds ApplyGradients' time to it.
  absl::StatusOr<StepResult> result =
      slice_rows > 0 && CanSliceSteps() && data.size() == 1 && data.front().rows() > slice_rows
          ? RunSlicedStep(step, data.front(), slice_rows)
          : ComputeGradients(step, data, 1.0 / static_cast<double>(program_->samples_per_step()));
  if (!result.ok()) return result;
  StepTimer timer(&result->times.compute);
  WAVEPOOL_RETURN_IF_ERROR(ApplyGradients());
  return result;
}

absl::StatusOr<StageEngine::StepResult> StageEngine::RunSlicedStep(std::int64_t step,
                                                                   const Batch& block,
                                                                   std::int64_t slice_rows) {
  const StageInstance& instance =
      program_->forward_order()[static_cast<std::size_t>(instances_on_rank_.front())];
  const RowRange rows = instance.BlockOf(options_.rank);
  if (block.rows() != rows.size()) {
    return absl::InvalidArgumentError(absl::StrCat("step ", step, ": a block of ", block.rows(),
                                                   " samples for ", rows.size(), " rows"));
  }
  for (torch::Tensor& p : model_->Parameters()) p.mutable_grad() = torch::Tensor();
  const double loss_scale = 1.0 / static_cast<double>(program_->samples_per_step());
  StepResult total;
  for (std::int64_t offset = 0; offset < rows.size(); offset += slice_rows) {
    const std::int64_t count = std::min(slice_rows, rows.size() - offset);
    Batch slice;
    slice.inputs = block.inputs.narrow(0, offset, count);
    slice.labels = block.labels.narrow(0, offset, count);
    slice.step = block.step;
    slice.first_sample = block.first_sample + offset;
    const bool last = offset + count == rows.size();
    WAVEPOOL_ASSIGN_OR_RETURN(
        StepResult part,
        AccumulateGradients(step, {slice}, loss_scale, {},
                            RowRange{rows.begin + offset, rows.begin + offset + count}, last));
    total.loss_sum += part.loss_sum;
    total.times.compute += part.times.compute;
    total.times.transfer += part.times.transfer;
    total.times.allreduce += part.times.allreduce;
    total.times.data += part.times.data;
  }
  return total;
}

absl::StatusOr<StageEngine::StepResult> StageEngine::ComputeGradients(
    std::int64_t step, const std::vector<Batch>& data, double loss_scale,
    const std::function<void()>& after_forward) {
  // Gradients start undefined (not zeroed) so that the first accumulation of a step stores it.
  for (torch::Tensor& p : model_->Parameters()) p.mutable_grad() = torch::Tensor();
  return AccumulateGradients(step, data, loss_scale, after_forward, std::nullopt, true);
}

absl::StatusOr<StageEngine::StepResult> StageEngine::AccumulateGradients(
    std::int64_t step, const std::vector<Batch>& data, double loss_scale,
    const std::function<void()>& after_forward, std::optional<RowRange> rows, bool reduce) {
  const c10::OptionalStreamGuard on_device = device_->Enter();
  StepResult result;
  const auto start = std::chrono::steady_clock::now();
  instances_left_ = instances_per_stage_;
  std::size_t next_data = 0;
  for (int id : instances_on_rank_) {
    const StageInstance& instance = program_->forward_order()[static_cast<std::size_t>(id)];
    std::vector<Batch> mine;
    if (!instance.BlockOf(options_.rank).empty() &&
        (program_->reads_input(instance.stage) || program_->holds_sink(instance.stage))) {
      if (next_data >= data.size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "step ", step, ": ", data.size(), " data blocks for ", DataBlocks().size(), " reads"));
      }
      mine.push_back(data[next_data++]);
    }
    WAVEPOOL_RETURN_IF_ERROR(Forward(instance, mine, rows, step, &result.times));
  }
  if (after_forward) after_forward();
  torch::Tensor loss_sum;
  for (auto it = instances_on_rank_.rbegin(); it != instances_on_rank_.rend(); ++it) {
    const StageInstance& instance = program_->forward_order()[static_cast<std::size_t>(*it)];
    WAVEPOOL_RETURN_IF_ERROR(Backward(instance, loss_scale, reduce, &loss_sum, &result.times));
  }
  if (loss_sum.defined()) result.loss_sum = loss_sum.item<double>();
  {
    StepTimer timer(&result.times.allreduce);
    for (std::size_t s = 0; s < reducers_.size(); ++s) {
      if (reducers_[s] == nullptr || !reduce) continue;
      absl::Status reduced;
      WAVEPOOL_RETURN_IF_ERROR(device_->pacer()->Run(AllReduceGroup(static_cast<int>(s)),
                                                     [&] { reduced = reducers_[s]->Finish(); }));
      WAVEPOOL_RETURN_IF_ERROR(reduced);
    }
    WAVEPOOL_RETURN_IF_ERROR(WaitForSends());
  }
  for (std::unique_ptr<InstanceState>& state : states_) state.reset();
  activation_bytes_ = 0;
  const double total = Seconds(std::chrono::steady_clock::now() - start).count();
  result.times.compute =
      std::max(0.0, total - result.times.transfer - result.times.allreduce - result.times.data);
  return result;
}

absl::Status StageEngine::ApplyGradients() {
  const c10::OptionalStreamGuard on_device = device_->Enter();
  try {
    torch::NoGradGuard no_grad;
    optimizer_->step();
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("optimizer step: ", compat::ErrorText(e)));
  }
  return absl::OkStatus();
}

absl::Status StageEngine::BroadcastWeights() {
  const c10::OptionalStreamGuard on_device = device_->Enter();
  for (int s = 0; s < program_->stage_count(); ++s) {
    const std::vector<int>& group = program_->sync_group(s);
    if (group.size() < 2 || !std::binary_search(group.begin(), group.end(), options_.rank)) {
      continue;
    }
    // Gloo broadcasts one tensor shape at a time: one flat tensor per dtype (BatchNorm counts
    // batches in int64).
    std::map<c10::ScalarType, std::vector<torch::Tensor>> by_dtype;
    for (planner::LayerId id : program_->stage_layers(s)) {
      for (torch::Tensor& t : model_->Parameters(id)) by_dtype[t.scalar_type()].push_back(t);
      for (torch::Tensor& t : model_->layer(id).buffers()) by_dtype[t.scalar_type()].push_back(t);
    }
    for (auto& [dtype, tensors] : by_dtype) {
      torch::NoGradGuard no_grad;
      std::vector<torch::Tensor> flat_parts;
      for (const torch::Tensor& t : tensors) flat_parts.push_back(t.detach().reshape({-1}));
      torch::Tensor flat = torch::cat(flat_parts);
      const bool compress = options_.compress_weights && dtype == torch::kFloat32;
      WAVEPOOL_RETURN_IF_ERROR(compress ? BroadcastCompressed(group, flat)
                                        : Broadcast(group, flat));
      std::int64_t offset = 0;
      for (torch::Tensor& t : tensors) {
        t.detach().copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
        offset += t.numel();
      }
    }
  }
  return absl::OkStatus();
}

absl::Status StageEngine::Broadcast(const std::vector<int>& group, torch::Tensor& tensor) {
  WAVEPOOL_ASSIGN_OR_RETURN(Pending pending,
                            communicator_->Broadcast(group, group.front(), {tensor}));
  return pending.Wait();
}

absl::Status StageEngine::BroadcastCompressed(const std::vector<int>& group, torch::Tensor& flat) {
  // scalednn-data-movement §IV-C: the root sends the 3:1 packed stream and every rank, the root
  // included, continues from the decoded weights, so that all replicas are identical. Weights the
  // codec cannot hold (|w| >= 2, NaN, Inf) go uncompressed; the root says which in a first message.
  const bool root = options_.rank == group.front();
  const auto count = static_cast<std::size_t>(flat.numel());
  // The codec runs on the host: a replica on a GPU encodes and decodes a host copy.
  torch::Tensor host = flat.device().is_cpu() ? flat : flat.to(torch::kCPU);
  torch::Tensor stream =
      torch::empty({static_cast<std::int64_t>(EncodedWeightBytes(count))}, torch::kUInt8);
  torch::Tensor compressed = torch::zeros({1}, torch::kInt64);
  if (root) {
    absl::Status encoded = EncodeWeightsInto(
        absl::MakeConstSpan(host.data_ptr<float>(), count),
        absl::MakeSpan(stream.data_ptr<std::uint8_t>(), static_cast<std::size_t>(stream.numel())));
    compressed.fill_(encoded.ok() ? 1 : 0);
  }
  WAVEPOOL_RETURN_IF_ERROR(Broadcast(group, compressed));
  if (compressed.item<std::int64_t>() == 0) return Broadcast(group, flat);
  WAVEPOOL_RETURN_IF_ERROR(Broadcast(group, stream));
  WAVEPOOL_RETURN_IF_ERROR(
      DecodeWeightsInto(absl::MakeConstSpan(stream.data_ptr<std::uint8_t>(),
                                            static_cast<std::size_t>(stream.numel())),
                        absl::MakeSpan(host.data_ptr<float>(), count)));
  if (!flat.device().is_cpu()) flat.copy_(host);
  return absl::OkStatus();
}

std::uint64_t StageEngine::held_bytes() const { return parameter_bytes_ + activation_bytes_; }

void StageEngine::ReportMemory() { device_->pacer()->ReportMemory(held_bytes()); }

}  // namespace wavepool::runtime
