// The built-in models against their published sizes and DeepPool's graph shapes
// (deeppool-burst-parallel §6, Table 3; torchvision and Hugging Face parameter counts).
#include "wavepool/planner/zoo.h"

#include <map>
#include <string>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool::planner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

std::map<LayerKind, int> CountKinds(const ModelGraph& model) {
  std::map<LayerKind, int> counts;
  for (const Layer& layer : model.layers()) ++counts[layer.kind];
  return counts;
}

// Multiply-accumulates of the conv and linear layers, as torchvision's published "GFLOPS" count
// them: conv (Cin/groups)*kh*kw per output item, linear in*out.
double MultiplyAccumulates(const ModelGraph& model) {
  double macs = 0;
  for (const Layer& layer : model.layers()) {
    const WindowAttrs& w = layer.window;
    if (layer.kind == LayerKind::kConv2d) {
      macs += static_cast<double>(layer.in_channels / w.groups * w.kernel_h * w.kernel_w *
                                  layer.output.Elements());
    } else if (layer.kind == LayerKind::kLinear) {
      macs += static_cast<double>(layer.in_channels * layer.out_channels);
    }
  }
  return macs;
}

TEST(Zoo, NamesAreListedInOrder) {
  EXPECT_THAT(BuiltinModelNames(),
              ElementsAre("vgg16", "resnet50", "wide_resnet101_2", "inception_v3", "bert_base",
                          "mlp_tiny", "cnn_tiny", "branchy_tiny"));
  for (const std::string& name : BuiltinModelNames()) {
    ASSERT_OK_AND_ASSIGN(ModelGraph model, BuiltinModel(name));
    EXPECT_EQ(model.name(), name);
  }
}

TEST(Zoo, UnknownNameIsNotFoundAndListsTheModels) {
  EXPECT_THAT(BuiltinModel("resnet51"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("unknown built-in model 'resnet51'; known models: vgg16, "
                                 "resnet50, wide_resnet101_2, inception_v3, bert_base")));
}

TEST(Zoo, WrnAliasBuildsTheSameGraph) {
  ASSERT_OK_AND_ASSIGN(ModelGraph alias, BuiltinModel("wrn101_2"));
  ASSERT_OK_AND_ASSIGN(ModelGraph canonical, BuiltinModel("wide_resnet101_2"));
  EXPECT_EQ(alias, canonical);
}

TEST(Zoo, Vgg16IsDeepPoolsChainOf37) {
  ASSERT_OK_AND_ASSIGN(ModelGraph vgg, BuiltinModel("vgg16"));
  EXPECT_EQ(vgg.size(), 37);
  EXPECT_TRUE(vgg.IsChain());
  EXPECT_EQ(vgg.input_shape(), (TensorShape{{3, 224, 224}}));
  // 13 conv, 13 + 2 ReLU, 5 max-pool, flatten, 3 linear.
  EXPECT_THAT(CountKinds(vgg), ::testing::UnorderedElementsAre(std::pair(LayerKind::kConv2d, 13),
                                                               std::pair(LayerKind::kReLU, 15),
                                                               std::pair(LayerKind::kMaxPool2d, 5),
                                                               std::pair(LayerKind::kFlatten, 1),
                                                               std::pair(LayerKind::kLinear, 3)));
  // torchvision vgg16: 138,357,544 parameters, 15.47 GMACs
  // (conv 15,346,630,656 + linear 25088*4096 + 4096*4096 + 4096*1000 = 123,633,664).
  EXPECT_EQ(vgg.TotalParams(), 138357544);
  EXPECT_DOUBLE_EQ(MultiplyAccumulates(vgg), 15470264320.0);
  EXPECT_EQ(vgg.layer(vgg.sink()).output, (TensorShape{{1000}}));
}

