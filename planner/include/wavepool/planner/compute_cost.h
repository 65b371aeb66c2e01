// Compute cost: how long one GPU takes to run a layer forward and backward on a batch.
// Two sources: a measured profile (profile.h) or the analytical model below.
#ifndef WAVEPOOL_PLANNER_COMPUTE_COST_H_
#define WAVEPOOL_PLANNER_COMPUTE_COST_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "wavepool/planner/device.h"
#include "wavepool/planner/model.h"
#include "wavepool/planner/units.h"

namespace wavepool::planner {

struct LayerTime {
  Seconds forward{0};
  Seconds backward{0};
  Seconds Total() const { return forward + backward; }
};

// A ComputeCostModel is immutable after construction and safe for concurrent use.
class ComputeCostModel {
 public:
  virtual ~ComputeCostModel() = default;
  // Forward and backward time of `layer` on one GPU holding `per_gpu_batch` samples.
  // REQUIRES: per_gpu_batch >= 1.
  virtual LayerTime Time(const Layer& layer, std::int64_t per_gpu_batch) const = 0;
  // One line for reports, e.g. "analytical, a100-40gb, mixed precision".
  virtual std::string Description() const = 0;
};
using ComputeCostModelPtr = std::unique_ptr<ComputeCostModel>;

// The arithmetic the matrix layers (convolutions, linear layers, transformer blocks) run in.
//   kFp32:  FP32 on CUDA cores.
//   kTf32:  FP32 tensors, matrix products on TF32 tensor cores (PyTorch's default for cuDNN
//           convolutions on Ampere and later); a device without TF32 (V100) runs them in FP32.
//   kMixed: automatic mixed precision (autocast to FP16/BF16): matrix layers cast their FP32
//           inputs and weights to 16 bits and run on the FP16/BF16 tensor cores.
enum class Precision { kFp32, kTf32, kMixed };

// "fp32", "tf32" or "mixed".
std::string_view PrecisionName(Precision precision);

// The analytical model prices every kernel a layer launches, forward and backward, on one GPU:
//   kernel time = kMinKernelTime + flops / (peak * u(w)) + bytes / (bandwidth * efficiency),
//   u(w) = kPeakUtilisation * w / (w + sm_count * kHalfRateOutputsPerSm),
// where flops are the kernel's matrix-unit FLOPs (0 for a memory-bound kernel), peak is the
// device's dense rate for `precision`, w is the kernel's output elements (the parallelism the
// GPU's threads get: the poor small-batch utilisation of deeppool-burst-parallel §2, Figure 4),
// bytes are its HBM reads and writes, and efficiency is kStreamingEfficiency for element-wise
// kernels and kStructuredEfficiency for the rest. The kernels of a layer are what PyTorch runs:
// a convolution with fused BatchNorm and ReLU is the convolution plus BatchNorm's and ReLU's
// passes over its output; under kMixed the casts of inputs and weights (and, for convolutions,
// cuDNN's channels-first <-> channels-last transposes) are kernels too. Tensors between layers
// are FP32 (kBytesPerItem, as the shipped profiles measured them); under kMixed a matrix layer's
// operands and outputs, and the passes fused onto them, are 16-bit. The five constants were
// fitted to the shipped H100 (mixed) and A100 (TF32) profiles (analytic_cost.cpp;
// docs/planner.md, Compute cost).
// A layer with a measured per-sample time (a layer table) costs that time times the batch.
ComputeCostModelPtr MakeAnalyticCostModel(const DeviceSpec& device,
                                          Precision precision = Precision::kMixed);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_COMPUTE_COST_H_
