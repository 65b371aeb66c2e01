// The modules of the planner's composite layers: torchvision's ResNet Bottleneck and Hugging
// Face's BERT embeddings, attention, feed-forward and pooler blocks, each one layer.
#include <cmath>
#include <utility>
#include <vector>

#include "layers.h"
#include "parts.h"

namespace wavepool::runtime::internal {
namespace {

planner::WindowAttrs Window(int kernel, int stride, int pad) {
  planner::WindowAttrs window;
  window.kernel_h = window.kernel_w = kernel;
  window.stride_h = window.stride_w = stride;
  window.pad_h = window.pad_w = pad;
  return window;
}

// torchvision.models.resnet.Bottleneck (v1.5: the stride on the 3x3 conv), parameters named as
// there but for the downsample pair ("downsample_conv", "downsample_bn").
class BottleneckLayer final : public LayerModule {
 public:
  BottleneckLayer(const planner::Layer& layer, const InitScope& init) {
    const std::int64_t in = layer.in_channels;
    const std::int64_t out = layer.out_channels;
    const std::int64_t width = layer.attrs.planes * layer.attrs.base_width / 64;  // as the planner
    const int stride = layer.window.stride_h;
    conv1_ = AddConv(init, "conv1", in, width, Window(1, 1, 0));
    bn1_ = register_module("bn1", std::make_shared<BatchNorm>(width));
    conv2_ = AddConv(init, "conv2", width, width, Window(3, stride, 1));
    bn2_ = register_module("bn2", std::make_shared<BatchNorm>(width));
    conv3_ = AddConv(init, "conv3", width, out, Window(1, 1, 0));
    bn3_ = register_module("bn3", std::make_shared<BatchNorm>(out));
    if (stride != 1 || in != out) {
      downsample_conv_ = AddConv(init, "downsample_conv", in, out, Window(1, stride, 0));
      downsample_bn_ = register_module("downsample_bn", std::make_shared<BatchNorm>(out));
    }
  }

  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs, const ForwardContext&) override {
    const torch::Tensor& x = inputs[0];
    const bool training = is_training();
    torch::Tensor y = torch::relu(bn1_->Forward(conv1_->Forward(x), training));
    y = torch::relu(bn2_->Forward(conv2_->Forward(y), training));
    y = bn3_->Forward(conv3_->Forward(y), training);
    const torch::Tensor identity =
        downsample_conv_ ? downsample_bn_->Forward(downsample_conv_->Forward(x), training) : x;
    return torch::relu(y + identity);
  }

 private:
  std::shared_ptr<Conv> AddConv(const InitScope& init, const char* name, std::int64_t in,
                                std::int64_t out, const planner::WindowAttrs& window) {
    return register_module(name, std::make_shared<Conv>(init.Scope(name), in, out, window, false));
  }

  std::shared_ptr<Conv> conv1_, conv2_, conv3_, downsample_conv_;
  std::shared_ptr<BatchNorm> bn1_, bn2_, bn3_, downsample_bn_;
};

// Hugging Face BertEmbeddings: word (padding_idx 0) + position + token type (every type id 0)
// embeddings, summed, then LayerNorm (eps 1e-12). Tables are N(0, 0.02), the padding row zero,
// as BertPreTrainedModel._init_weights leaves them. Dropout is not modelled (as in the planner).
class EmbeddingLayer final : public LayerModule {
 public:
  EmbeddingLayer(const planner::Layer& layer, const InitScope& init) {
    const std::int64_t hidden = layer.out_channels;
    words_ = AddTable(init, "word_embeddings", layer.in_channels, hidden);
    {
      torch::NoGradGuard no_grad;
      words_->weight()[kPaddingIndex].zero_();
    }
    positions_ = AddTable(init, "position_embeddings", layer.attrs.max_positions, hidden);
    if (layer.attrs.type_vocab > 0) {
      types_ = AddTable(init, "token_type_embeddings", layer.attrs.type_vocab, hidden);
    }
    norm_ = register_module("LayerNorm", std::make_shared<LayerNorm>(hidden, kBertLayerNormEps));
  }

  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs, const ForwardContext&) override {
    const torch::Tensor& ids = inputs[0];  // {rows, T} int64
    torch::Tensor sum = torch::embedding(words_->weight(), ids, kPaddingIndex) +
                        positions_->weight().narrow(0, 0, ids.size(1));
    if (types_) sum = sum + types_->weight()[0];  // token type 0 for every token
    return norm_->Forward(sum);
  }

 private:
  static constexpr std::int64_t kPaddingIndex = 0;  // BERT's [PAD]
  static constexpr double kStd = 0.02;              // BertConfig.initializer_range

  std::shared_ptr<EmbeddingTable> AddTable(const InitScope& init, const char* name,
                                           std::int64_t entries, std::int64_t hidden) {
    return register_module(
        name, std::make_shared<EmbeddingTable>(init.Scope(name), entries, hidden, kStd));
  }

