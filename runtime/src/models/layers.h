// The LayerModule of each planner LayerKind (executable_model.h). MakeLayerModule dispatches on
// the kind; the simple layers are in simple_layers.cpp, the composite blocks (ResNet bottleneck,
// BERT embeddings, attention, feed-forward and pooler) in composite_layers.cpp.
//
// Every maker REQUIRES a layer of its kind whose fields ModelBuilder derived (the graph's
// invariants hold); MakeLayerModule checks what a hand-made graph could get wrong.
#ifndef WAVEPOOL_RUNTIME_SRC_MODELS_LAYERS_H_
#define WAVEPOOL_RUNTIME_SRC_MODELS_LAYERS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "init.h"
#include "wavepool/planner/model.h"
#include "wavepool/runtime/executable_model.h"

namespace wavepool::runtime::internal {

// "layer 'conv1' of model 'cnn_tiny'": how messages name a layer.
std::string LayerWhere(const planner::ModelGraph& graph, const planner::Layer& layer);

// The module of `layer` with weights drawn from (seed, layer.name). InvalidArgument naming the
// layer, its model and its type for a kOpaque layer, and for a layer whose fields no module fits
// (a loss over more than one dim, a module whose parameter count differs from layer.params).
absl::StatusOr<std::shared_ptr<LayerModule>> MakeLayerModule(const planner::ModelGraph& graph,
                                                             const planner::Layer& layer,
                                                             std::uint64_t seed);

// The probability that dropout zeroes an item: torch.nn.Dropout's default, and torchvision's
// Inception-v3 (the planner's graph does not carry p).
inline constexpr double kDropoutProbability = 0.5;

// simple_layers.cpp
std::shared_ptr<LayerModule> MakeConv2d(const planner::Layer& layer, const InitScope& init);
std::shared_ptr<LayerModule> MakeLinear(const planner::Layer& layer, const InitScope& init);
std::shared_ptr<LayerModule> MakeNorm(const planner::Layer& layer);  // batchnorm2d, layernorm
// relu, gelu, maxpool2d, avgpool2d, adaptiveavgpool2d, flatten, concat, add: no parameters.
std::shared_ptr<LayerModule> MakeFunctional(const planner::Layer& layer);
std::shared_ptr<LayerModule> MakeDropout(const planner::Layer& layer, const InitScope& init);
std::shared_ptr<LayerModule> MakeSoftmaxCrossEntropy(const planner::Layer& layer);

// composite_layers.cpp
std::shared_ptr<LayerModule> MakeResNetBottleneck(const planner::Layer& layer,
                                                  const InitScope& init);
std::shared_ptr<LayerModule> MakeEmbedding(const planner::Layer& layer, const InitScope& init);
std::shared_ptr<LayerModule> MakeTransformerAttention(const planner::Layer& layer,
                                                      const InitScope& init);
std::shared_ptr<LayerModule> MakeTransformerFeedForward(const planner::Layer& layer,
                                                        const InitScope& init);
std::shared_ptr<LayerModule> MakeTransformerPooler(const planner::Layer& layer,
                                                   const InitScope& init);

}  // namespace wavepool::runtime::internal

#endif  // WAVEPOOL_RUNTIME_SRC_MODELS_LAYERS_H_
