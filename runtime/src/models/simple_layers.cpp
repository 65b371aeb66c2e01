// The modules of the planner's simple layer kinds: convolution (with fused BatchNorm and ReLU),
// linear, norms, activations, pools, flatten, joins, dropout and the loss.
#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

#include "layers.h"
#include "parts.h"

namespace wavepool::runtime::internal {
namespace {

namespace F = torch::nn::functional;

// torchvision's BasicConv2d when both are fused: conv -> BatchNorm -> ReLU.
class Conv2dLayer final : public LayerModule {
 public:
  Conv2dLayer(const planner::Layer& layer, const InitScope& init)
      : relu_(layer.attrs.relu),
        conv_(register_module(
            "conv", std::make_shared<Conv>(init.Scope("conv"), layer.in_channels,
                                           layer.out_channels, layer.window, layer.attrs.bias))) {
    if (layer.attrs.batch_norm) {
      bn_ = register_module("bn", std::make_shared<BatchNorm>(layer.out_channels));
    }
  }

  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs, const ForwardContext&) override {
    torch::Tensor y = conv_->Forward(inputs[0]);
    if (bn_) y = bn_->Forward(y, is_training());
    return relu_ ? torch::relu(y) : y;
  }

 private:
  bool relu_;
  std::shared_ptr<Conv> conv_;
  std::shared_ptr<BatchNorm> bn_;  // null without a fused BatchNorm
};

// A part (parts.h) as a layer of its own: the part's parameters and buffers are the layer's
// ("weight", "bias", "running_mean"), as torch.nn names them.
template <typename Part>
class PartLayer final : public LayerModule {
 public:
  explicit PartLayer(std::shared_ptr<Part> part) : part_(std::move(part)) {
    for (const auto& item : part_->named_parameters(/*recurse=*/false)) {
      register_parameter(item.key(), item.value());
    }
    for (const auto& item : part_->named_buffers(/*recurse=*/false)) {
      register_buffer(item.key(), item.value());
    }
  }

  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs, const ForwardContext&) override {
    if constexpr (std::is_same_v<Part, BatchNorm>) {
      return part_->Forward(inputs[0], is_training());
    } else {
      return part_->Forward(inputs[0]);
    }
  }

 private:
  std::shared_ptr<Part> part_;
};

// A layer without parameters or state.
class FunctionalLayer final : public LayerModule {
 public:
  using Function = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;
  explicit FunctionalLayer(Function function) : function_(std::move(function)) {}

  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs, const ForwardContext&) override {
    return function_(inputs);
  }

 private:
  Function function_;
};

// Inverted dropout whose keep mask for a row is drawn from (mask seed, step, global sample
// index), so that any split of a batch over ranks draws the same masks as one process would.
class DropoutLayer final : public LayerModule {
 public:
  explicit DropoutLayer(std::uint64_t mask_seed) : mask_seed_(mask_seed) {}

  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs,
                        const ForwardContext& context) override {
    const torch::Tensor& x = inputs[0];
    if (!is_training() || x.size(0) == 0) return x;
    return x * KeepMask(x, context);
  }

 private:
  torch::Tensor KeepMask(const torch::Tensor& x, const ForwardContext& context) const {
    const std::int64_t items = x.numel() / x.size(0);
    const std::uint64_t step_seed = MixSeed(mask_seed_, static_cast<std::uint64_t>(context.step));
    std::vector<torch::Tensor> rows;
    rows.reserve(static_cast<size_t>(x.size(0)));
    for (std::int64_t row = 0; row < x.size(0); ++row) {
      const auto sample = static_cast<std::uint64_t>(context.first_sample + row);
      rows.push_back(torch::rand({items}, MakeGenerator(MixSeed(step_seed, sample))));
    }
    const torch::Tensor keep = torch::stack(rows).ge(kDropoutProbability).view(x.sizes());
    return keep.to(x.options()) * (1.0 / (1.0 - kDropoutProbability));
  }

  std::uint64_t mask_seed_;
};

