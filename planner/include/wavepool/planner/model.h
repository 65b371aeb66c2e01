// A DNN model as the planner sees it: a DAG of layers with per-sample shapes, parameter counts and
// FLOPs. Shapes are derived from the architecture by ModelBuilder (model_builder.h), never typed
// in.
#ifndef WAVEPOOL_PLANNER_MODEL_H_
#define WAVEPOOL_PLANNER_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/planner/units.h"

namespace wavepool::planner {

// Index of a layer in ModelGraph::layers(); layers are stored in a topological order.
using LayerId = int;

// Per-sample tensor shape, without the batch dimension: {C, H, W} for images, {T, D} for tokens,
// {N} for flat features.
struct TensorShape {
  std::vector<std::int64_t> dims;

  std::int64_t Elements() const;
  std::string ToString() const;  // "[64,56,56]"
  bool operator==(const TensorShape& other) const { return dims == other.dims; }
  bool operator!=(const TensorShape& other) const { return dims != other.dims; }
};

enum class LayerKind {
  kConv2d,  // optionally followed by fused BatchNorm and ReLU (ConvAttrs)
  kLinear,
  kReLU,
  kGELU,
  kBatchNorm2d,
  kLayerNorm,
  kMaxPool2d,
  kAvgPool2d,
  kAdaptiveAvgPool2d,
  kFlatten,
  kDropout,
  kConcat,            // channel concatenation of every input (a join)
  kAdd,               // element-wise sum of every input (a join)
  kResNetBottleneck,  // a whole ResNet bottleneck block as one layer (DeepPool's WRN granularity)
  kEmbedding,         // token + position (+ type) embeddings, with their LayerNorm
  kTransformerAttention,    // multi-head self-attention with its residual add and LayerNorm
  kTransformerFeedForward,  // two-layer MLP with its residual add and LayerNorm
  kTransformerPooler,       // the first token's hidden state through a dense layer and tanh
  kSoftmaxCrossEntropy,
  kOpaque,  // a layer from a layer table whose type the planner does not know
};

std::string_view LayerKindName(LayerKind kind);
std::optional<LayerKind> ParseLayerKind(std::string_view name);

// Geometry of a windowed layer (convolution or pooling); spatial dims are {height, width}.
struct WindowAttrs {
  int kernel_h = 1, kernel_w = 1;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  int groups = 1;

  bool operator==(const WindowAttrs& other) const;
  bool operator!=(const WindowAttrs& other) const { return !(*this == other); }
};

// Settings of a layer that its shapes and window do not determine, kept so that a layer table
// (layer_table.h) can rebuild the layer. Fields not used by a kind stay at their defaults.
struct LayerAttrs {
  bool bias = false;               // kConv2d, kLinear: the layer adds a bias
  bool batch_norm = false;         // kConv2d: a fused BatchNorm follows the convolution
  bool relu = false;               // kConv2d: a fused ReLU follows (after the BatchNorm)
  std::int64_t planes = 0;         // kResNetBottleneck (out_channels = planes * 4)
  std::int64_t base_width = 0;     // kResNetBottleneck (width = planes * base_width / 64)
  std::int64_t max_positions = 0;  // kEmbedding (vocabulary = in_channels)
  std::int64_t type_vocab = 0;     // kEmbedding (0: no token type embeddings)
  int heads = 0;                   // kTransformerAttention
  std::int64_t intermediate = 0;   // kTransformerFeedForward

