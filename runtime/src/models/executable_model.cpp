#include "wavepool/runtime/executable_model.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "layers.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime {
namespace {

// The checks of Build's layer list: ids in range, none twice. Returns them in graph order.
absl::StatusOr<std::vector<planner::LayerId>> LayersToBuild(const planner::ModelGraph& graph,
                                                            std::vector<planner::LayerId> layers) {
  if (layers.empty()) {
    for (const planner::Layer& layer : graph.layers()) layers.push_back(layer.id);
    return layers;
  }
  std::sort(layers.begin(), layers.end());
  for (size_t i = 0; i < layers.size(); ++i) {
    if (layers[i] < 0 || layers[i] >= graph.size()) {
      return absl::InvalidArgumentError(absl::StrCat("model '", graph.name(), "': layer id ",
                                                     layers[i], " is out of range [0, ",
                                                     graph.size(), ")"));
    }
    if (i > 0 && layers[i] == layers[i - 1]) {
      return absl::InvalidArgumentError(absl::StrCat("model '", graph.name(), "': layer ",
                                                     layers[i], " ('", graph.layer(layers[i]).name,
                                                     "') is listed twice"));
    }
  }
  return layers;
}

// The per-sample shape `layer` reads at input `index`.
const planner::TensorShape& ExpectedInput(const planner::ModelGraph& graph,
                                          const planner::Layer& layer, size_t index) {
  return layer.inputs.empty() ? graph.input_shape() : graph.layer(layer.inputs[index]).output;
}

}  // namespace

ExecutableModel::ExecutableModel(std::shared_ptr<const planner::ModelGraph> graph,
                                 std::vector<planner::LayerId> layers)
    : graph_(std::move(graph)),
      layers_(std::move(layers)),
      modules_(static_cast<size_t>(graph_->size())) {}

ExecutableModel::~ExecutableModel() = default;

absl::StatusOr<std::unique_ptr<ExecutableModel>> ExecutableModel::Build(
    std::shared_ptr<const planner::ModelGraph> graph, const std::vector<planner::LayerId>& layers,
    std::uint64_t seed) {
  if (graph == nullptr) return absl::InvalidArgumentError("ExecutableModel::Build: no graph");
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<planner::LayerId> ids, LayersToBuild(*graph, layers));
  std::unique_ptr<ExecutableModel> model(new ExecutableModel(std::move(graph), std::move(ids)));
  for (planner::LayerId id : model->layers_) {
    WAVEPOOL_ASSIGN_OR_RETURN(
        std::shared_ptr<LayerModule> module,
        internal::MakeLayerModule(*model->graph_, model->graph_->layer(id), seed));
    model->modules_[static_cast<size_t>(id)] = std::move(module);
  }
  return model;
}

bool ExecutableModel::Has(planner::LayerId id) const {
  return id >= 0 && id < graph_->size() && modules_[static_cast<size_t>(id)] != nullptr;
}

LayerModule& ExecutableModel::layer(planner::LayerId id) {
  return *modules_[static_cast<size_t>(id)];
}

torch::Tensor ExecutableModel::Forward(planner::LayerId id,
                                       const std::vector<torch::Tensor>& inputs,
                                       const ForwardContext& context) {
  const planner::Layer& layer = graph_->layer(id);
  const size_t expected = std::max<size_t>(1, layer.inputs.size());
  TORCH_CHECK(inputs.size() == expected, internal::LayerWhere(*graph_, layer), " takes ", expected,
              " inputs, got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<std::int64_t>& dims = ExpectedInput(*graph_, layer, i).dims;
    const bool fits = inputs[i].defined() &&
                      inputs[i].dim() == static_cast<std::int64_t>(dims.size()) + 1 &&
                      std::equal(dims.begin(), dims.end(), inputs[i].sizes().begin() + 1);
    TORCH_CHECK(fits, internal::LayerWhere(*graph_, layer), ": input ", i, " has shape ",
                inputs[i].defined() ? inputs[i].sizes() : torch::IntArrayRef{},
                ", expected {rows, ", ExpectedInput(*graph_, layer, i).ToString(), "}");
  }
  return modules_[static_cast<size_t>(id)]->Forward(inputs, context);
}

std::vector<torch::Tensor> ExecutableModel::Parameters(planner::LayerId id) const {
  return modules_[static_cast<size_t>(id)]->parameters();
}

std::vector<torch::Tensor> ExecutableModel::Parameters() const {
  std::vector<torch::Tensor> all;
  for (planner::LayerId id : layers_) {
    for (torch::Tensor& parameter : Parameters(id)) all.push_back(std::move(parameter));
  }
  return all;
}

std::vector<std::pair<std::string, torch::Tensor>> ExecutableModel::NamedParameters() const {
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (planner::LayerId id : layers_) {
    for (const auto& item : modules_[static_cast<size_t>(id)]->named_parameters()) {
      named.emplace_back(absl::StrCat(graph_->layer(id).name, ".", item.key()), item.value());
    }
  }
  return named;
}

std::vector<std::pair<std::string, torch::Tensor>> ExecutableModel::NamedBuffers() const {
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (planner::LayerId id : layers_) {
    for (const auto& item : modules_[static_cast<size_t>(id)]->named_buffers()) {
      named.emplace_back(absl::StrCat(graph_->layer(id).name, ".", item.key()), item.value());
    }
  }
  return named;
}

std::int64_t ExecutableModel::ParameterCount() const {
  std::int64_t count = 0;
  for (const torch::Tensor& parameter : Parameters()) count += parameter.numel();
  return count;
}

void ExecutableModel::Train(bool on) {
  for (planner::LayerId id : layers_) modules_[static_cast<size_t>(id)]->train(on);
}

void ExecutableModel::To(const torch::Device& device) {
  for (planner::LayerId id : layers_) modules_[static_cast<size_t>(id)]->to(device);
}

}  // namespace wavepool::runtime