// Each sample's softmax cross-entropy against ForwardContext::labels: {rows, N} -> {rows, 1}.
class SoftmaxCrossEntropyLayer final : public LayerModule {
 public:
  explicit SoftmaxCrossEntropyLayer(std::string name) : name_(std::move(name)) {}

  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs,
                        const ForwardContext& context) override {
    const torch::Tensor& logits = inputs[0];
    TORCH_CHECK(context.labels.defined(), "loss layer '", name_,
                "' needs the batch's labels in ForwardContext::labels");
    TORCH_CHECK(context.labels.dim() == 1 && context.labels.size(0) == logits.size(0),
                "loss layer '", name_, "': labels have shape ", context.labels.sizes(),
                ", expected {", logits.size(0), "} (one per row)");
    const torch::Tensor labels = context.labels.to(logits.device(), torch::kLong);
    return F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().reduction(torch::kNone))
        .unsqueeze(1);
  }

 private:
  std::string name_;
};

FunctionalLayer::Function PoolFunction(const planner::Layer& layer) {
  const planner::WindowAttrs w = layer.window;
  switch (layer.kind) {
    case planner::LayerKind::kMaxPool2d:
      return [w](const std::vector<torch::Tensor>& in) {
        return torch::max_pool2d(in[0], {w.kernel_h, w.kernel_w}, {w.stride_h, w.stride_w},
                                 {w.pad_h, w.pad_w});
      };
    case planner::LayerKind::kAvgPool2d:
      // ModelBuilder's floor((n + 2p - k) / s) + 1 is ceil_mode=false; torch's default
      // count_include_pad=true (torchvision Inception's F.avg_pool2d) averages padding as zeros.
      return [w](const std::vector<torch::Tensor>& in) {
        return torch::avg_pool2d(in[0], {w.kernel_h, w.kernel_w}, {w.stride_h, w.stride_w},
                                 {w.pad_h, w.pad_w}, /*ceil_mode=*/false,
                                 /*count_include_pad=*/true);
      };
    default: {  // kAdaptiveAvgPool2d
      const std::vector<std::int64_t> size = {layer.output.dims[1], layer.output.dims[2]};
      return [size](const std::vector<torch::Tensor>& in) {
        return torch::adaptive_avg_pool2d(in[0], size);
      };
    }
  }
}

}  // namespace

std::shared_ptr<LayerModule> MakeConv2d(const planner::Layer& layer, const InitScope& init) {
  return std::make_shared<Conv2dLayer>(layer, init);
}

std::shared_ptr<LayerModule> MakeLinear(const planner::Layer& layer, const InitScope& init) {
  return std::make_shared<PartLayer<Dense>>(
      std::make_shared<Dense>(init, layer.in_channels, layer.out_channels, layer.attrs.bias));
}

std::shared_ptr<LayerModule> MakeNorm(const planner::Layer& layer) {
  if (layer.kind == planner::LayerKind::kBatchNorm2d) {
    return std::make_shared<PartLayer<BatchNorm>>(std::make_shared<BatchNorm>(layer.out_channels));
  }
  return std::make_shared<PartLayer<LayerNorm>>(
      std::make_shared<LayerNorm>(layer.out_channels, kLayerNormEps));
}

std::shared_ptr<LayerModule> MakeFunctional(const planner::Layer& layer) {
  using In = const std::vector<torch::Tensor>&;
  FunctionalLayer::Function function;
  switch (layer.kind) {
    case planner::LayerKind::kReLU:
      function = [](In in) { return torch::relu(in[0]); };
      break;
    case planner::LayerKind::kGELU:  // the exact (erf) GELU, as BERT's
      function = [](In in) { return torch::gelu(in[0]); };
      break;
    case planner::LayerKind::kFlatten:
      function = [](In in) { return in[0].flatten(1); };
      break;
    case planner::LayerKind::kConcat:  // planner channels are dim 0 of a sample, dim 1 here
      function = [](In in) { return torch::cat(in, 1); };
      break;
    case planner::LayerKind::kAdd:
      function = [](In in) {
        torch::Tensor sum = in[0] + in[1];
        for (size_t i = 2; i < in.size(); ++i) sum = sum + in[i];
        return sum;
      };
      break;
    default:
      function = PoolFunction(layer);
      break;
  }
  return std::make_shared<FunctionalLayer>(std::move(function));
}

std::shared_ptr<LayerModule> MakeDropout(const planner::Layer&, const InitScope& init) {
  return std::make_shared<DropoutLayer>(init.SeedOf("dropout_mask"));
}

std::shared_ptr<LayerModule> MakeSoftmaxCrossEntropy(const planner::Layer& layer) {
  return std::make_shared<SoftmaxCrossEntropyLayer>(layer.name);
}

}  // namespace wavepool::runtime::internal
