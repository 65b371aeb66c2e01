#include "gpu_layer_timer.h"

#if WAVEPOOL_TORCH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

#include "absl/status/status.h"

namespace wavepool::runtime::internal {

#if WAVEPOOL_TORCH_CUDA
namespace {

// The median GPU time of `launch` over `repeats` runs, each between two events on the current
// stream, waited for before the next run.
template <typename Launch>
planner::Seconds MedianGpuTime(int repeats, const Launch& launch) {
  at::cuda::CUDAEvent start(cudaEventDefault);
  at::cuda::CUDAEvent end(cudaEventDefault);
  std::vector<planner::Seconds> times;
  for (int run = 0; run < repeats; ++run) {
    start.record();
    launch();
    end.record();
    end.synchronize();
    times.push_back(planner::Seconds(static_cast<double>(start.elapsed_time(end)) / 1e3));
  }
  return MedianSeconds(std::move(times));
}

// Ends a capture an op broke off (LibTorch threw inside it), so that the stream works again.
void AbandonCapture(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) == cudaSuccess &&
      status != cudaStreamCaptureStatusNone) {
    cudaGraph_t partial = nullptr;
    if (cudaStreamEndCapture(stream, &partial) == cudaSuccess && partial != nullptr) {
      cudaGraphDestroy(partial);
    }
  }
  (void)cudaGetLastError();  // the capture's error is not the next call's
}

}  // namespace

absl::StatusOr<planner::LayerTime> TimeLayerOnGpu(ExecutableModel& model,
                                                  const planner::Layer& layer,
                                                  const std::vector<torch::Tensor>& inputs,
                                                  const ForwardContext& context,
                                                  const ProfileOptions& options) {
  // Graphs are captured on a stream of their own (never the legacy default stream).
  const c10::cuda::CUDAStream stream =
      c10::cuda::getStreamFromPool(/*isHighPriority=*/false, inputs.front().device().index());
  const c10::cuda::CUDAStreamGuard on_stream(stream);
  std::vector<torch::Tensor> leaves;
  for (const torch::Tensor& x : inputs) {
    leaves.push_back(x.is_floating_point() ? x.detach().requires_grad_(true) : x);
  }
  std::vector<torch::Tensor> parameters = model.Parameters(layer.id);
  const auto clear_gradients = [&] {
    for (torch::Tensor& p : parameters) p.mutable_grad().reset();
    for (torch::Tensor& leaf : leaves) {
      if (leaf.requires_grad()) leaf.mutable_grad().reset();
    }
  };
  const auto forward = [&] { return model.Forward(layer.id, leaves, context); };
  torch::Tensor y;
  for (int run = 0; run < std::max(1, options.warmup); ++run) {
    clear_gradients();
    y = forward();
    if (y.requires_grad()) torch::autograd::backward({y}, {torch::ones_like(y)});
  }
  const torch::Tensor grad = torch::ones_like(y);
  const bool has_backward = y.requires_grad();
  stream.synchronize();
  clear_gradients();  // accumulation inside the capture then writes, never reads, the gradients

  if (layer.kind != planner::LayerKind::kDropout) {
    try {
      at::cuda::CUDAGraph forward_graph;
      at::cuda::CUDAGraph backward_graph;
      forward_graph.capture_begin();
      y = forward();
      forward_graph.capture_end();
      if (has_backward) {
        backward_graph.capture_begin(forward_graph.pool());
        torch::autograd::backward({y}, {grad});
        backward_graph.capture_end();
      }
      planner::LayerTime time;
      time.forward = MedianGpuTime(options.repeats, [&] { forward_graph.replay(); });
      if (has_backward) {
        time.backward = MedianGpuTime(options.repeats, [&] { backward_graph.replay(); });
      }
      return time;
    } catch (const c10::Error&) {
      AbandonCapture(stream.stream());
      stream.synchronize();
      clear_gradients();
    }
  }
  planner::LayerTime time;
  time.forward = MedianGpuTime(options.repeats, [&] { y = forward(); });
  if (has_backward) {
    time.backward = MedianGpuTime(
        options.repeats, [&] { torch::autograd::backward({y}, {grad}, /*retain_graph=*/true); });
  }
  return time;
}

#else

absl::StatusOr<planner::LayerTime> TimeLayerOnGpu(ExecutableModel&, const planner::Layer& layer,
                                                  const std::vector<torch::Tensor>&,
                                                  const ForwardContext&, const ProfileOptions&) {
  return absl::FailedPreconditionError("timing layer '" + layer.name +
                                       "' on a GPU: this build's LibTorch has no CUDA");
}

#endif

}  // namespace wavepool::runtime::internal