  bool operator==(const LayerAttrs& other) const;
  bool operator!=(const LayerAttrs& other) const { return !(*this == other); }
};

// One node of the graph. ModelBuilder (model_builder.h) documents how each kind's fields are
// derived: in_channels/out_channels are the channel dimension of `input`/`output` ({C,H,W} -> C,
// otherwise the last dim), except conv (Cin, Cout), linear (in/out features), ResNetBottleneck
// (inplanes, planes*4) and Embedding (vocabulary, hidden).
struct Layer {
  LayerId id = 0;
  std::string name;  // unique in its graph; no ',', ';', '"' or line breaks (layer tables)
  LayerKind kind = LayerKind::kOpaque;
  // kOpaque: the type its layer table gave ("my_head"), so that errors and FormatLayerTable can
  // name it; empty for every other kind.
  std::string opaque_type;
  // Predecessors; empty for a layer that reads the model input. Joins (kConcat, kAdd) have >= 2.
  std::vector<LayerId> inputs;
  TensorShape input;   // what the layer reads per sample (for a join: its first input)
  TensorShape output;  // what it writes per sample
  WindowAttrs window;  // for convolutions and pools (and a bottleneck's 3x3 conv)
  LayerAttrs attrs;
  std::int64_t in_channels = 0;   // C in the paradl-oracle paper's notation
  std::int64_t out_channels = 0;  // F (filters) for convolutions, out_features for linear layers
  std::int64_t params = 0;        // trainable parameters (items, weights and biases)
  double forward_flops = 0;       // per sample
  double backward_flops = 0;      // per sample: input gradient plus weight gradient
  // True when the framework reuses the output buffer in place (ReLU, BatchNorm after a conv), so
  // it adds no activation memory (paradl-oracle §4.3, the memory reuse factor).
  bool reuses_input_memory = false;
  // Activation items kept for the backward pass per sample beyond `output` (composite layers keep
  // their internal activations; 0 for simple layers).
  std::int64_t internal_activation_items = 0;
  // Measured forward+backward time of one sample, when the layer came from a measured table.
  std::optional<Seconds> measured_time_per_sample;

  bool IsJoin() const { return inputs.size() >= 2; }
  // Works on its single input's buffer (an in-place op, or a flatten view of it), so it must run
  // where its input is.
  bool WorksInPlace() const {
    return inputs.size() == 1 && (reuses_input_memory || kind == LayerKind::kFlatten);
  }
  // Field-by-field equality (doubles compared exactly).
  bool operator==(const Layer& other) const;
  bool operator!=(const Layer& other) const { return !(*this == other); }
  Bytes ParamBytes() const { return params * kBytesPerItem; }
  Bytes OutputBytesPerSample() const { return output.Elements() * kBytesPerItem; }
};

// An immutable, validated model graph. Thread-compatible: const methods may be called
// concurrently. Invariants:
//   - layers()[i].id == i; every input of layer i is < i, and no input is listed twice;
//   - layer names are non-empty, unique, and hold no ',', ';', '"' or line break;
//   - exactly one layer has no successor (the sink);
//   - a layer without inputs reads input_shape(); any other layer's `input` is the output of its
//     first input;
//   - an Add's inputs all have its output shape; a Concat's inputs agree in every dim but the
//     first (channels), whose sum is the Concat's output channels.
class ModelGraph {
 public:
  // Validates the invariants above; InvalidArgument names the layer. A layer whose `input` is
  // left empty (no dims) gets it filled in from the model input or its first input's output.
  static absl::StatusOr<ModelGraph> Create(std::string name, TensorShape input_shape,
                                           std::vector<Layer> layers);

  const std::string& name() const { return name_; }
  const TensorShape& input_shape() const { return input_shape_; }
  const std::vector<Layer>& layers() const { return layers_; }
  const Layer& layer(LayerId id) const { return layers_[static_cast<size_t>(id)]; }
  int size() const { return static_cast<int>(layers_.size()); }
  const std::vector<LayerId>& successors(LayerId id) const {
    return successors_[static_cast<size_t>(id)];
  }
  LayerId sink() const { return sink_; }
  // The layer named `name`, or nullopt.
  std::optional<LayerId> Find(std::string_view name) const;

  std::int64_t TotalParams() const;
  double ForwardFlopsPerSample() const;
  double BackwardFlopsPerSample() const;
  // Activation items stored per sample for the backward pass, counting every layer's output
  // (and internal activations), minus those of in-place layers when `with_reuse`.
  std::int64_t ActivationItemsPerSample(bool with_reuse) const;
  // True when the graph is a single chain (no forks or joins).
  bool IsChain() const;

  // Same name, input shape and layers (Layer::operator==).
  bool operator==(const ModelGraph& other) const;
  bool operator!=(const ModelGraph& other) const { return !(*this == other); }

 private:
  ModelGraph() = default;

  std::string name_;
  TensorShape input_shape_;
  std::vector<Layer> layers_;
  std::vector<std::vector<LayerId>> successors_;
  LayerId sink_ = 0;
};

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_MODEL_H_
