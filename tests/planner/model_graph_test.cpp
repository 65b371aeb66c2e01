// ModelGraph::Create's invariants (model.h), graph queries and totals.
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/planner/model.h"

namespace wavepool::planner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

Layer Make(LayerId id, std::string name, LayerKind kind, std::vector<LayerId> inputs,
           TensorShape output) {
  Layer layer;
  layer.id = id;
  layer.name = std::move(name);
  layer.kind = kind;
  layer.inputs = std::move(inputs);
  layer.output = std::move(output);
  return layer;
}

// input [4] -> a (linear, 10 params) -> {b (relu), c (linear)} -> sum (add).
std::vector<Layer> Diamond() {
  std::vector<Layer> layers = {
      Make(0, "a", LayerKind::kLinear, {}, {{6}}),
      Make(1, "b", LayerKind::kReLU, {0}, {{6}}),
      Make(2, "c", LayerKind::kLinear, {0}, {{6}}),
      Make(3, "sum", LayerKind::kAdd, {1, 2}, {{6}}),
  };
  layers[0].params = 30;
  layers[0].forward_flops = 48;
  layers[0].backward_flops = 96;
  layers[1].reuses_input_memory = true;
  layers[2].params = 42;
  layers[2].internal_activation_items = 5;
  return layers;
}

auto Invalid(const std::string& what) {
  return StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(what));
}

TEST(ModelGraph, CreateFillsInputsAndIndexesTheGraph) {
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, ModelGraph::Create("diamond", {{4}}, Diamond()));
  EXPECT_EQ(graph.size(), 4);
  EXPECT_EQ(graph.sink(), 3);
  EXPECT_THAT(graph.successors(0), ElementsAre(1, 2));
  EXPECT_THAT(graph.successors(3), ElementsAre());
  // Empty input shapes are filled in: the model input, else the first input's output.
  EXPECT_EQ(graph.layer(0).input, (TensorShape{{4}}));
  EXPECT_EQ(graph.layer(3).input, (TensorShape{{6}}));
  EXPECT_EQ(graph.Find("c"), 2);
  EXPECT_EQ(graph.Find("nope"), std::nullopt);
  EXPECT_FALSE(graph.IsChain());
  EXPECT_TRUE(graph.layer(3).IsJoin());
}

TEST(ModelGraph, TotalsSumTheLayers) {
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, ModelGraph::Create("diamond", {{4}}, Diamond()));
  EXPECT_EQ(graph.TotalParams(), 30 + 42);
  EXPECT_DOUBLE_EQ(graph.ForwardFlopsPerSample(), 48);
  EXPECT_DOUBLE_EQ(graph.BackwardFlopsPerSample(), 96);
  // Outputs 4 * 6 = 24 items + c's 5 internal items; with reuse b's 6 items drop out.
  EXPECT_EQ(graph.ActivationItemsPerSample(/*with_reuse=*/false), 29);
  EXPECT_EQ(graph.ActivationItemsPerSample(/*with_reuse=*/true), 23);
  EXPECT_EQ(graph.layer(0).ParamBytes(), 120);
  EXPECT_EQ(graph.layer(0).OutputBytesPerSample(), 24);
}

TEST(ModelGraph, ChainIsDetected) {
  std::vector<Layer> layers = {Make(0, "a", LayerKind::kReLU, {}, {{4}}),
                               Make(1, "b", LayerKind::kReLU, {0}, {{4}})};
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, ModelGraph::Create("chain", {{4}}, layers));
  EXPECT_TRUE(graph.IsChain());
}

TEST(ModelGraph, EqualityComparesEveryField) {
  ASSERT_OK_AND_ASSIGN(ModelGraph one, ModelGraph::Create("diamond", {{4}}, Diamond()));
  ASSERT_OK_AND_ASSIGN(ModelGraph two, ModelGraph::Create("diamond", {{4}}, Diamond()));
  EXPECT_EQ(one, two);
  std::vector<Layer> changed = Diamond();
  changed[2].attrs.bias = true;
  ASSERT_OK_AND_ASSIGN(ModelGraph three, ModelGraph::Create("diamond", {{4}}, changed));
  EXPECT_NE(one, three);
  changed = Diamond();
  changed[1].measured_time_per_sample = Microseconds(3);
  ASSERT_OK_AND_ASSIGN(ModelGraph four, ModelGraph::Create("diamond", {{4}}, changed));
  EXPECT_NE(one, four);
  ASSERT_OK_AND_ASSIGN(ModelGraph renamed, ModelGraph::Create("other", {{4}}, Diamond()));
  EXPECT_NE(one, renamed);
}