TEST(Zoo, ResNet50HasItsResidualForksAndJoins) {
  ASSERT_OK_AND_ASSIGN(ModelGraph resnet, BuiltinModel("resnet50"));
  EXPECT_FALSE(resnet.IsChain());
  // stem conv + max-pool, 16 blocks of 3 convs + add + relu, 4 downsample convs, pool, flatten, fc.
  EXPECT_EQ(resnet.size(), 2 + 16 * 5 + 4 + 3);
  const std::map<LayerKind, int> counts = CountKinds(resnet);
  EXPECT_EQ(counts.at(LayerKind::kConv2d), 1 + 16 * 3 + 4);
  EXPECT_EQ(counts.at(LayerKind::kAdd), 16);
  EXPECT_EQ(resnet.TotalParams(), 25557032);                    // torchvision resnet50
  EXPECT_DOUBLE_EQ(MultiplyAccumulates(resnet), 4089184256.0);  // torchvision: 4.09 GMACs
  // layer1.1 is an identity block: its Add reads conv3 and the previous block's ReLU directly.
  const Layer& add = resnet.layer(*resnet.Find("layer1.1.add"));
  ASSERT_EQ(add.inputs.size(), 2u);
  EXPECT_EQ(resnet.layer(add.inputs[0]).name, "layer1.1.conv3");
  EXPECT_EQ(resnet.layer(add.inputs[1]).name, "layer1.0.relu");
  // layer2.0 downsamples: a strided 1x1 conv with BatchNorm on the other branch.
  const Layer& down = resnet.layer(*resnet.Find("layer2.0.downsample"));
  EXPECT_EQ(down.window.stride_h, 2);
  EXPECT_EQ(down.output, (TensorShape{{512, 28, 28}}));
  EXPECT_TRUE(down.attrs.batch_norm && !down.attrs.relu);
}

TEST(Zoo, WideResNet101IsDeepPoolsChainOf39) {
  ASSERT_OK_AND_ASSIGN(ModelGraph wrn, BuiltinModel("wide_resnet101_2"));
  EXPECT_EQ(wrn.size(), 39);
  EXPECT_TRUE(wrn.IsChain());
  EXPECT_EQ(CountKinds(wrn).at(LayerKind::kResNetBottleneck), 33);  // 3 + 4 + 23 + 3
  EXPECT_EQ(wrn.TotalParams(), 126886696);                          // torchvision wide_resnet101_2
  // torchvision publishes 22.75 GMACs; the forward pass adds BatchNorm, ReLU, pool and residual
  // work (about 0.4%), so forward FLOPs are just above 2 x 22.753e9.
  EXPECT_GT(wrn.ForwardFlopsPerSample(), 2 * 22.753e9);
  EXPECT_LT(wrn.ForwardFlopsPerSample(), 2 * 22.753e9 * 1.01);
  const Layer& last = wrn.layer(*wrn.Find("layer4.2"));
  EXPECT_EQ(last.output, (TensorShape{{2048, 7, 7}}));
  EXPECT_EQ(last.attrs.base_width, 128);
}

TEST(Zoo, InceptionV3HasElevenForkJoinBlocks) {
  ASSERT_OK_AND_ASSIGN(ModelGraph inception, BuiltinModel("inception_v3"));
  EXPECT_FALSE(inception.IsChain());
  EXPECT_EQ(inception.input_shape(), (TensorShape{{3, 299, 299}}));
  const std::map<LayerKind, int> counts = CountKinds(inception);
  EXPECT_EQ(counts.at(LayerKind::kConv2d), 94);
  EXPECT_EQ(counts.at(LayerKind::kMaxPool2d) + counts.at(LayerKind::kAvgPool2d), 13);
  // 11 block joins (3 A, B, 4 C, D, 2 E) and the 2 nested joins inside each E block.
  EXPECT_EQ(counts.at(LayerKind::kConcat), 11 + 4);
  int block_joins = 0;
  for (const Layer& layer : inception.layers()) {
    if (layer.kind == LayerKind::kConcat && absl::EndsWith(layer.name, ".concat")) ++block_joins;
  }
  EXPECT_EQ(block_joins, 11);
  // + adaptive avg-pool, dropout, flatten, fc.
  EXPECT_EQ(inception.size(), 94 + 13 + 15 + 4);
  // torchvision inception_v3(aux_logits=False): 23,834,568 = 27,161,264 with aux logits minus
  // the aux head's 3,326,696.
  EXPECT_EQ(inception.TotalParams(), 23834568);
  EXPECT_NEAR(MultiplyAccumulates(inception) / 1e9, 5.71, 0.005);  // torchvision: 5.71 GMACs
  const Layer& mixed_7c = inception.layer(*inception.Find("Mixed_7c.concat"));
  EXPECT_EQ(mixed_7c.output, (TensorShape{{2048, 8, 8}}));
  EXPECT_EQ(mixed_7c.inputs.size(), 4u);
}

