// Built-in models: the real architectures at the granularity DeepPool profiled them
// (deeppool-burst-parallel §6, Table 3), so that data/profiles/deeppool_a100_layer_profiles.csv
// binds to them row by row (profile.h).
//   vgg16             3x224x224, a chain of 37: 13 conv3x3 (bias) each followed by a ReLU layer,
//                     5 max-pools, flatten, 3 linear with 2 ReLUs. 138,357,544 parameters.
//   resnet50          3x224x224, torchvision's ResNet-50 with its residual forks and joins: convs
//                     with fused BatchNorm (and ReLU), Add, ReLU. 25,557,032 parameters.
//   wide_resnet101_2  3x224x224, a chain of 39: stem conv (fused BN), ReLU, max-pool, 33
//                     ResNetBottleneck layers, avg-pool, flatten, fc. 126,886,696 parameters.
//   inception_v3      3x299x299, torchvision's Inception3 without aux logits: 94 BasicConv2d
//                     layers (conv + BN + ReLU), 13 pools, 11 block Concats and 4 nested ones in
//                     the E blocks, then avg-pool, dropout, flatten, fc. 23,834,568 parameters.
//   bert_base         128 tokens: embeddings, 12 x (attention, feed-forward), the pooler, a
//                     768->2 classifier and the loss. 109,482,240 + 1,538.
//   mlp_tiny, cnn_tiny, branchy_tiny   small models for tests and local mode; branchy_tiny has
//                     a nested fork and an identity (empty) branch.
#ifndef WAVEPOOL_PLANNER_ZOO_H_
#define WAVEPOOL_PLANNER_ZOO_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/planner/model.h"

namespace wavepool::planner {

// Names accepted by BuiltinModel, in a stable order: vgg16, resnet50, wide_resnet101_2,
// inception_v3, bert_base, then the small CPU-friendly models (mlp_tiny, cnn_tiny, branchy_tiny).
std::vector<std::string> BuiltinModelNames();

// Builds the named model, matched as SameName matches names (any case, '-' and '_' ignored:
// "VGG-16" is vgg16); NotFound suggests the closest names (names.h) and lists the known ones.
// Aliases: "wrn101_2" for wide_resnet101_2 (the DeepPool profile's name).
absl::StatusOr<ModelGraph> BuiltinModel(std::string_view name);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_ZOO_H_
