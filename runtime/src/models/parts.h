// The parameterised pieces layer modules are made of: dense and convolution weights, BatchNorm
// and LayerNorm. Each is a torch::nn::Module whose parameters are named as torch.nn names them
// ("weight", "bias", "running_mean"), initialised from an InitScope (init.h), and applied with
// LibTorch's functional ops.
//
// Thread safety: as torch::nn::Module (not synchronised); owned by the layer module that
// registers it.
#ifndef WAVEPOOL_RUNTIME_SRC_MODELS_PARTS_H_
#define WAVEPOOL_RUNTIME_SRC_MODELS_PARTS_H_

#include <torch/torch.h>

#include <cstdint>

#include "init.h"
#include "wavepool/planner/model.h"

namespace wavepool::runtime::internal {

// torch.nn.Linear over the last dim: weight {out, in}, optional bias {out}.
class Dense : public torch::nn::Module {
 public:
  Dense(const InitScope& init, std::int64_t in, std::int64_t out, bool bias);
  torch::Tensor Forward(const torch::Tensor& x) const;

 private:
  torch::Tensor weight_;
  torch::Tensor bias_;  // undefined without a bias
};

// torch.nn.Conv2d with the planner's window (asymmetric kernel and padding, one stride per dim,
// groups): weight {out, in/groups, kh, kw}, optional bias {out}.
class Conv : public torch::nn::Module {
 public:
  // REQUIRES: window.groups divides `in` and `out`.
  Conv(const InitScope& init, std::int64_t in, std::int64_t out, const planner::WindowAttrs& window,
       bool bias);
  torch::Tensor Forward(const torch::Tensor& x) const;

 private:
  planner::WindowAttrs window_;
  torch::Tensor weight_;
  torch::Tensor bias_;
};

// torch.nn.BatchNorm2d (eps 1e-5, momentum 0.1): weight ones, bias zeros; running_mean and
// running_var are buffers. `training` (the owning layer's mode) normalises with the statistics of
// the rows it is given and updates the running ones; otherwise the running ones are used.
class BatchNorm : public torch::nn::Module {
 public:
  explicit BatchNorm(std::int64_t channels);
  torch::Tensor Forward(const torch::Tensor& x, bool training) const;

 private:
  torch::Tensor weight_, bias_, running_mean_, running_var_;
};

// torch.nn.LayerNorm over the last dim: weight ones, bias zeros.
class LayerNorm : public torch::nn::Module {
 public:
  LayerNorm(std::int64_t features, double eps);
  torch::Tensor Forward(const torch::Tensor& x) const;

 private:
  std::int64_t features_;
  double eps_;
  torch::Tensor weight_, bias_;
};

// An embedding table {entries, features}, N(0, std^2) as BERT initialises them (std 0.02).
class EmbeddingTable : public torch::nn::Module {
 public:
  EmbeddingTable(const InitScope& init, std::int64_t entries, std::int64_t features, double std);
  const torch::Tensor& weight() const { return weight_; }

 private:
  torch::Tensor weight_;
};

// PyTorch's defaults: BatchNorm2d eps and momentum, LayerNorm eps; BERT's LayerNorm eps.
inline constexpr double kBatchNormEps = 1e-5;
inline constexpr double kBatchNormMomentum = 0.1;
inline constexpr double kLayerNormEps = 1e-5;
inline constexpr double kBertLayerNormEps = 1e-12;

}  // namespace wavepool::runtime::internal

#endif  // WAVEPOOL_RUNTIME_SRC_MODELS_PARTS_H_
