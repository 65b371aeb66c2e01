// Worked examples of ModelBuilder's composite layers: the ResNet bottleneck block and the BERT
// blocks (model_builder.h).
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/planner/model_builder.h"

namespace wavepool::planner {
namespace {

using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

constexpr LayerId kInput = ModelBuilder::kInput;

absl::StatusOr<Layer> OneLayer(TensorShape input, void (*add)(ModelBuilder&)) {
  ModelBuilder builder("example", std::move(input));
  add(builder);
  absl::StatusOr<ModelGraph> graph = std::move(builder).Build();
  if (!graph.ok()) return graph.status();
  return graph->layer(graph->sink());
}

TEST(ModelBuilderComposite, WideBottleneckMatchesTorchvision) {
  // WRN-101-2 layer1.0: 64x56x56 in, planes 64, base_width 128 -> width 128, out 256, stride 1,
  // downsample (64 != 256). Parameters:
  //   conv1 64*128 = 8,192 + bn 256; conv2 9*128*128 = 147,456 + bn 256;
  //   conv3 128*256 = 32,768 + bn 512; downsample 64*256 = 16,384 + bn 512  => 206,336.
  ASSERT_OK_AND_ASSIGN(Layer block, OneLayer({{64, 56, 56}}, [](ModelBuilder& b) {
                         b.ResNetBottleneck("layer1.0", kInput, 64, 1, 128);
                       }));
  EXPECT_EQ(block.output, (TensorShape{{256, 56, 56}}));
  EXPECT_EQ(block.params, 206336);
  EXPECT_EQ(block.in_channels, 64);
  EXPECT_EQ(block.out_channels, 256);
  EXPECT_EQ(block.window, (WindowAttrs{3, 3, 1, 1, 1, 1, 1}));
  // FLOPs over 56*56 = 3,136 positions (no size change):
  //   conv1 2*64*128*3136 = 51,380,224 + bn/relu 6*128*3136 = 2,408,448
  //   conv2 2*9*128*128*3136 = 924,844,032 + bn/relu 2,408,448
  //   conv3 2*128*256*3136 = 205,520,896 + bn 5*256*3136 = 4,014,080
  //   downsample (2*64 + 5)*256*3136 = 106,774,528; add + relu 2*256*3136 = 1,605,632
  //   => 1,298,956,288 forward, twice that backward.
  EXPECT_DOUBLE_EQ(block.forward_flops, 1298956288.0);
  EXPECT_DOUBLE_EQ(block.backward_flops, 2 * 1298956288.0);
  // Kept for backward: conv1, conv2, conv3 and downsample outputs = (128+128+256+256)*3136.
  EXPECT_EQ(block.internal_activation_items, 768 * 3136);
  EXPECT_FALSE(block.reuses_input_memory);
}

TEST(ModelBuilderComposite, StridedBottleneckHalvesTheSize) {
  // WRN layer2.0: 256x56x56, planes 128 (width 256, out 512), stride 2:
  // floor((56 + 2 - 3) / 2) + 1 = 28.
  ASSERT_OK_AND_ASSIGN(Layer block, OneLayer({{256, 56, 56}}, [](ModelBuilder& b) {
                         b.ResNetBottleneck("layer2.0", kInput, 128, 2, 128);
                       }));
  EXPECT_EQ(block.output, (TensorShape{{512, 28, 28}}));
  EXPECT_EQ(block.window.stride_h, 2);
  // 256*256 + 512 + 9*256*256 + 512 + 256*512 + 1024 + 256*512 + 1024 = 920,576.
  EXPECT_EQ(block.params, 920576);
  // An identity block (512 in, planes 128, stride 1) has no downsample:
  // 512*256 + 512 + 589,824 + 512 + 131,072 + 1,024 = 854,016.
  ASSERT_OK_AND_ASSIGN(Layer identity, OneLayer({{512, 28, 28}}, [](ModelBuilder& b) {
                         b.ResNetBottleneck("layer2.1", kInput, 128, 1, 128);
                       }));
  EXPECT_EQ(identity.params, 854016);
}

TEST(ModelBuilderComposite, BottleneckEqualsItsExplicitLayers) {
  // ResNet-50's layer2.0 as one layer and as conv1/conv2/conv3/downsample/add/relu layers:
  // the same parameters (256*128 + 256 + 9*128*128 + 256 + 128*512 + 1024 + 256*512 + 1024 =
  // 379,392, as torchvision's), forward FLOPs and activation memory with reuse.
  ModelBuilder one("one", TensorShape{{256, 56, 56}});
  one.ResNetBottleneck("block", kInput, 128, 2);
  ASSERT_OK_AND_ASSIGN(ModelGraph fused, std::move(one).Build());

  ModelBuilder b("explicit", TensorShape{{256, 56, 56}});
  ModelBuilder::Conv conv1 = ModelBuilder::Square(128, 1);
  ModelBuilder::Conv conv2 = ModelBuilder::Square(128, 3, 2, 1);
  ModelBuilder::Conv conv3 = ModelBuilder::Square(512, 1);
  ModelBuilder::Conv down = ModelBuilder::Square(512, 1, 2);
  conv1.batch_norm = conv2.batch_norm = conv3.batch_norm = down.batch_norm = true;
  conv1.relu = conv2.relu = true;
  const LayerId entry = b.ReLU("entry", kInput);  // the block input, as a layer
  LayerId x = b.Conv2d("conv1", entry, conv1);
  x = b.Conv2d("conv2", x, conv2);
  x = b.Conv2d("conv3", x, conv3);
  const LayerId identity = b.Conv2d("downsample", entry, down);
  b.ReLU("relu", b.Add("add", {x, identity}));
  ASSERT_OK_AND_ASSIGN(ModelGraph unfused, std::move(b).Build());

  const double entry_flops = 256.0 * 56 * 56;
  EXPECT_EQ(fused.TotalParams(), 379392);
  EXPECT_EQ(unfused.TotalParams(), 379392);
  EXPECT_DOUBLE_EQ(fused.ForwardFlopsPerSample(), unfused.ForwardFlopsPerSample() - entry_flops);
  EXPECT_EQ(fused.ActivationItemsPerSample(/*with_reuse=*/true),
            unfused.ActivationItemsPerSample(/*with_reuse=*/true));
}

TEST(ModelBuilderComposite, BertEmbeddingMatchesHuggingFace) {
  // (30522 + 512 + 2) * 768 + 2*768 = 23,837,184 params; {128} token ids -> {128, 768}.
  // Forward: 2 sums per item + LayerNorm 5 = 7 * 98,304 = 688,128.
  ASSERT_OK_AND_ASSIGN(Layer embedding, OneLayer({{128}}, [](ModelBuilder& b) {
                         b.Embedding("embeddings", kInput, 30522, 512, 2, 768);
                       }));
  EXPECT_EQ(embedding.output, (TensorShape{{128, 768}}));
  EXPECT_EQ(embedding.params, 23837184);
  EXPECT_DOUBLE_EQ(embedding.forward_flops, 688128.0);
  EXPECT_EQ(embedding.in_channels, 30522);
  EXPECT_EQ(embedding.out_channels, 768);
  EXPECT_EQ(embedding.internal_activation_items, 128 * 768);
  EXPECT_EQ(embedding.attrs.max_positions, 512);
  EXPECT_EQ(embedding.attrs.type_vocab, 2);
}

TEST(ModelBuilderComposite, BertAttentionMatchesHandComputation) {
  // T = 128, D = 768, 12 heads. params 4*(768*768 + 768) + 2*768 = 2,363,904.
  // Forward: projections 4*128*(2*589,824 + 768) = 604,372,992; QK^T and AV 2*2*128*128*768 =
  // 50,331,648; scale + softmax 6*12*128*128 = 1,179,648; residual + LayerNorm 6*98,304 =
  // 589,824 => 656,474,112.
  ASSERT_OK_AND_ASSIGN(Layer attention, OneLayer({{128, 768}}, [](ModelBuilder& b) {
                         b.TransformerAttention("attention", kInput, 12);
                       }));
  EXPECT_EQ(attention.output, (TensorShape{{128, 768}}));
  EXPECT_EQ(attention.params, 2363904);
  EXPECT_DOUBLE_EQ(attention.forward_flops, 656474112.0);
  EXPECT_DOUBLE_EQ(attention.backward_flops, 2 * 656474112.0);
  // Q, K, V, context, pre-LayerNorm sum 5*98,304 + probabilities 12*128*128 = 688,128.
  EXPECT_EQ(attention.internal_activation_items, 688128);
}

TEST(ModelBuilderComposite, BertFeedForwardMatchesHandComputation) {
  // params 768*3072 + 3072 + 3072*768 + 768 + 2*768 = 4,723,968.
  // Forward: up 128*(2*768*3072 + 3072) = 604,372,992; GELU 8*128*3072 = 3,145,728;
  // down 128*(2*3072*768 + 768) = 604,078,080; residual + LayerNorm 589,824 => 1,212,186,624.
  ASSERT_OK_AND_ASSIGN(Layer ffn, OneLayer({{128, 768}}, [](ModelBuilder& b) {
                         b.TransformerFeedForward("ffn", kInput, 3072);
                       }));
  EXPECT_EQ(ffn.params, 4723968);
  EXPECT_DOUBLE_EQ(ffn.forward_flops, 1212186624.0);
  // Intermediate before and after GELU 2*128*3072 + pre-LayerNorm sum 98,304 = 884,736.
  EXPECT_EQ(ffn.internal_activation_items, 884736);
  EXPECT_EQ(ffn.attrs.intermediate, 3072);
}

TEST(ModelBuilderComposite, BertPoolerMatchesHuggingFace) {
  // BertPooler: tanh(dense(h[:, 0])), {128, 768} -> {768}. params 768*768 + 768 = 590,592;
  // forward 2*768*768 + 768 (bias) + 768 (tanh) = 1,181,184, backward twice that.
  ASSERT_OK_AND_ASSIGN(Layer pooler, OneLayer({{128, 768}}, [](ModelBuilder& b) {
                         b.TransformerPooler("pooler", kInput);
                       }));
  EXPECT_EQ(pooler.kind, LayerKind::kTransformerPooler);
  EXPECT_EQ(pooler.output, (TensorShape{{768}}));
  EXPECT_EQ(pooler.params, 590592);
  EXPECT_DOUBLE_EQ(pooler.forward_flops, 1181184.0);
  EXPECT_DOUBLE_EQ(pooler.backward_flops, 2 * 1181184.0);
  EXPECT_EQ(pooler.in_channels, 768);
  EXPECT_EQ(pooler.out_channels, 768);
  // A pooler reads a sequence of hidden states.
  ModelBuilder flat("m", TensorShape{{768}});
  flat.TransformerPooler("pooler", kInput);
  EXPECT_THAT(std::move(flat).Build(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs a {T,D} input")));
}

}  // namespace
}  // namespace wavepool::planner