  std::shared_ptr<EmbeddingTable> words_, positions_, types_;
  std::shared_ptr<LayerNorm> norm_;
};

// Hugging Face BertSelfAttention (no mask: every token attends to every token) and BertSelfOutput
// (dense, residual add, LayerNorm). Attention dropout is not modelled.
class AttentionLayer final : public LayerModule {
 public:
  AttentionLayer(const planner::Layer& layer, const InitScope& init)
      : heads_(layer.attrs.heads), hidden_(layer.out_channels) {
    query_ = AddDense(init, "query");
    key_ = AddDense(init, "key");
    value_ = AddDense(init, "value");
    dense_ = AddDense(init, "dense");
    norm_ = register_module("LayerNorm", std::make_shared<LayerNorm>(hidden_, kBertLayerNormEps));
  }

  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs, const ForwardContext&) override {
    const torch::Tensor& x = inputs[0];  // {rows, T, D}
    const std::int64_t rows = x.size(0), tokens = x.size(1), head_size = hidden_ / heads_;
    // {rows, T, D} -> {rows, heads, T, head_size}
    auto split = [&](const torch::Tensor& t) {
      return t.view({rows, tokens, heads_, head_size}).transpose(1, 2);
    };
    const torch::Tensor q = split(query_->Forward(x));
    const torch::Tensor k = split(key_->Forward(x));
    const torch::Tensor v = split(value_->Forward(x));
    const torch::Tensor scores =
        torch::matmul(q, k.transpose(-1, -2)) / std::sqrt(static_cast<double>(head_size));
    const torch::Tensor context = torch::matmul(torch::softmax(scores, -1), v)
                                      .transpose(1, 2)
                                      .reshape({rows, tokens, hidden_});
    return norm_->Forward(dense_->Forward(context) + x);
  }

 private:
  std::shared_ptr<Dense> AddDense(const InitScope& init, const char* name) {
    return register_module(name, std::make_shared<Dense>(init.Scope(name), hidden_, hidden_, true));
  }

  std::int64_t heads_, hidden_;
  std::shared_ptr<Dense> query_, key_, value_, dense_;
  std::shared_ptr<LayerNorm> norm_;
};

// Hugging Face BertIntermediate (dense D -> I, GELU) and BertOutput (dense I -> D, residual add,
// LayerNorm).
class FeedForwardLayer final : public LayerModule {
 public:
  FeedForwardLayer(const planner::Layer& layer, const InitScope& init) {
    const std::int64_t hidden = layer.out_channels;
    const std::int64_t intermediate = layer.attrs.intermediate;
    intermediate_ = register_module(
        "intermediate",
        std::make_shared<Dense>(init.Scope("intermediate"), hidden, intermediate, true));
    output_ = register_module(
        "output", std::make_shared<Dense>(init.Scope("output"), intermediate, hidden, true));
    norm_ = register_module("LayerNorm", std::make_shared<LayerNorm>(hidden, kBertLayerNormEps));
  }

  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs, const ForwardContext&) override {
    const torch::Tensor& x = inputs[0];
    return norm_->Forward(output_->Forward(torch::gelu(intermediate_->Forward(x))) + x);
  }

 private:
  std::shared_ptr<Dense> intermediate_, output_;
  std::shared_ptr<LayerNorm> norm_;
};

// Hugging Face BertPooler: tanh(dense(h[:, 0])), {rows, T, D} -> {rows, D}.
class PoolerLayer final : public LayerModule {
 public:
  PoolerLayer(const planner::Layer& layer, const InitScope& init) {
    dense_ = register_module(
        "dense",
        std::make_shared<Dense>(init.Scope("dense"), layer.out_channels, layer.out_channels, true));
  }

  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs, const ForwardContext&) override {
    return torch::tanh(dense_->Forward(inputs[0].select(1, 0)));
  }

 private:
  std::shared_ptr<Dense> dense_;
};

}  // namespace

std::shared_ptr<LayerModule> MakeResNetBottleneck(const planner::Layer& layer,
                                                  const InitScope& init) {
  return std::make_shared<BottleneckLayer>(layer, init);
}

std::shared_ptr<LayerModule> MakeEmbedding(const planner::Layer& layer, const InitScope& init) {
  return std::make_shared<EmbeddingLayer>(layer, init);
}

std::shared_ptr<LayerModule> MakeTransformerAttention(const planner::Layer& layer,
                                                      const InitScope& init) {
  return std::make_shared<AttentionLayer>(layer, init);
}

std::shared_ptr<LayerModule> MakeTransformerFeedForward(const planner::Layer& layer,
                                                        const InitScope& init) {
  return std::make_shared<FeedForwardLayer>(layer, init);
}

std::shared_ptr<LayerModule> MakeTransformerPooler(const planner::Layer& layer,
                                                   const InitScope& init) {
  return std::make_shared<PoolerLayer>(layer, init);
}

}  // namespace wavepool::runtime::internal
