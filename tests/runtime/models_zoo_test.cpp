// Every built-in model, built whole with the runtime's modules, has the planner's parameter
// counts and output shapes layer by layer, and its weights depend only on (seed, layer name).
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models_test_graphs.h"
#include "tests/support/status_matchers.h"
#include "wavepool/planner/zoo.h"
#include "wavepool/runtime/executable_model.h"

namespace wavepool::runtime {
namespace {

using planner::Layer;
using planner::LayerId;
using testing::RunAll;
using testing::Share;

constexpr std::uint64_t kSeed = 20240611;

std::int64_t Count(const std::vector<torch::Tensor>& parameters) {
  std::int64_t count = 0;
  for (const torch::Tensor& p : parameters) count += p.numel();
  return count;
}

// A few layers with parameters spread over the model, for building a part of it alone.
std::vector<LayerId> SomeParameterisedLayers(const planner::ModelGraph& graph) {
  std::vector<LayerId> with_params;
  for (const Layer& layer : graph.layers()) {
    if (layer.params > 0) with_params.push_back(layer.id);
  }
  if (with_params.size() <= 3) return with_params;
  return {with_params[1], with_params[with_params.size() / 2], with_params.back()};
}

class ModelsZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelsZoo, ModulesHaveThePlannersParametersShapesAndSeededWeights) {
  ASSERT_OK_AND_ASSIGN(planner::ModelGraph built, planner::BuiltinModel(GetParam()));
  const auto graph = Share(std::move(built));
  ASSERT_OK_AND_ASSIGN(SampleSpec spec, SampleSpecOf(*graph));
  ASSERT_OK_AND_ASSIGN(auto model, ExecutableModel::Build(graph, {}, kSeed));

  EXPECT_EQ(model->layers().size(), static_cast<size_t>(graph->size()));
  for (const Layer& layer : graph->layers()) {
    EXPECT_EQ(Count(model->Parameters(layer.id)), layer.params) << layer.name;
  }
  EXPECT_EQ(model->ParameterCount(), graph->TotalParams());

  // One forward at batch 2, or 1 for the big models: LibTorch's CPU matrix products may run on
  // the reference BLAS, and BERT alone is 22 GFLOPs a sample. Every BatchNorm of the zoo sees
  // more than one value per channel even at batch 1.
  const std::int64_t rows = graph->TotalParams() > 1'000'000 ? 1 : 2;
  torch::NoGradGuard no_grad;
  ForwardContext context;
  context.labels = torch::randint(spec.classes, {rows}, torch::kLong);
  const torch::Tensor input = testing::RandomInput(*graph, rows, spec.vocabulary, kSeed);
  int visited = 0;
  RunAll(*model, input, context, [&](const Layer& layer, const torch::Tensor& y) {
    ++visited;
    EXPECT_EQ(y.size(0), rows) << layer.name;
    EXPECT_EQ(std::vector<std::int64_t>(y.sizes().begin() + 1, y.sizes().end()), layer.output.dims)
        << layer.name;
    EXPECT_TRUE(torch::isfinite(y).all().item<bool>()) << layer.name;
  });
  EXPECT_EQ(visited, graph->size());

  // A part of the model built alone gets the same weights as within the whole model.
  ASSERT_OK_AND_ASSIGN(auto part,
                       ExecutableModel::Build(graph, SomeParameterisedLayers(*graph), kSeed));
  std::map<std::string, torch::Tensor> whole;
  for (const auto& [name, tensor] : model->NamedParameters()) whole[name] = tensor;
  ASSERT_FALSE(part->NamedParameters().empty());
  for (const auto& [name, tensor] : part->NamedParameters()) {
    ASSERT_EQ(whole.count(name), 1u) << name;
    EXPECT_TRUE(torch::equal(tensor, whole.at(name))) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Builtin, ModelsZoo, ::testing::ValuesIn(planner::BuiltinModelNames()),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

}  // namespace
}  // namespace wavepool::runtime
