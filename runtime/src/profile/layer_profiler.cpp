// ProfileLayers: times each layer's forward and backward with the runtime's modules
// (layer_profiler.h).
#include "wavepool/runtime/layer_profiler.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gpu_layer_timer.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/runtime/executable_model.h"
#include "wavepool/runtime/replica_device.h"

namespace wavepool::runtime {
namespace {

using Clock = std::chrono::steady_clock;

planner::Seconds Since(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration_cast<planner::Seconds>(end - start);
}

// Random inputs of the planner's shapes for `layer` at `batch`: token ids below the vocabulary
// for an embedding, N(0, 1) features otherwise.
std::vector<torch::Tensor> RandomInputs(const planner::ModelGraph& graph,
                                        const planner::Layer& layer, std::int64_t batch,
                                        torch::Generator& generator) {
  std::vector<torch::Tensor> inputs;
  const size_t count = std::max<size_t>(1, layer.inputs.size());
  for (size_t i = 0; i < count; ++i) {
    const planner::TensorShape& shape =
        layer.inputs.empty() ? graph.input_shape() : graph.layer(layer.inputs[i]).output;
    std::vector<std::int64_t> sizes = {batch};
    sizes.insert(sizes.end(), shape.dims.begin(), shape.dims.end());
    inputs.push_back(layer.kind == planner::LayerKind::kEmbedding
                         ? torch::randint(layer.in_channels, sizes, generator, torch::kLong)
                         : torch::randn(sizes, generator));
  }
  return inputs;
}

// The median forward and backward wall time of layer `id` on `inputs` (on the CPU).
planner::LayerTime TimeLayer(ExecutableModel& model, planner::LayerId id,
                             const std::vector<torch::Tensor>& inputs,
                             const ForwardContext& context, const ProfileOptions& options) {
  std::vector<planner::Seconds> forward, backward;
  std::vector<torch::Tensor> parameters = model.Parameters(id);
  torch::Tensor grad;  // ones like the output, made once outside the timed passes
  for (int run = 0; run < options.warmup + options.repeats; ++run) {
    std::vector<torch::Tensor> leaves;
    for (const torch::Tensor& x : inputs) {
      leaves.push_back(x.is_floating_point() ? x.detach().requires_grad_(true) : x);
    }
    for (torch::Tensor& p : parameters) p.mutable_grad().reset();  // zero_grad(set_to_none)
    const Clock::time_point start = Clock::now();
    const torch::Tensor y = model.Forward(id, leaves, context);
    const Clock::time_point forward_end = Clock::now();
    if (!grad.defined()) grad = torch::ones_like(y);
    const Clock::time_point backward_start = Clock::now();
    if (y.requires_grad()) torch::autograd::backward({y}, {grad});
    const Clock::time_point end = Clock::now();
    if (run < options.warmup) continue;
    forward.push_back(Since(start, forward_end));
    backward.push_back(Since(backward_start, end));
  }
  return {internal::MedianSeconds(std::move(forward)),
          internal::MedianSeconds(std::move(backward))};
}

// Times every layer at one batch size into `measured` (graph order).
absl::Status ProfileBatch(ExecutableModel& model, std::int64_t batch, const ProfileOptions& options,
                          const torch::Device& device, std::vector<MeasuredLayer>& measured) {
  const planner::ModelGraph& graph = model.graph();
  torch::Generator generator =
      at::detail::createCPUGenerator(options.seed ^ static_cast<std::uint64_t>(batch));
  for (MeasuredLayer& entry : measured) {
    const planner::Layer& layer = graph.layer(entry.layer);
    try {
      std::vector<torch::Tensor> inputs = RandomInputs(graph, layer, batch, generator);
      ForwardContext context;
      if (layer.kind == planner::LayerKind::kSoftmaxCrossEntropy) {
        context.labels = torch::randint(layer.input.dims.back(), {batch}, generator, torch::kLong);
      }
      if (device.is_cpu()) {
        entry.by_batch[batch] = TimeLayer(model, layer.id, inputs, context, options);
        continue;
      }
      for (torch::Tensor& input : inputs) input = input.to(device);
      if (context.labels.defined()) context.labels = context.labels.to(device);
      WAVEPOOL_ASSIGN_OR_RETURN(entry.by_batch[batch],
                                internal::TimeLayerOnGpu(model, layer, inputs, context, options));
    } catch (const c10::Error& e) {
      return absl::InternalError(absl::StrCat("timing layer '", layer.name, "' of model '",
                                              graph.name(), "' at batch ", batch, ": ",
                                              e.what_without_backtrace()));
    } catch (const std::bad_alloc&) {
      return absl::ResourceExhaustedError(absl::StrCat("timing layer '", layer.name, "' of model '",
                                                       graph.name(), "' at batch ", batch,
                                                       ": out of memory"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

constexpr int kMaxProfileRuns = 1'000'000;  // warm-up or timed runs per layer and batch
constexpr int kMaxProfileThreads = 1024;

absl::Status ValidateProfileOptions(const ProfileOptions& options) {
  if (options.batch_sizes.empty()) {
    return absl::InvalidArgumentError("batch_sizes: give at least one batch size");
  }
  for (size_t i = 0; i < options.batch_sizes.size(); ++i) {
    const std::int64_t batch = options.batch_sizes[i];
    if (batch < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("batch_sizes: every batch size must be >= 1, got ", batch));
    }
    if (i > 0 && batch <= options.batch_sizes[i - 1]) {
      return absl::InvalidArgumentError(
          absl::StrCat("batch_sizes: must be strictly ascending, got ", options.batch_sizes[i - 1],
                       " then ", batch));
    }
  }
  // Bounds that no real profile comes near, so that a typo cannot start a run that never ends or
  // ask LibTorch for a thread per count.
  if (options.warmup < 0 || options.warmup > kMaxProfileRuns) {
    return absl::InvalidArgumentError(
        absl::StrCat("warmup: must be in [0, ", kMaxProfileRuns, "], got ", options.warmup));
  }
  if (options.repeats < 1 || options.repeats > kMaxProfileRuns) {
    return absl::InvalidArgumentError(
        absl::StrCat("repeats: must be in [1, ", kMaxProfileRuns, "], got ", options.repeats));
  }
  if (options.threads < 0 || options.threads > kMaxProfileThreads) {
    return absl::InvalidArgumentError(absl::StrCat("threads: must be in [0, ", kMaxProfileThreads,
                                                   "] (0: LibTorch's default), got ",
                                                   options.threads));
  }
  if (absl::Status device = ParseDevice(options.device).status(); !device.ok()) {
    return absl::Status(device.code(), absl::StrCat("device: ", device.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<MeasuredLayer>> ProfileLayers(const planner::ModelGraph& graph,
                                                         const ProfileOptions& options,
                                                         const ProfileProgress& progress) {
  WAVEPOOL_RETURN_IF_ERROR(ValidateProfileOptions(options));
  WAVEPOOL_ASSIGN_OR_RETURN(const torch::Device device, ParseDevice(options.device));
  WAVEPOOL_ASSIGN_OR_RETURN(
      std::unique_ptr<ExecutableModel> model,
      ExecutableModel::Build(std::make_shared<const planner::ModelGraph>(graph), {}, options.seed));
  if (options.threads > 0) torch::set_num_threads(options.threads);
  if (!device.is_cpu()) {
    try {
      model->To(device);
    } catch (const c10::Error& e) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "moving model '", graph.name(), "' to ", device.str(), ": ", e.what_without_backtrace()));
    }
  }
  std::vector<MeasuredLayer> measured;
  for (const planner::Layer& layer : graph.layers()) measured.push_back({layer.id, {}});
  for (std::int64_t batch : options.batch_sizes) {
    WAVEPOOL_RETURN_IF_ERROR(ProfileBatch(*model, batch, options, device, measured));
    if (progress) progress(batch, measured);
  }
  return measured;
}

}  // namespace wavepool::runtime
