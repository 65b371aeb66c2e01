// ModelBuilder derives every layer's shapes, parameter count and FLOPs from the architecture, the
// way the framework would, so that the zoo and tests never type a shape in by hand.
//
// Conventions (docs/planner.md, "The model graph", has the worked derivations):
//   - Shapes are per sample, as PyTorch computes them: a window of kernel k, stride s, padding p
//     over n gives floor((n + 2p - k) / s) + 1 (pools with ceil_mode=false).
//   - Parameters are trainable items as torchvision / Hugging Face count them (BatchNorm and
//     LayerNorm: 2 per channel; running statistics are buffers, not parameters).
//   - FLOPs are per sample; a multiply-add is 2 FLOPs. Backward = 2 x forward for a layer with
//     parameters (input gradient + weight gradient), = forward for a layer without.
//     Per-element costs: ReLU, Dropout, Concat (a copy) 1; Add (n inputs) n-1; pools k_h*k_w per
//     output element; BatchNorm and LayerNorm 5 (sum and sum of squares 3, then x*a+b 2);
//     GELU 8; softmax 5 (max, subtract, exp, sum, divide); Flatten 0 (a view).
//   - reuses_input_memory is true for ReLU, GELU, BatchNorm2d and Dropout only (the in-place ops
//     that paradl-oracle §4.3's memory reuse factor leaves out).
//   - in_channels/out_channels: see Layer (model.h).
#ifndef WAVEPOOL_PLANNER_MODEL_BUILDER_H_
#define WAVEPOOL_PLANNER_MODEL_BUILDER_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/planner/model.h"

namespace wavepool::planner {

// Builds a ModelGraph layer by layer. Not thread-safe; a builder is used once (Build() consumes
// it). Each method returns the new layer's id; an invalid request (a kernel larger than its padded
// input, a join of mismatched shapes, groups that do not divide the channels, a zero or negative
// size, an unknown layer id, a duplicate name, sizes whose parameter or activation counts would
// pass 2^63 / kBytesPerItem items, naming the attribute that did it) records the first error,
// naming the layer, returns
// kInput as a placeholder, and makes Build() fail with that error (InvalidArgument). Once an error
// is recorded, later calls do nothing.
class ModelBuilder {
 public:
  // Stands for the model input where a layer id is expected.
  static constexpr LayerId kInput = -1;

  ModelBuilder(std::string model_name, TensorShape input_shape);

  struct Conv {
    std::int64_t out_channels = 0;
    int kernel_h = 1, kernel_w = 1;
    int stride = 1;
    int pad_h = 0, pad_w = 0;
    int groups = 1;
    bool bias = false;
    // Fused BatchNorm and ReLU (torchvision's BasicConv2d); the fused ops add their parameters
    // and FLOPs, and reuse the conv's output buffer.
    bool batch_norm = false;
    bool relu = false;
  };
  // Square kernel helper: Conv{.out_channels = c, .kernel_h = k, .kernel_w = k, ...}.
  static Conv Square(std::int64_t out_channels, int kernel, int stride = 1, int pad = 0);

