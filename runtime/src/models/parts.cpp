#include "parts.h"

namespace wavepool::runtime::internal {

Dense::Dense(const InitScope& init, std::int64_t in, std::int64_t out, bool bias) {
  weight_ = register_parameter("weight", init.KaimingUniform("weight", {out, in}, in));
  if (bias) bias_ = register_parameter("bias", init.KaimingUniform("bias", {out}, in));
}

torch::Tensor Dense::Forward(const torch::Tensor& x) const {
  return torch::linear(x, weight_, bias_);
}

Conv::Conv(const InitScope& init, std::int64_t in, std::int64_t out,
           const planner::WindowAttrs& window, bool bias)
    : window_(window) {
  const std::int64_t fan_in = in / window.groups * window.kernel_h * window.kernel_w;
  weight_ = register_parameter(
      "weight", init.KaimingUniform(
                    "weight", {out, in / window.groups, window.kernel_h, window.kernel_w}, fan_in));
  if (bias) bias_ = register_parameter("bias", init.KaimingUniform("bias", {out}, fan_in));
}

torch::Tensor Conv::Forward(const torch::Tensor& x) const {
  return torch::conv2d(x, weight_, bias_, {window_.stride_h, window_.stride_w},
                       {window_.pad_h, window_.pad_w}, {1, 1}, window_.groups);
}

BatchNorm::BatchNorm(std::int64_t channels) {
  weight_ = register_parameter("weight", torch::ones({channels}));
  bias_ = register_parameter("bias", torch::zeros({channels}));
  running_mean_ = register_buffer("running_mean", torch::zeros({channels}));
  running_var_ = register_buffer("running_var", torch::ones({channels}));
}

torch::Tensor BatchNorm::Forward(const torch::Tensor& x, bool training) const {
  return torch::batch_norm(x, weight_, bias_, running_mean_, running_var_, training,
                           kBatchNormMomentum, kBatchNormEps,
                           at::globalContext().userEnabledCuDNN());
}

LayerNorm::LayerNorm(std::int64_t features, double eps) : features_(features), eps_(eps) {
  weight_ = register_parameter("weight", torch::ones({features}));
  bias_ = register_parameter("bias", torch::zeros({features}));
}

torch::Tensor LayerNorm::Forward(const torch::Tensor& x) const {
  return torch::layer_norm(x, {features_}, weight_, bias_, eps_);
}

EmbeddingTable::EmbeddingTable(const InitScope& init, std::int64_t entries, std::int64_t features,
                               double std) {
  weight_ = register_parameter("weight", init.Normal("weight", {entries, features}, std));
}

}  // namespace wavepool::runtime::internal
