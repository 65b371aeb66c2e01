// The runtime's layer modules compute what PyTorch's references do, checked against LibTorch's
// functional ops applied with the modules' own weights (and, for grouped convolution and
// attention, against a second formulation: per group, per head).
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models_test_graphs.h"
#include "tests/support/status_matchers.h"
#include "wavepool/runtime/executable_model.h"

namespace wavepool::runtime {
namespace {

namespace F = torch::nn::functional;
using planner::LayerId;

constexpr std::uint64_t kSeed = 7;

struct Built {
  std::shared_ptr<const planner::ModelGraph> graph;
  std::unique_ptr<ExecutableModel> model;
  std::map<std::string, torch::Tensor> params;  // "<layer>.<path>" -> parameter or buffer

  LayerId Id(const std::string& name) const { return *graph->Find(name); }
  const torch::Tensor& P(const std::string& name) const { return params.at(name); }
};

// Builds the named layers of `graph` alone.
Built BuildLayers(absl::StatusOr<planner::ModelGraph> graph,
                  const std::vector<std::string>& names) {
  Built built;
  built.graph = testing::Share(*std::move(graph));
  std::vector<LayerId> ids;
  for (const std::string& name : names) ids.push_back(*built.graph->Find(name));
  built.model = *ExecutableModel::Build(built.graph, ids, kSeed);
  for (const auto& [name, tensor] : built.model->NamedParameters()) built.params[name] = tensor;
  for (const auto& [name, tensor] : built.model->NamedBuffers()) built.params[name] = tensor;
  return built;
}

void ExpectClose(const torch::Tensor& actual, const torch::Tensor& expected, double tol = 1e-5) {
  ASSERT_EQ(actual.sizes(), expected.sizes());
  EXPECT_TRUE(torch::allclose(actual, expected, tol, tol))
      << "max difference " << (actual - expected).abs().max().item<double>();
}

TEST(ModelsNumeric, ConvWithFusedBatchNormAndReluEqualsTorchFunctional) {
  Built b = BuildLayers(testing::ImageGraph(), {"stem"});
  const torch::Tensor x = torch::randn({4, 3, 12, 12});
  // References on copies of the running statistics, which training mode updates.
  torch::Tensor mean = b.P("stem.bn.running_mean").clone();
  torch::Tensor var = b.P("stem.bn.running_var").clone();
  torch::NoGradGuard no_grad;
  const torch::Tensor expected = torch::relu(torch::batch_norm(
      torch::conv2d(x, b.P("stem.conv.weight"), b.P("stem.conv.bias"), {1, 1}, {1, 0}),
      b.P("stem.bn.weight"), b.P("stem.bn.bias"), mean, var, /*training=*/true, 0.1, 1e-5, false));
  ExpectClose(b.model->Forward(b.Id("stem"), {x}, {}), expected);
  ExpectClose(b.P("stem.bn.running_mean"), mean);
  ExpectClose(b.P("stem.bn.running_var"), var);
  // Eval mode normalises with the running statistics.
  b.model->Train(false);
  const torch::Tensor conv =
      torch::conv2d(x, b.P("stem.conv.weight"), b.P("stem.conv.bias"), {1, 1}, {1, 0});
  const torch::Tensor normalised =
      (conv - mean.view({1, -1, 1, 1})) / torch::sqrt(var.view({1, -1, 1, 1}) + 1e-5);
  ExpectClose(b.model->Forward(b.Id("stem"), {x}, {}), torch::relu(normalised));
}

TEST(ModelsNumeric, GroupedConvEqualsOneConvPerGroup) {
  Built b = BuildLayers(testing::ImageGraph(), {"grouped"});
  const torch::Tensor x = torch::randn({2, 8, 12, 12});
  const torch::Tensor w = b.P("grouped.conv.weight");  // {8, 4, 3, 3}
  ASSERT_EQ(w.sizes(), (std::vector<std::int64_t>{8, 4, 3, 3}));
  torch::NoGradGuard no_grad;
  const torch::Tensor first = torch::conv2d(x.narrow(1, 0, 4), w.narrow(0, 0, 4), {}, 1, 1);
  const torch::Tensor second = torch::conv2d(x.narrow(1, 4, 4), w.narrow(0, 4, 4), {}, 1, 1);
  ExpectClose(b.model->Forward(b.Id("grouped"), {x}, {}), torch::cat({first, second}, 1));
}

TEST(ModelsNumeric, AvgPoolCountsPaddingAsZerosLikeTorchDefault) {
  Built b = BuildLayers(testing::ImageGraph(), {"avg"});
  const torch::Tensor y = b.model->Forward(b.Id("avg"), {torch::ones({1, 8, 12, 12})}, {});
  EXPECT_EQ(y.sizes(), (std::vector<std::int64_t>{1, 8, 12, 12}));  // the builder's shape
  EXPECT_NEAR(y[0][0][0][0].item<double>(), 4.0 / 9.0, 1e-6);       // corner: 4 of 9 taps in range
  EXPECT_NEAR(y[0][0][0][5].item<double>(), 6.0 / 9.0, 1e-6);       // edge
  EXPECT_NEAR(y[0][0][5][5].item<double>(), 1.0, 1e-6);
}

TEST(ModelsNumeric, BottleneckEqualsTorchvisionBlock) {
  Built b = BuildLayers(testing::ImageGraph(), {"block"});
  const torch::Tensor x = torch::randn({3, 16, 12, 12});
  auto bn = [&](const torch::Tensor& t, const std::string& name) {
    return F::batch_norm(t, b.P("block." + name + ".running_mean").clone(),
                         b.P("block." + name + ".running_var").clone(),
                         F::BatchNormFuncOptions()
                             .weight(b.P("block." + name + ".weight"))
                             .bias(b.P("block." + name + ".bias"))
                             .training(true));
  };
  auto conv = [&](const torch::Tensor& t, const std::string& name, int stride, int pad) {
    return F::conv2d(t, b.P("block." + name + ".weight"),
                     F::Conv2dFuncOptions().stride(stride).padding(pad));
  };
  torch::NoGradGuard no_grad;
  torch::Tensor y = F::relu(bn(conv(x, "conv1", 1, 0), "bn1"));
  y = F::relu(bn(conv(y, "conv2", 2, 1), "bn2"));  // v1.5: the stride on the 3x3 conv
  y = bn(conv(y, "conv3", 1, 0), "bn3");
  const torch::Tensor identity = bn(conv(x, "downsample_conv", 2, 0), "downsample_bn");
  ExpectClose(b.model->Forward(b.Id("block"), {x}, {}), F::relu(y + identity));
}

TEST(ModelsNumeric, BertBlocksEqualHuggingFaceFormulas) {
  Built b = BuildLayers(testing::TokenGraph(), {"emb", "att", "ffn", "pool"});
  torch::NoGradGuard no_grad;
  const torch::Tensor ids = torch::randint(1, 50, {2, 10}, torch::kLong);
  auto layer_norm = [&](const torch::Tensor& t, const std::string& prefix) {
    return torch::layer_norm(t, {12}, b.P(prefix + ".LayerNorm.weight"),
                             b.P(prefix + ".LayerNorm.bias"), 1e-12);
  };
  // BertEmbeddings with token type ids all 0.
  const torch::Tensor embedded = layer_norm(
      b.P("emb.word_embeddings.weight").index_select(0, ids.flatten()).view({2, 10, 12}) +
          b.P("emb.position_embeddings.weight").narrow(0, 0, 10) +
          b.P("emb.token_type_embeddings.weight")[0],
      "emb");
  ExpectClose(b.model->Forward(b.Id("emb"), {ids}, {}), embedded);

  // BertSelfAttention, one sample and one head at a time (3 heads of 4).
  const torch::Tensor h = torch::randn({2, 10, 12});
  auto dense = [&](const torch::Tensor& t, const std::string& name) {
    return torch::matmul(t, b.P(name + ".weight").t()) + b.P(name + ".bias");
  };
  std::vector<torch::Tensor> samples;
  for (int s = 0; s < 2; ++s) {
    std::vector<torch::Tensor> heads;
    for (int head = 0; head < 3; ++head) {
      auto part = [&](const std::string& name) {
        return dense(h[s], "att." + name).narrow(1, 4 * head, 4);
      };
      const torch::Tensor scores = torch::mm(part("query"), part("key").t()) / 2.0;  // sqrt(4)
      heads.push_back(torch::mm(torch::softmax(scores, 1), part("value")));
    }
    samples.push_back(torch::cat(heads, 1));
  }
  const torch::Tensor context = torch::stack(samples);
  ExpectClose(b.model->Forward(b.Id("att"), {h}, {}),
              layer_norm(dense(context, "att.dense") + h, "att"));

  // BertIntermediate + BertOutput.
  const torch::Tensor up = torch::gelu(dense(h, "ffn.intermediate"));
  ExpectClose(b.model->Forward(b.Id("ffn"), {h}, {}),
              layer_norm(dense(up, "ffn.output") + h, "ffn"));

  // BertPooler: only the first token counts.
  torch::Tensor other = h.clone();
  other.narrow(1, 1, 9).normal_();
  const torch::Tensor pooled = torch::tanh(dense(h.select(1, 0), "pool.dense"));
  ExpectClose(b.model->Forward(b.Id("pool"), {h}, {}), pooled);
  ExpectClose(b.model->Forward(b.Id("pool"), {other}, {}), pooled);
}

TEST(ModelsNumeric, EmbeddingPaddingRowIsZeroAsInBert) {
  Built b = BuildLayers(testing::TokenGraph(), {"emb"});
  EXPECT_EQ(b.P("emb.word_embeddings.weight")[0].abs().sum().item<double>(), 0.0);
  EXPECT_GT(b.P("emb.word_embeddings.weight")[1].abs().sum().item<double>(), 0.0);
  // N(0, 0.02) tables.
  EXPECT_NEAR(b.P("emb.word_embeddings.weight").std().item<double>(), 0.02, 0.003);
}

TEST(ModelsNumeric, LossLayerReturnsEachSamplesCrossEntropy) {
  Built b = BuildLayers(testing::ImageGraph(), {"loss"});
  const torch::Tensor logits = torch::randn({3, 5});
  const torch::Tensor labels = torch::tensor({4, 0, 2}, torch::kLong);
  ForwardContext context;
  context.labels = labels;
  const torch::Tensor losses = b.model->Forward(b.Id("loss"), {logits}, context);
  ASSERT_EQ(losses.sizes(), (std::vector<std::int64_t>{3, 1}));
  const torch::Tensor log_probs = torch::log_softmax(logits, 1);
  for (int row = 0; row < 3; ++row) {
    EXPECT_NEAR(losses[row][0].item<double>(),
                -log_probs[row][labels[row].item<std::int64_t>()].item<double>(), 1e-5);
  }
  const planner::Layer& loss = b.graph->layer(b.Id("loss"));
  EXPECT_NEAR(LossSum(loss, losses, labels).item<double>(), losses.sum().item<double>(), 1e-6);
  // Without a loss layer, LossSum takes the cross-entropy of the logits, summed over the rows.
  const planner::Layer& fc = b.graph->layer(b.Id("fc"));
  EXPECT_NEAR(LossSum(fc, logits, labels).item<double>(), losses.sum().item<double>(), 1e-5);
}

}  // namespace
}  // namespace wavepool::runtime