  // {Cin,H,W} -> {Cout,Ho,Wo}. params = Cout*Cin/groups*kh*kw (+Cout bias) (+2*Cout BN);
  // forward = 2*(Cin/groups)*kh*kw*Cout*Ho*Wo (+Cout*Ho*Wo bias) (+5/element BN, +1 ReLU).
  LayerId Conv2d(const std::string& name, LayerId in, const Conv& conv);
  // Applies to the last dim: {..., D} -> {..., out}. params = D*out (+out);
  // forward = rows*(2*D*out (+out)), rows = elements / D.
  LayerId Linear(const std::string& name, LayerId in, std::int64_t out_features, bool bias = true);
  LayerId ReLU(const std::string& name, LayerId in);
  LayerId GELU(const std::string& name, LayerId in);
  // REQUIRES: a {C,H,W} input. params = 2*C.
  LayerId BatchNorm2d(const std::string& name, LayerId in);
  // Normalises the last dim D; params = 2*D.
  LayerId LayerNorm(const std::string& name, LayerId in);
  LayerId MaxPool2d(const std::string& name, LayerId in, int kernel, int stride, int pad = 0);
  LayerId AvgPool2d(const std::string& name, LayerId in, int kernel, int stride, int pad = 0);
  // PyTorch's adaptive windows: row i covers [floor(i*H/out_h), ceil((i+1)*H/out_h)).
  LayerId AdaptiveAvgPool2d(const std::string& name, LayerId in, int out_h, int out_w);
  // torch.flatten(x, 1): any shape -> {elements}.
  LayerId Flatten(const std::string& name, LayerId in);
  LayerId Dropout(const std::string& name, LayerId in);
  // Concatenation along channels (dim 0) of >= 2 distinct layers (not kInput) whose other dims
  // agree.
  LayerId Concat(const std::string& name, const std::vector<LayerId>& ins);
  // Element-wise sum of >= 2 distinct layers (not kInput) of one shape.
  LayerId Add(const std::string& name, const std::vector<LayerId>& ins);
  // A torchvision Bottleneck (1x1, 3x3 with `stride`, 1x1 to planes*4, BN and ReLU after each,
  // a 1x1 strided downsample conv + BN when stride != 1 or Cin != planes*4, the residual add and
  // ReLU) as one layer; width = floor(planes*base_width/64). window = {3x3, stride, pad 1}.
  // internal_activation_items = the outputs of conv1, conv2, conv3 and the downsample conv
  // (BatchNorm and ReLU outputs reuse them, as paradl-oracle §4.3 counts memory).
  LayerId ResNetBottleneck(const std::string& name, LayerId in, std::int64_t planes, int stride,
                           int base_width = 64);
  // BERT-style embeddings of `seq_len` tokens into `hidden` features (input shape {seq_len}, token
  // ids): word + position (+ token type, none when type_vocab is 0) embeddings, summed, then
  // LayerNorm. params = (vocab + max_positions + type_vocab)*hidden + 2*hidden; in_channels =
  // vocab, out_channels = hidden; internal = the sum before LayerNorm (T*hidden).
  // REQUIRES: seq_len <= max_positions.
  LayerId Embedding(const std::string& name, LayerId in, std::int64_t vocab,
                    std::int64_t max_positions, std::int64_t type_vocab, std::int64_t hidden);
  // Multi-head self-attention over {T,D} with its output projection, residual add and LayerNorm
  // (HF BertAttention). params = 4*(D*D + D) + 2*D; forward = 4 projections 4*T*(2*D*D + D),
  // QK^T and AV 2*T*T*D each, scale + softmax 6*heads*T*T, residual T*D, LayerNorm 5*T*D.
  // internal = Q, K, V, the context and the pre-LayerNorm sum (5*T*D) + probabilities heads*T*T.
  // REQUIRES: heads divides D.
  LayerId TransformerAttention(const std::string& name, LayerId in, int heads);
  // D -> intermediate (GELU) -> D with residual add and LayerNorm (HF BertIntermediate +
  // BertOutput). params = D*I + I + I*D + D + 2*D; internal = the intermediate before and after
  // GELU and the pre-LayerNorm sum (2*T*I + T*D).
  LayerId TransformerFeedForward(const std::string& name, LayerId in, std::int64_t intermediate);
  // Hugging Face BertPooler: the first token's hidden state through a D -> D dense layer and
  // tanh, {T,D} -> {D}. params = D*D + D; forward = 2*D*D (matmul) + D (bias) + D (tanh).
  LayerId TransformerPooler(const std::string& name, LayerId in);
  // Softmax over the last dim and the negative log-likelihood: {..., N} -> {1} (the loss);
  // forward = 5 per input element + 1 per row; internal = the probabilities (input elements).
  LayerId SoftmaxCrossEntropy(const std::string& name, LayerId in);
  // A layer the builder does not model: its shapes and costs are given (layer tables). `ins`
  // empty: it reads the model input. `type` is the name the table gave its kind
  // (Layer::opaque_type).
  LayerId Opaque(const std::string& name, const std::vector<LayerId>& ins, TensorShape output,
                 std::int64_t params, double forward_flops, double backward_flops,
                 std::string type = "opaque");

  // The shape a layer id (or kInput) produces; an empty shape for an unknown id.
  const TensorShape& OutputShape(LayerId id) const;
  // Attaches a measured per-sample forward+backward time to a layer (>= 0).
  void SetMeasuredTime(LayerId id, Seconds per_sample);
  // The first error recorded so far (OK when none).
  const absl::Status& status() const { return first_error_; }
  // Layers added so far.
  int size() const { return static_cast<int>(layers_.size()); }
  // A layer added so far. REQUIRES: 0 <= id < size().
  const Layer& layer(LayerId id) const { return layers_[static_cast<size_t>(id)]; }

  // The validated graph, or the first error recorded.
  absl::StatusOr<ModelGraph> Build() &&;

 private:
  // Starts a layer that reads `ins` (validating the name and ids); false after an error.
  bool Start(const std::string& name, LayerKind kind, const std::vector<LayerId>& ins,
             Layer& layer);
  // Validates {C,H,W} input and a window over it; false (error recorded) when invalid.
  bool CheckWindow(const Layer& layer, int kernel_h, int kernel_w, int stride, int pad_h,
                   int pad_w);
  LayerId Pool(const std::string& name, LayerKind kind, LayerId in, int kernel, int stride,
               int pad);
  LayerId Elementwise(const std::string& name, LayerKind kind, LayerId in, double flops_per_item);
  LayerId Join(const std::string& name, LayerKind kind, const std::vector<LayerId>& ins);
  // Fills the derived fields common to all kinds and appends the layer.
  LayerId Append(Layer layer);
  // Records `message` about `layer` as the first error (if none yet); returns kInput.
  LayerId Fail(const Layer& layer, const std::string& message);

  std::string name_;
  TensorShape input_shape_;
  std::vector<Layer> layers_;
  std::set<std::string> names_;
  absl::Status first_error_;
};

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_MODEL_BUILDER_H_
