#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compute/analytic_passes.h"
#include "wavepool/planner/compute_cost.h"

namespace wavepool::planner {
namespace {

// The five constants of the model. kStreamingEfficiency is measured directly; the other four
// were fitted together, by least squares on log(predicted / measured) of every profiled layer
// (forward + backward, weighted by its share of its model's time) at per-GPU batches 1..64, to
// both shipped profiles: H100 (mixed precision) and A100 (as TF32) (docs/planner.md, Compute
// cost, has the data and the resulting ratio tables). The fit gave 4.30 us, 0.794, 6118 and
// 0.533; the values below are those rounded.
//
// GPU time of the smallest kernel: ramp-up, tail and the gap to the next kernel. The profiles'
// tiniest layers agree: an H100 ReLU over 100 K items takes 4 us; a BasicConv2d 192 -> 64 (1x1) on
// 35x35 at batch 1 takes 30 us forward in 8 kernels and 34 us backward in 10 (3.4-3.8 us each,
// with a little work in each). Fitted alone, the H100 profile gives 4.0 us and the A100's 3.3 us.
constexpr Seconds kMinKernelTime = Microseconds(4.3);
// Fraction of the dense peak a large matrix kernel reaches in its compute term (cuDNN / cuBLAS;
// the operand traffic its tiles do not hide is the same kernel's memory term, added to it: that
// sum is what makes narrow-channel convolutions slow). Fitted alone: H100 1.0 (the bound), A100
// 0.71.
constexpr double kPeakUtilisation = 0.8;
// Output elements per SM at which a matrix kernel reaches half of kPeakUtilisation (three per
// resident thread of a 2048-thread SM): a small kernel leaves SMs idle. Fitted alone: H100 8725,
// A100 7085.
constexpr double kHalfRateOutputsPerSm = 6144;
// Fraction of HBM bandwidth an element-wise stream reaches: the profiles' standalone ReLUs over
// 25-200 M FP32 items run at 0.85-0.90 of it on the H100 and 0.84-0.88 on the A100.
constexpr double kStreamingEfficiency = 0.9;
// Fraction of HBM bandwidth kernels with structured access reach (convolution operands, layout
// transposes, BatchNorm reductions, pooling windows). Fitted alone: H100 0.41, A100 0.72.
constexpr double kStructuredEfficiency = 0.53;

class AnalyticCostModel final : public ComputeCostModel {
 public:
  AnalyticCostModel(DeviceSpec device, Precision precision)
      : device_(std::move(device)), precision_(precision), matrix_peak_(MatrixPeak()) {}

  LayerTime Time(const Layer& layer, std::int64_t per_gpu_batch) const override {
    if (layer.measured_time_per_sample) {
      // A measured per-sample time is spread as forward : backward = 1 : 2, like the FLOPs.
      const Seconds total = *layer.measured_time_per_sample * static_cast<double>(per_gpu_batch);
      return {total / 3.0, total * (2.0 / 3.0)};
    }
    const internal::LayerPasses passes = internal::PassesOf(layer, per_gpu_batch, precision_);
    return {Sum(passes.forward), Sum(passes.backward)};
  }

  std::string Description() const override {
    const char* what = precision_ == Precision::kMixed  ? "mixed precision"
                       : precision_ == Precision::kTf32 ? "tf32"
                                                        : "fp32";
    return absl::StrCat("analytical, ", device_.name, ", ", what);
  }

 private:
  // Dense FLOP/s of the matrix units `precision_` runs on.
  double MatrixPeak() const {
    switch (precision_) {
      case Precision::kMixed:
        return device_.tensor_flops_per_second;
      case Precision::kTf32:
        return device_.tf32_flops_per_second > 0 ? device_.tf32_flops_per_second
                                                 : device_.fp32_flops_per_second;
      case Precision::kFp32:
        break;
    }
    return device_.fp32_flops_per_second;
  }

  Seconds PassTime(const internal::KernelPass& pass) const {
    const double efficiency = pass.access == internal::MemoryAccess::kStreaming
                                  ? kStreamingEfficiency
                                  : kStructuredEfficiency;
    double seconds = pass.bytes / (device_.memory_bytes_per_second * efficiency);
    if (pass.flops > 0) {
      const double half_work = device_.sm_count * kHalfRateOutputsPerSm;
      const double rate = matrix_peak_ * kPeakUtilisation * pass.work / (pass.work + half_work);
      seconds += pass.flops / rate;
    }
    return kMinKernelTime * pass.kernels + Seconds(seconds);
  }

  Seconds Sum(const std::vector<internal::KernelPass>& passes) const {
    Seconds total{0};
    for (const internal::KernelPass& pass : passes) total += PassTime(pass);
    return total;
  }

  DeviceSpec device_;
  Precision precision_;
  double matrix_peak_;
};

}  // namespace

std::string_view PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
    case Precision::kMixed:
      break;
  }
  return "mixed";
}

ComputeCostModelPtr MakeAnalyticCostModel(const DeviceSpec& device, Precision precision) {
  return std::make_unique<AnalyticCostModel>(device, precision);
}

}  // namespace wavepool::planner
