// Built-in models: the real architectures at the granularity DeepPool profiled them.
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

// Builds the named model; NotFound lists the known names. Aliases: "wrn101_2" for
// wide_resnet101_2 (the DeepPool profile's name).
absl::StatusOr<ModelGraph> BuiltinModel(std::string_view name);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_ZOO_H_
