// Builders of the built-in models, one per architecture; zoo.cpp maps names to them.
#ifndef WAVEPOOL_PLANNER_SRC_ZOO_ZOO_INTERNAL_H_
#define WAVEPOOL_PLANNER_SRC_ZOO_ZOO_INTERNAL_H_

#include "absl/status/statusor.h"
#include "wavepool/planner/model.h"

namespace wavepool::planner::internal {

absl::StatusOr<ModelGraph> BuildVgg16();            // zoo_cnn.cpp
absl::StatusOr<ModelGraph> BuildResNet50();         // zoo_cnn.cpp
absl::StatusOr<ModelGraph> BuildWideResNet101_2();  // zoo_cnn.cpp
absl::StatusOr<ModelGraph> BuildInceptionV3();      // zoo_inception.cpp
absl::StatusOr<ModelGraph> BuildBertBase();         // zoo_transformer.cpp
absl::StatusOr<ModelGraph> BuildMlpTiny();          // zoo_small.cpp
absl::StatusOr<ModelGraph> BuildCnnTiny();          // zoo_small.cpp
absl::StatusOr<ModelGraph> BuildBranchyTiny();      // zoo_small.cpp

}  // namespace wavepool::planner::internal

#endif  // WAVEPOOL_PLANNER_SRC_ZOO_ZOO_INTERNAL_H_
