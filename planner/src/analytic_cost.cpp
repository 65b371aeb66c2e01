#include <algorithm>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "wavepool/planner/compute_cost.h"

namespace wavepool::planner {
namespace {

// Fraction of peak FLOP/s a large, well-shaped layer reaches in practice (cuDNN/cuBLAS on
// datasheet peaks); calibrated against the DeepPool A100 profile (docs/planner.md).
constexpr double kPeakUtilisationTensor = 0.35;
constexpr double kPeakUtilisationFp32 = 0.75;
// Resident threads per SM on every catalog GPU: the work at which utilisation reaches half of its
// peak is one output element per resident thread.
constexpr double kThreadsPerSm = 2048;
// Fraction of HBM bandwidth streaming kernels reach.
constexpr double kMemoryEfficiency = 0.8;

// Kernels one forward pass launches (the backward pass launches about twice as many).
int ForwardKernels(LayerKind kind) {
  switch (kind) {
    case LayerKind::kResNetBottleneck:
      return 10;
    case LayerKind::kTransformerAttention:
      return 12;
    case LayerKind::kTransformerFeedForward:
      return 6;
    case LayerKind::kEmbedding:
      return 5;
    case LayerKind::kConcat:
    case LayerKind::kAdd:
    case LayerKind::kFlatten:
      return 1;
    default:
      return 1;
  }
}

bool UsesMatrixUnits(LayerKind kind) {
  switch (kind) {
    case LayerKind::kConv2d:
    case LayerKind::kLinear:
    case LayerKind::kResNetBottleneck:
    case LayerKind::kTransformerAttention:
    case LayerKind::kTransformerFeedForward:
      return true;
    default:
      return false;
  }
}

class AnalyticCostModel final : public ComputeCostModel {
 public:
  AnalyticCostModel(DeviceSpec device, Precision precision)
      : device_(std::move(device)), precision_(precision) {}

  LayerTime Time(const Layer& layer, std::int64_t per_gpu_batch) const override {
    const double batch = static_cast<double>(per_gpu_batch);
    if (layer.measured_time_per_sample) {
      // A measured per-sample time is spread as forward : backward = 1 : 2, like the FLOPs.
      const Seconds total = *layer.measured_time_per_sample * batch;
      return {total / 3.0, total * (2.0 / 3.0)};
    }
    const double work = batch * static_cast<double>(layer.output.Elements());
    const double half_work = device_.sm_count * kThreadsPerSm;
    const bool tensor = precision_ == Precision::kMixed && UsesMatrixUnits(layer.kind);
    const double peak = tensor ? device_.tensor_flops_per_second * kPeakUtilisationTensor
                               : device_.fp32_flops_per_second * kPeakUtilisationFp32;
    const double flop_rate = peak * work / (work + half_work);
    const double activation_bytes =
        batch * static_cast<double>(layer.input.Elements() + layer.output.Elements() +
                                    layer.internal_activation_items) *
        static_cast<double>(kBytesPerItem);
    const double param_bytes = static_cast<double>(layer.ParamBytes());
    const double bandwidth = device_.memory_bytes_per_second * kMemoryEfficiency;
    const int kernels = ForwardKernels(layer.kind);
    const Seconds forward =
        device_.kernel_launch_overhead * kernels +
        Seconds(std::max(batch * layer.forward_flops / flop_rate,
                         (activation_bytes + param_bytes) / bandwidth));
    // Backward reads the output gradient and the saved input, writes the input gradient, and
    // reads and writes the weight gradient.
    const Seconds backward =
        device_.kernel_launch_overhead * (2 * kernels) +
        Seconds(std::max(batch * layer.backward_flops / flop_rate,
                         (1.5 * activation_bytes + 2 * param_bytes) / bandwidth));
    return {forward, backward};
  }

  std::string Description() const override {
    return absl::StrCat("analytical, ", device_.name,
                        precision_ == Precision::kMixed ? ", mixed precision" : ", fp32");
  }

 private:
  DeviceSpec device_;
  Precision precision_;
};

}  // namespace

ComputeCostModelPtr MakeAnalyticCostModel(const DeviceSpec& device, Precision precision) {
  return std::make_unique<AnalyticCostModel>(device, precision);
}

}  // namespace wavepool::planner
