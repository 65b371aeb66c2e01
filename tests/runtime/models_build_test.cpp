// ExecutableModel::Build and what a model promises beyond numerics: weights and dropout masks are
// pure functions of (seed, layer, sample), errors name the layer, every parameter gets a gradient,
// and SampleSpecOf describes what the model reads.
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models_test_graphs.h"
#include "tests/support/status_matchers.h"
#include "wavepool/planner/layer_table.h"
#include "wavepool/planner/zoo.h"
#include "wavepool/runtime/executable_model.h"

namespace wavepool::runtime {
namespace {

using planner::LayerId;
using ::testing::HasSubstr;
using testing::Share;
using ::wavepool::testing::StatusIs;

std::map<std::string, torch::Tensor> Weights(const ExecutableModel& model) {
  std::map<std::string, torch::Tensor> weights;
  for (const auto& [name, tensor] : model.NamedParameters()) weights[name] = tensor;
  return weights;
}

std::unique_ptr<ExecutableModel> BuildOrDie(std::shared_ptr<const planner::ModelGraph> graph,
                                            const std::vector<LayerId>& layers,
                                            std::uint64_t seed) {
  absl::StatusOr<std::unique_ptr<ExecutableModel>> model =
      ExecutableModel::Build(std::move(graph), layers, seed);
  EXPECT_TRUE(model.ok()) << model.status();
  return model.ok() ? *std::move(model) : nullptr;
}

class ModelsBuild : public ::testing::TestWithParam<bool> {  // true: ImageGraph, false: TokenGraph
 protected:
  std::shared_ptr<const planner::ModelGraph> Graph() const {
    return Share(*(GetParam() ? testing::ImageGraph() : testing::TokenGraph()));
  }
};

TEST_P(ModelsBuild, WeightsArePureFunctionsOfSeedAndLayerName) {
  const auto graph = Graph();
  const auto whole = Weights(*BuildOrDie(graph, {}, 11));
  EXPECT_EQ(whole.size(), Weights(*BuildOrDie(graph, {}, 11)).size());
  for (const auto& [name, tensor] : Weights(*BuildOrDie(graph, {}, 11))) {
    EXPECT_TRUE(torch::equal(tensor, whole.at(name))) << name << " differs between two builds";
  }
  // Each layer alone, and the layers in reverse order, get the weights they get in the whole.
  std::vector<LayerId> reversed;
  for (const planner::Layer& layer : graph->layers()) {
    reversed.insert(reversed.begin(), layer.id);
    for (const auto& [name, tensor] : Weights(*BuildOrDie(graph, {layer.id}, 11))) {
      EXPECT_TRUE(torch::equal(tensor, whole.at(name))) << name << " differs when built alone";
    }
  }
  EXPECT_EQ(Weights(*BuildOrDie(graph, reversed, 11)).size(), whole.size());
  // Another seed draws other random weights (norms start at ones and zeros whatever the seed).
  int random = 0;
  for (const auto& [name, tensor] : Weights(*BuildOrDie(graph, {}, 12))) {
    if (name.find("norm") != std::string::npos || name.find("bn") != std::string::npos ||
        name.find("LayerNorm") != std::string::npos) {
      continue;
    }
    ++random;
    EXPECT_FALSE(torch::equal(tensor, whole.at(name))) << name << " ignores the seed";
  }
  EXPECT_GT(random, 3);
}

TEST_P(ModelsBuild, BackwardGivesEveryParameterAGradient) {
  const auto graph = Graph();
  auto model = BuildOrDie(graph, {}, 3);
  ASSERT_OK_AND_ASSIGN(SampleSpec spec, SampleSpecOf(*graph));
  ForwardContext context;
  context.labels = torch::tensor({0, 1, 2, 3}, torch::kLong);
  const torch::Tensor input = testing::RandomInput(*graph, 4, spec.vocabulary, 5);
  const torch::Tensor out = testing::RunAll(*model, input, context);
  const torch::Tensor loss = LossSum(graph->layer(graph->sink()), out, context.labels);
  loss.backward();
  for (const auto& [name, parameter] : model->NamedParameters()) {
    ASSERT_TRUE(parameter.grad().defined()) << name;
    EXPECT_GT(parameter.grad().abs().sum().item<double>(), 0.0) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(ImageAndTokens, ModelsBuild, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "Image" : "Tokens";
                         });

TEST(ModelsDropout, MasksDependOnTheGlobalSampleNotOnTheSplit) {
  const auto graph = Share(*testing::ImageGraph());
  const LayerId drop = *graph->Find("drop");
  auto model = BuildOrDie(graph, {drop}, 1);
  const torch::Tensor x = torch::randn({4, 64});
  ForwardContext whole;
  whole.step = 9;
  const torch::Tensor y = model->Forward(drop, {x}, whole);
  ForwardContext first = whole, second = whole;
  second.first_sample = 2;
  const torch::Tensor split = torch::cat({model->Forward(drop, {x.narrow(0, 0, 2)}, first),
                                          model->Forward(drop, {x.narrow(0, 2, 2)}, second)});
  EXPECT_TRUE(torch::equal(y, split));
  // Inverted dropout with p = 0.5: kept items doubled, about half dropped.
  const torch::Tensor kept = y.ne(0);
  EXPECT_TRUE(torch::allclose(y.masked_select(kept), 2 * x.masked_select(kept)));
  const double kept_fraction = kept.to(torch::kFloat).mean().item<double>();
  EXPECT_GT(kept_fraction, 0.35);
  EXPECT_LT(kept_fraction, 0.65);
  // Another step, sample or seed draws another mask.
  ForwardContext next = whole;
  next.step = 10;
  EXPECT_FALSE(torch::equal(model->Forward(drop, {x}, next), y));
  EXPECT_FALSE(torch::equal(model->Forward(drop, {x.narrow(0, 0, 2)}, second), y.narrow(0, 0, 2)));
  EXPECT_FALSE(torch::equal(BuildOrDie(graph, {drop}, 2)->Forward(drop, {x}, whole), y));
  // Eval mode: the identity.
  model->Train(false);
  EXPECT_TRUE(torch::equal(model->Forward(drop, {x}, whole), x));
}

constexpr char kTableHeader[] = "name,type,inputs,input_shape,weight_shape,output_shape,attrs\n";

TEST(ModelsBuildErrors, OpaqueLayerIsRejectedNamingLayerModelAndType) {
  const std::string table = std::string(kTableHeader) +
                            "conv1,conv2d,,3x8x8,4x3x3x3,4x8x8,pad=1\n"
                            "head,opaque:my_head,conv1,4x8x8,,10,\n";
  ASSERT_OK_AND_ASSIGN(planner::ModelGraph graph, planner::ParseLayerTable("m", table));
  EXPECT_THAT(ExecutableModel::Build(Share(graph), {}, 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("layer 'head' of model 'm' has type 'my_head', which the "
                                 "runtime cannot execute")));
  // The executable layers alone still build.
  EXPECT_OK(ExecutableModel::Build(Share(graph), {0}, 1).status());
}

TEST(ModelsBuildErrors, LayerIdsOutOfRangeOrRepeatedAreRejected) {
  const auto graph = Share(*testing::TokenGraph());
  EXPECT_THAT(
      ExecutableModel::Build(graph, {1, 6}, 1),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("layer id 6 is out of range")));
  EXPECT_THAT(ExecutableModel::Build(graph, {-1}, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("out of range")));
  EXPECT_THAT(
      ExecutableModel::Build(graph, {2, 1, 2}, 1),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("layer 2 ('ffn') is listed twice")));
  EXPECT_THAT(ExecutableModel::Build(nullptr, {}, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no graph")));
}

TEST(ModelsBuildErrors, ALossOverSeveralDimsIsRejected) {
  planner::ModelBuilder b("seq", planner::TensorShape{{4, 6}});
  b.SoftmaxCrossEntropy("loss", b.Linear("fc", planner::ModelBuilder::kInput, 3));
  ASSERT_OK_AND_ASSIGN(planner::ModelGraph graph, std::move(b).Build());
  EXPECT_THAT(ExecutableModel::Build(Share(graph), {}, 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("layer 'loss' of model 'seq': a softmax_cross_entropy needs a "
                                 "{classes} input")));
  EXPECT_THAT(SampleSpecOf(graph),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has no classifier output")));
}

TEST(ModelsBuildErrors, ForwardWithTheWrongShapeThrowsNamingTheLayer) {
  const auto graph = Share(*testing::TokenGraph());
  auto model = BuildOrDie(graph, {}, 1);
  try {
    model->Forward(*graph->Find("att"), {torch::randn({2, 10, 13})}, {});
    ADD_FAILURE() << "no error";
  } catch (const c10::Error& e) {
    EXPECT_THAT(e.what_without_backtrace(),
                HasSubstr("layer 'att' of model 'tokens': input 0 has shape [2, 10, 13], expected "
                          "{rows, [10,12]}"));
  }
  EXPECT_THROW(model->Forward(*graph->Find("att"), {}, {}), c10::Error);
}

TEST(ModelsLayerTable, ExecutableKindsBuildAndRun) {
  const std::string table = std::string(kTableHeader) +
                            "emb,embedding,,16,,16x32,vocab=100 positions=32 types=2\n"
                            "att,transformer_attention,emb,16x32,,16x32,heads=4\n"
                            "ffn,transformer_feedforward,att,16x32,,16x32,intermediate=64\n"
                            "pool,transformer_pooler,ffn,16x32,,32,\n"
                            "fc,linear,pool,32,3x32,3,\n"
                            "loss,softmax_cross_entropy,fc,3,,1,\n";
  ASSERT_OK_AND_ASSIGN(planner::ModelGraph parsed, planner::ParseLayerTable("table", table));
  const auto graph = Share(parsed);
  ASSERT_OK_AND_ASSIGN(SampleSpec spec, SampleSpecOf(*graph));
  EXPECT_EQ(spec.kind, SampleSpec::Kind::kTokens);
  EXPECT_EQ(spec.vocabulary, 100);
  EXPECT_EQ(spec.classes, 3);
  auto model = BuildOrDie(graph, {}, 1);
  EXPECT_EQ(model->ParameterCount(), graph->TotalParams());
  ForwardContext context;
  context.labels = torch::tensor({0, 2}, torch::kLong);
  const torch::Tensor out =
      testing::RunAll(*model, testing::RandomInput(*graph, 2, 100, 1), context);
  EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{2, 1}));
  EXPECT_TRUE(
      torch::isfinite(LossSum(graph->layer(graph->sink()), out, context.labels)).item<bool>());
}

TEST(ModelsSampleSpec, DescribesFeaturesTokensAndClasses) {
  ASSERT_OK_AND_ASSIGN(planner::ModelGraph cnn, planner::BuiltinModel("cnn_tiny"));
  ASSERT_OK_AND_ASSIGN(SampleSpec image, SampleSpecOf(cnn));
  EXPECT_EQ(image.kind, SampleSpec::Kind::kFeatures);
  EXPECT_EQ(image.shape, (std::vector<std::int64_t>{3, 32, 32}));
  EXPECT_EQ(image.classes, 10);
  ASSERT_OK_AND_ASSIGN(planner::ModelGraph bert, planner::BuiltinModel("bert_base"));
  ASSERT_OK_AND_ASSIGN(SampleSpec tokens, SampleSpecOf(bert));
  EXPECT_EQ(tokens.kind, SampleSpec::Kind::kTokens);
  EXPECT_EQ(tokens.shape, (std::vector<std::int64_t>{128}));
  EXPECT_EQ(tokens.vocabulary, 30522);
  EXPECT_EQ(tokens.classes, 2);  // the loss layer's input
  ASSERT_OK_AND_ASSIGN(planner::ModelGraph image_graph, testing::ImageGraph());
  ASSERT_OK_AND_ASSIGN(SampleSpec with_loss, SampleSpecOf(image_graph));
  EXPECT_EQ(with_loss.classes, 5);
}

TEST(ModelsBuild, BatchNormBuffersAreNamedByLayerAndTrainModeIsPerModel) {
  const auto graph = Share(*testing::ImageGraph());
  auto model = BuildOrDie(graph, {*graph->Find("bn"), *graph->Find("block")}, 1);
  std::vector<std::string> names;
  for (const auto& [name, tensor] : model->NamedBuffers()) names.push_back(name);
  EXPECT_THAT(names, ::testing::Contains("bn.running_mean"));
  EXPECT_THAT(names, ::testing::Contains("block.downsample_bn.running_var"));
  EXPECT_TRUE(model->Has(*graph->Find("bn")));
  EXPECT_FALSE(model->Has(*graph->Find("stem")));
  EXPECT_FALSE(model->Has(graph->size()));
  EXPECT_TRUE(model->layer(*graph->Find("block")).is_training());
  model->Train(false);
  EXPECT_FALSE(model->layer(*graph->Find("block")).is_training());
}

}  // namespace
}  // namespace wavepool::runtime
