// ModelBuilder derives every layer's shapes, parameter count and FLOPs from the architecture, the
// way the framework would, so that the zoo and tests never type a shape in by hand.
#ifndef WAVEPOOL_PLANNER_MODEL_BUILDER_H_
#define WAVEPOOL_PLANNER_MODEL_BUILDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/planner/model.h"

namespace wavepool::planner {

// Builds a ModelGraph layer by layer. Not thread-safe. Each method returns the new layer's id; an
// invalid request (a kernel larger than its padded input, a join of mismatched shapes) records
// the first error, returns a placeholder id, and makes Build() fail with that error.
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

  LayerId Conv2d(const std::string& name, LayerId in, const Conv& conv);
  LayerId Linear(const std::string& name, LayerId in, std::int64_t out_features, bool bias = true);
  LayerId ReLU(const std::string& name, LayerId in);
  LayerId GELU(const std::string& name, LayerId in);
  LayerId BatchNorm2d(const std::string& name, LayerId in);
  LayerId MaxPool2d(const std::string& name, LayerId in, int kernel, int stride, int pad = 0);
  LayerId AvgPool2d(const std::string& name, LayerId in, int kernel, int stride, int pad = 0);
  LayerId AdaptiveAvgPool2d(const std::string& name, LayerId in, int out_h, int out_w);
  LayerId Flatten(const std::string& name, LayerId in);
  LayerId Dropout(const std::string& name, LayerId in);
  LayerId Concat(const std::string& name, const std::vector<LayerId>& ins);  // along channels
  LayerId Add(const std::string& name, const std::vector<LayerId>& ins);
  // A torchvision Bottleneck (1x1, 3x3 with `stride`, 1x1 to planes*4, BN and ReLU after each,
  // a 1x1 strided downsample when shapes change) as one layer; width = planes*base_width/64.
  LayerId ResNetBottleneck(const std::string& name, LayerId in, std::int64_t planes, int stride,
                           int base_width = 64);
  // BERT-style embeddings of `seq_len` tokens into `hidden` features (input shape {seq_len}).
  LayerId Embedding(const std::string& name, LayerId in, std::int64_t vocab,
                    std::int64_t max_positions, std::int64_t type_vocab, std::int64_t hidden);
  LayerId TransformerAttention(const std::string& name, LayerId in, int heads);
  LayerId TransformerFeedForward(const std::string& name, LayerId in, std::int64_t intermediate);
  LayerId SoftmaxCrossEntropy(const std::string& name, LayerId in);
  // A layer the builder does not model: its shapes and costs are given (layer tables).
  LayerId Opaque(const std::string& name, const std::vector<LayerId>& ins, TensorShape output,
                 std::int64_t params, double forward_flops, double backward_flops);

  // The shape a layer id (or kInput) produces.
  const TensorShape& OutputShape(LayerId id) const;
  // Attaches a measured per-sample forward+backward time to a layer.
  void SetMeasuredTime(LayerId id, Seconds per_sample);

  // The validated graph, or the first error recorded.
  absl::StatusOr<ModelGraph> Build() &&;

 private:
  LayerId Append(Layer layer);
  LayerId Fail(absl::Status status);

  std::string name_;
  TensorShape input_shape_;
  std::vector<Layer> layers_;
  absl::Status first_error_;
};

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_MODEL_BUILDER_H_
