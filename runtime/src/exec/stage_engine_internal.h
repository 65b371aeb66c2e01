// Small helpers shared by the StageEngine's sources.
#ifndef WAVEPOOL_RUNTIME_SRC_EXEC_STAGE_ENGINE_INTERNAL_H_
#define WAVEPOOL_RUNTIME_SRC_EXEC_STAGE_ENGINE_INTERNAL_H_

#include <torch/torch.h>

#include <cstdint>
#include <exception>
#include <map>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "torch_compat.h"
#include "wavepool/planner/model.h"
#include "wavepool/runtime/stage_engine.h"

namespace wavepool::runtime {

// What one instance keeps between its forward and its backward.
struct StageEngine::InstanceState {
  RowRange rows;
  std::map<planner::LayerId, torch::Tensor> outputs;  // graph-attached, by layer
  std::map<planner::LayerId, torch::Tensor> copies;   // detached inputs of in-stage consumers
  std::map<planner::LayerId, torch::Tensor> imports;  // detached inputs from other stages
  torch::Tensor input;
  torch::Tensor labels;
};

namespace internal {

inline std::uint64_t Bytes(const torch::Tensor& t) {
  return t.defined() ? static_cast<std::uint64_t>(t.numel()) * t.element_size() : 0;
}

// "forward of layer 'conv1': <LibTorch's reason>".
inline absl::Status LayerError(const planner::ModelGraph& graph, planner::LayerId id,
                               const char* pass, const std::exception& e) {
  return absl::InternalError(
      absl::StrCat(pass, " of layer '", graph.layer(id).name, "': ", compat::ErrorText(e)));
}

}  // namespace internal
}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_SRC_EXEC_STAGE_ENGINE_INTERNAL_H_