TEST(Zoo, BertBaseMatchesHuggingFace) {
  ASSERT_OK_AND_ASSIGN(ModelGraph bert, BuiltinModel("bert_base"));
  EXPECT_TRUE(bert.IsChain());
  // embeddings, 12 x (attention, feed-forward), pooler, classifier, loss.
  EXPECT_EQ(bert.size(), 1 + 24 + 3);
  // BertModel (bert-base-uncased) = 109,482,240: embeddings 23,837,184 + 12 x (2,363,904 +
  // 4,723,968) + pooler 768*768 + 768 = 590,592. The head adds 768*2 + 2 = 1,538.
  EXPECT_EQ(bert.TotalParams(), 109482240 + 1538);
  const Layer& pooler = bert.layer(*bert.Find("pooler"));
  EXPECT_EQ(pooler.kind, LayerKind::kTransformerPooler);
  EXPECT_EQ(pooler.params, 590592);
  EXPECT_EQ(pooler.output, (TensorShape{{768}}));
  // Forward: 12 x (656,474,112 + 1,212,186,624) + embeddings 688,128 + pooler 2*768*768 + 1,536
  // + classifier 2*768*2 + 2 + loss 5*2 + 1 = 22,425,801,229.
  EXPECT_DOUBLE_EQ(bert.ForwardFlopsPerSample(), 22425801229.0);
  EXPECT_EQ(bert.layer(bert.sink()).kind, LayerKind::kSoftmaxCrossEntropy);
}

TEST(Zoo, SmallModelsAreSmall) {
  ASSERT_OK_AND_ASSIGN(ModelGraph mlp, BuiltinModel("mlp_tiny"));
  EXPECT_TRUE(mlp.IsChain());
  EXPECT_EQ(mlp.size(), 5);
  EXPECT_EQ(mlp.TotalParams(), (64 * 128 + 128) + (128 * 128 + 128) + (128 * 10 + 10));  // 26,122
  ASSERT_OK_AND_ASSIGN(ModelGraph cnn, BuiltinModel("cnn_tiny"));
  EXPECT_TRUE(cnn.IsChain());
  EXPECT_EQ(cnn.TotalParams(), (3 * 16 * 9 + 16) + (16 * 32 * 9 + 32) + (32 * 8 * 8 * 10 + 10));
}

TEST(Zoo, BranchyTinyHasNestedAndIdentityBranches) {
  ASSERT_OK_AND_ASSIGN(ModelGraph branchy, BuiltinModel("branchy_tiny"));
  EXPECT_FALSE(branchy.IsChain());
  // block1: stem forks three ways; branch3x3_1 forks again (nested) into 2a and 2b.
  EXPECT_EQ(branchy.successors(*branchy.Find("stem")).size(), 3u);
  EXPECT_EQ(branchy.successors(*branchy.Find("block1.branch3x3_1")).size(), 2u);
  EXPECT_EQ(branchy.layer(*branchy.Find("block1.concat")).output, (TensorShape{{32, 32, 32}}));
  // block2: the pool feeds conv1 and, with no layer in between (the identity), the Add.
  const LayerId pool = *branchy.Find("pool");
  const LayerId add = *branchy.Find("block2.add");
  EXPECT_THAT(branchy.successors(pool), ElementsAre(pool + 1, add));
  EXPECT_THAT(branchy.layer(add).inputs, ElementsAre(add - 1, pool));
  // stem 3*16*9 + 32; 1x1s 3 x (16*8 + 16); 1x3 and 3x1 2 x (8*8*3 + 16);
  // block2 2 x (32*32*9 + 64); fc 32*10 + 10 => 20,202.
  EXPECT_EQ(branchy.TotalParams(), 20202);
}

}  // namespace
}  // namespace wavepool::planner
