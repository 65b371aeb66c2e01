// Small graphs and helpers shared by the models tests: between them the two graphs hold every
// executable layer kind, so that a property checked on both holds for every module.
#ifndef WAVEPOOL_TESTS_RUNTIME_MODELS_TEST_GRAPHS_H_
#define WAVEPOOL_TESTS_RUNTIME_MODELS_TEST_GRAPHS_H_

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/planner/model.h"
#include "wavepool/planner/model_builder.h"
#include "wavepool/runtime/executable_model.h"

namespace wavepool::runtime::testing {

// 3x12x12 images: conv (fused BN + ReLU, asymmetric kernel and padding, groups), a bottleneck
// with a downsample, BatchNorm, max- and avg-pools (padded), a fork joined by concat and by add,
// GELU, adaptive pool, flatten, dropout, linear and the loss.
inline absl::StatusOr<planner::ModelGraph> ImageGraph() {
  using planner::ModelBuilder;
  ModelBuilder b("image", planner::TensorShape{{3, 12, 12}});
  ModelBuilder::Conv stem;
  stem.out_channels = 8;
  stem.kernel_h = 3, stem.kernel_w = 1;
  stem.pad_h = 1, stem.pad_w = 0;
  stem.bias = stem.batch_norm = stem.relu = true;
  planner::LayerId x = b.Conv2d("stem", ModelBuilder::kInput, stem);
  ModelBuilder::Conv grouped = ModelBuilder::Square(8, 3, 1, 1);
  grouped.groups = 2;
  const planner::LayerId left = b.Conv2d("grouped", x, grouped);
  const planner::LayerId right = b.AvgPool2d("avg", x, 3, 1, 1);
  x = b.Concat("cat", {left, right});            // 16x12x12
  x = b.ResNetBottleneck("block", x, 4, 2, 64);  // 16x6x6
  const planner::LayerId norm = b.BatchNorm2d("bn", x);
  x = b.Add("sum", {norm, x});
  x = b.GELU("gelu", x);
  x = b.MaxPool2d("max", x, 3, 2, 1);  // 16x3x3
  x = b.ReLU("relu", x);
  x = b.AdaptiveAvgPool2d("adaptive", x, 2, 2);  // 16x2x2
  x = b.Flatten("flat", x);
  x = b.Dropout("drop", x);
  x = b.Linear("fc", x, 5);
  b.SoftmaxCrossEntropy("loss", x);
  return std::move(b).Build();
}

// 10 tokens of a 50-word vocabulary: embeddings, attention, feed-forward, LayerNorm, pooler,
// linear (no loss layer: LossSum applies cross-entropy to the logits).
inline absl::StatusOr<planner::ModelGraph> TokenGraph() {
  using planner::ModelBuilder;
  ModelBuilder b("tokens", planner::TensorShape{{10}});
  planner::LayerId x = b.Embedding("emb", ModelBuilder::kInput, 50, 16, 2, 12);
  x = b.TransformerAttention("att", x, 3);
  x = b.TransformerFeedForward("ffn", x, 20);
  x = b.LayerNorm("norm", x);
  x = b.TransformerPooler("pool", x);
  b.Linear("classifier", x, 4);
  return std::move(b).Build();
}

inline std::shared_ptr<const planner::ModelGraph> Share(planner::ModelGraph graph) {
  return std::make_shared<const planner::ModelGraph>(std::move(graph));
}

// A batch of `rows` samples for `graph`: token ids below `vocabulary` for a token model, N(0, 1)
// features otherwise, drawn from `seed`.
inline torch::Tensor RandomInput(const planner::ModelGraph& graph, std::int64_t rows,
                                 std::int64_t vocabulary, std::uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<std::int64_t> shape = {rows};
  shape.insert(shape.end(), graph.input_shape().dims.begin(), graph.input_shape().dims.end());
  if (vocabulary > 0) return torch::randint(vocabulary, shape, torch::kLong);
  return torch::randn(shape);
}

// Runs every layer in graph order (all must be built), hands each output to `visit` and returns
// the sink's. Outputs are dropped once their last reader ran: the big models' add up.
inline torch::Tensor RunAll(
    ExecutableModel& model, const torch::Tensor& input, const ForwardContext& context,
    const std::function<void(const planner::Layer&, const torch::Tensor&)>& visit = nullptr) {
  const planner::ModelGraph& graph = model.graph();
  std::map<planner::LayerId, torch::Tensor> outputs;
  std::map<planner::LayerId, size_t> readers_left;
  for (const planner::Layer& layer : graph.layers()) {
    readers_left[layer.id] = graph.successors(layer.id).size();
  }
  for (const planner::Layer& layer : graph.layers()) {
    std::vector<torch::Tensor> inputs;
    for (planner::LayerId in : layer.inputs) inputs.push_back(outputs.at(in));
    if (layer.inputs.empty()) inputs.push_back(input);
    outputs[layer.id] = model.Forward(layer.id, inputs, context);
    if (visit) visit(layer, outputs[layer.id]);
    for (planner::LayerId in : layer.inputs) {
      if (--readers_left[in] == 0) outputs.erase(in);
    }
  }
  return outputs.at(graph.sink());
}

}  // namespace wavepool::runtime::testing

#endif  // WAVEPOOL_TESTS_RUNTIME_MODELS_TEST_GRAPHS_H_