TEST(ModelGraph, RejectsMalformedGraphs) {
  EXPECT_THAT(ModelGraph::Create("m", {{4}}, {}), Invalid("model m: has no layers"));
  EXPECT_THAT(ModelGraph::Create("m", {{4, 0}}, Diamond()), Invalid("input shape [4,0]"));
  struct Case {
    const char* what;
    void (*mutate)(std::vector<Layer>&);
    const char* message;
  };
  const std::vector<Case> cases = {
      {"id", [](std::vector<Layer>& l) { l[1].id = 5; }, "layer 1 (b): id is 5, expected 1"},
      {"empty name", [](std::vector<Layer>& l) { l[1].name = ""; }, "name is empty"},
      {"duplicate name", [](std::vector<Layer>& l) { l[2].name = "a"; },
       "layer 2 (a): name is already used by layer 0"},
      {"separator", [](std::vector<Layer>& l) { l[2].name = "x;y"; }, "must not contain"},
      {"empty output", [](std::vector<Layer>& l) { l[1].output = {}; }, "output shape []"},
      {"negative params", [](std::vector<Layer>& l) { l[1].params = -1; }, "negative"},
      {"negative time", [](std::vector<Layer>& l) { l[1].measured_time_per_sample = Seconds(-1); },
       "negative measured time"},
      {"one-input join", [](std::vector<Layer>& l) { l[3].inputs = {1}; },
       "a join needs at least 2 inputs"},
      {"forward edge", [](std::vector<Layer>& l) { l[1].inputs = {2}; },
       "input 2 is not an earlier layer"},
      {"twice",
       [](std::vector<Layer>& l) {
         l[3].inputs = {1, 1};
       },
       "input b is listed twice"},
      {"input shape", [](std::vector<Layer>& l) { l[1].input = {{7}}; },
       "layer 1 (b): its input is [7] but it reads a's output [6]"},
      {"model input", [](std::vector<Layer>& l) { l[0].input = {{5}}; },
       "its input is [5] but it reads the model input [4]"},
      {"add shapes", [](std::vector<Layer>& l) { l[2].output = {{7}}; },
       "layer 3 (sum): input c [7] differs from the sum's shape [6]"},
      {"two sinks",
       [](std::vector<Layer>& l) {
         l[3].inputs = {0, 1};
       },
       "layers c and sum both have no successor"},
  };
  for (const Case& c : cases) {
    std::vector<Layer> layers = Diamond();
    c.mutate(layers);
    EXPECT_THAT(ModelGraph::Create("m", {{4}}, layers), Invalid(c.message)) << c.what;
  }
}

TEST(ModelGraph, ChecksConcatChannels) {
  std::vector<Layer> layers = {
      Make(0, "a", LayerKind::kReLU, {}, {{2, 3, 3}}),
      Make(1, "b", LayerKind::kConv2d, {0}, {{4, 3, 3}}),
      Make(2, "cat", LayerKind::kConcat, {0, 1}, {{6, 3, 3}}),
  };
  EXPECT_OK(ModelGraph::Create("m", {{2, 3, 3}}, layers).status());
  layers[2].output = {{7, 3, 3}};
  EXPECT_THAT(ModelGraph::Create("m", {{2, 3, 3}}, layers),
              Invalid("layer 2 (cat): inputs have 6 channels in all, the output has 7"));
  layers[2].output = {{6, 3, 3}};
  layers[1].output = {{4, 2, 2}};
  EXPECT_THAT(ModelGraph::Create("m", {{2, 3, 3}}, layers),
              Invalid("input b [4,2,2] does not match the concatenation [6,3,3]"));
}

TEST(ModelGraph, LayerKindNamesRoundTrip) {
  for (LayerKind kind : {LayerKind::kConv2d, LayerKind::kResNetBottleneck, LayerKind::kOpaque,
                         LayerKind::kSoftmaxCrossEntropy, LayerKind::kAdaptiveAvgPool2d,
                         LayerKind::kTransformerPooler}) {
    EXPECT_EQ(ParseLayerKind(LayerKindName(kind)), kind);
  }
  EXPECT_EQ(ParseLayerKind("Conv2D"), LayerKind::kConv2d);
  EXPECT_EQ(ParseLayerKind("tanh"), std::nullopt);
}

}  // namespace
}  // namespace wavepool::planner
