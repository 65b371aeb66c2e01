// Worked examples of ModelBuilder's shape, parameter and FLOP derivations (model_builder.h).
#include "wavepool/planner/model_builder.h"

#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool::planner {
namespace {

constexpr LayerId kInput = ModelBuilder::kInput;

// Builds a one-layer (or few-layer) model and returns its last layer.
template <typename AddLayers>
Layer BuildLast(TensorShape input, AddLayers add) {
  ModelBuilder builder("example", std::move(input));
  add(builder);
  absl::StatusOr<ModelGraph> graph = std::move(builder).Build();
  EXPECT_OK(graph.status());
  if (!graph.ok()) return Layer{};
  return graph->layer(graph->sink());
}

TEST(ModelBuilder, ConvStrideAndPaddingFollowPyTorch) {
  // 7x7/2 pad 3 on 224: floor((224 + 6 - 7) / 2) + 1 = 111 + 1 = 112.
  Layer stem = BuildLast({{3, 224, 224}}, [](ModelBuilder& b) {
    b.Conv2d("conv", kInput, ModelBuilder::Square(64, 7, 2, 3));
  });
  EXPECT_EQ(stem.output, (TensorShape{{64, 112, 112}}));
  // 3x3/2 without padding: 8 -> floor(5/2) + 1 = 3 (the floor drops the last column);
  // with padding 1: floor(7/2) + 1 = 4.
  Layer floor = BuildLast({{1, 8, 8}}, [](ModelBuilder& b) {
    b.Conv2d("conv", kInput, ModelBuilder::Square(2, 3, 2, 0));
  });
  EXPECT_EQ(floor.output, (TensorShape{{2, 3, 3}}));
  Layer padded = BuildLast({{1, 8, 8}}, [](ModelBuilder& b) {
    b.Conv2d("conv", kInput, ModelBuilder::Square(2, 3, 2, 1));
  });
  EXPECT_EQ(padded.output, (TensorShape{{2, 4, 4}}));
  // Inception's 1x7 with padding 0x3 keeps 17x17.
  Layer row = BuildLast({{128, 17, 17}}, [](ModelBuilder& b) {
    ModelBuilder::Conv conv;
    conv.out_channels = 192;
    conv.kernel_h = 1;
    conv.kernel_w = 7;
    conv.pad_w = 3;
    b.Conv2d("conv", kInput, conv);
  });
  EXPECT_EQ(row.output, (TensorShape{{192, 17, 17}}));
  EXPECT_EQ(row.window, (WindowAttrs{1, 7, 1, 1, 0, 3, 1}));
  EXPECT_EQ(row.params, 128 * 192 * 7);  // 172,032
}

TEST(ModelBuilder, ConvParamsAndFlopsMatchHandComputation) {
  // 3 -> 64, 7x7/2 pad 3, 224 -> 112 (12,544 output positions, 802,816 output items).
  //   weights 64*3*7*7 = 9,408; forward 2*3*49*64*12,544 = 236,027,904; backward 2x.
  Layer plain = BuildLast({{3, 224, 224}}, [](ModelBuilder& b) {
    b.Conv2d("conv", kInput, ModelBuilder::Square(64, 7, 2, 3));
  });
  EXPECT_EQ(plain.params, 9408);
  EXPECT_DOUBLE_EQ(plain.forward_flops, 236027904.0);
  EXPECT_DOUBLE_EQ(plain.backward_flops, 472055808.0);
  EXPECT_EQ(plain.in_channels, 3);
  EXPECT_EQ(plain.out_channels, 64);
  EXPECT_FALSE(plain.reuses_input_memory);
  // + bias: 64 params and 802,816 FLOPs; + BN and ReLU: 128 params, 5 + 1 FLOPs per item.
  ModelBuilder::Conv fused = ModelBuilder::Square(64, 7, 2, 3);
  fused.bias = fused.batch_norm = fused.relu = true;
  Layer all = BuildLast({{3, 224, 224}}, [&](ModelBuilder& b) { b.Conv2d("conv", kInput, fused); });
  EXPECT_EQ(all.params, 9408 + 64 + 128);
  EXPECT_DOUBLE_EQ(all.forward_flops, 236027904.0 + 802816.0 + 6 * 802816.0);  // 241,647,616
  EXPECT_TRUE(all.attrs.bias && all.attrs.batch_norm && all.attrs.relu);
}

TEST(ModelBuilder, GroupedConvDividesWeightsAndFlops) {
  // 32 -> 64 channels, 3x3 pad 1, 4 groups on 8x8: each filter sees 32/4 = 8 channels.
  //   weights 64*8*9 = 4,608; forward 2*8*9*64*64 = 589,824.
  ModelBuilder::Conv conv = ModelBuilder::Square(64, 3, 1, 1);
  conv.groups = 4;
  Layer layer = BuildLast({{32, 8, 8}}, [&](ModelBuilder& b) { b.Conv2d("conv", kInput, conv); });
  EXPECT_EQ(layer.params, 4608);
  EXPECT_DOUBLE_EQ(layer.forward_flops, 589824.0);
  EXPECT_EQ(layer.window.groups, 4);
}

TEST(ModelBuilder, LinearAppliesToTheLastDim) {
  // VGG's fc6: 25088*4096 + 4096 = 102,764,544 params; 2*25088*4096 + 4096 = 205,524,992 FLOPs.
  Layer fc = BuildLast({{25088}}, [](ModelBuilder& b) { b.Linear("fc", kInput, 4096); });
  EXPECT_EQ(fc.output, (TensorShape{{4096}}));
  EXPECT_EQ(fc.params, 102764544);
  EXPECT_DOUBLE_EQ(fc.forward_flops, 205524992.0);
  EXPECT_DOUBLE_EQ(fc.backward_flops, 2 * 205524992.0);
  EXPECT_EQ(fc.in_channels, 25088);
  EXPECT_EQ(fc.out_channels, 4096);
  // On tokens {128, 768} -> {128, 3072}: 128 rows of (2*768*3072 + 3072) = 604,372,992.
  Layer tokens = BuildLast({{128, 768}}, [](ModelBuilder& b) { b.Linear("up", kInput, 3072); });
  EXPECT_EQ(tokens.output, (TensorShape{{128, 3072}}));
  EXPECT_EQ(tokens.params, 768 * 3072 + 3072);
  EXPECT_DOUBLE_EQ(tokens.forward_flops, 604372992.0);
  // Without bias: 10*4 params, 2*10*4 = 80 FLOPs.
  Layer no_bias =
      BuildLast({{10}}, [](ModelBuilder& b) { b.Linear("fc", kInput, 4, /*bias=*/false); });
  EXPECT_EQ(no_bias.params, 40);
  EXPECT_DOUBLE_EQ(no_bias.forward_flops, 80.0);
}

TEST(ModelBuilder, PoolsUseTheFloorAndCostTheirWindow) {
  // ResNet's max-pool 3x3/2 pad 1: floor((112 + 2 - 3) / 2) + 1 = 56; 9 FLOPs per output item:
  // 9 * 64*56*56 = 1,806,336, backward the same (no weights).
  Layer max =
      BuildLast({{64, 112, 112}}, [](ModelBuilder& b) { b.MaxPool2d("pool", kInput, 3, 2, 1); });
  EXPECT_EQ(max.output, (TensorShape{{64, 56, 56}}));
  EXPECT_DOUBLE_EQ(max.forward_flops, 1806336.0);
  EXPECT_DOUBLE_EQ(max.backward_flops, 1806336.0);
  EXPECT_EQ(max.params, 0);
  EXPECT_EQ(max.window, (WindowAttrs{3, 3, 2, 2, 1, 1, 1}));
  // Inception's stem pool 3x3/2 on 147: floor(144 / 2) + 1 = 73.
  Layer stem =
      BuildLast({{64, 147, 147}}, [](ModelBuilder& b) { b.MaxPool2d("pool", kInput, 3, 2); });
  EXPECT_EQ(stem.output, (TensorShape{{64, 73, 73}}));
  // Inception's branch pool 3x3/1 pad 1 keeps 35x35.
  Layer avg =
      BuildLast({{192, 35, 35}}, [](ModelBuilder& b) { b.AvgPool2d("pool", kInput, 3, 1, 1); });
  EXPECT_EQ(avg.output, (TensorShape{{192, 35, 35}}));
  EXPECT_EQ(avg.kind, LayerKind::kAvgPool2d);
}

TEST(ModelBuilder, AdaptivePoolUsesPyTorchWindows) {
  // 7x7 -> 1x1 reads every item once: 2048*49 = 100,352 FLOPs.
  Layer global =
      BuildLast({{2048, 7, 7}}, [](ModelBuilder& b) { b.AdaptiveAvgPool2d("pool", kInput, 1, 1); });
  EXPECT_EQ(global.output, (TensorShape{{2048, 1, 1}}));
  EXPECT_DOUBLE_EQ(global.forward_flops, 100352.0);
  // 5 -> 2: windows [0, 3) and [2, 5) overlap, 3 + 3 = 6 per dim: 6 * 6 = 36 FLOPs.
  Layer overlap =
      BuildLast({{1, 5, 5}}, [](ModelBuilder& b) { b.AdaptiveAvgPool2d("pool", kInput, 2, 2); });
  EXPECT_EQ(overlap.output, (TensorShape{{1, 2, 2}}));
  EXPECT_DOUBLE_EQ(overlap.forward_flops, 36.0);
}

TEST(ModelBuilder, ConcatAddsChannelsAndFlattenKeepsItems) {
  // InceptionA's join: 64 + 64 + 96 + 32 = 256 channels of 35x35; 1 FLOP (a copy) per item.
  Layer concat = BuildLast({{192, 35, 35}}, [](ModelBuilder& b) {
    const LayerId a = b.Conv2d("a", kInput, ModelBuilder::Square(64, 1));
    const LayerId c = b.Conv2d("c", kInput, ModelBuilder::Square(64, 1));
    const LayerId d = b.Conv2d("d", kInput, ModelBuilder::Square(96, 1));
    const LayerId e = b.Conv2d("e", kInput, ModelBuilder::Square(32, 1));
    b.Concat("concat", {a, c, d, e});
  });
  EXPECT_EQ(concat.output, (TensorShape{{256, 35, 35}}));
  EXPECT_EQ(concat.input, (TensorShape{{64, 35, 35}}));  // a join's input is its first input's
  EXPECT_EQ(concat.inputs, (std::vector<LayerId>{0, 1, 2, 3}));
  EXPECT_DOUBLE_EQ(concat.forward_flops, 256.0 * 35 * 35);  // 313,600
  Layer flat = BuildLast({{512, 7, 7}}, [](ModelBuilder& b) { b.Flatten("flatten", kInput); });
  EXPECT_EQ(flat.output, (TensorShape{{25088}}));
  EXPECT_DOUBLE_EQ(flat.forward_flops, 0.0);
}

TEST(ModelBuilder, ElementwiseLayersCostPerItemAndReuseMemory) {
  // 64x56x56 = 200,704 items.
  Layer relu = BuildLast({{64, 56, 56}}, [](ModelBuilder& b) { b.ReLU("relu", kInput); });
  EXPECT_DOUBLE_EQ(relu.forward_flops, 200704.0);
  EXPECT_DOUBLE_EQ(relu.backward_flops, 200704.0);
  EXPECT_TRUE(relu.reuses_input_memory);
  // BatchNorm: 2*64 = 128 params, 5 FLOPs per item = 1,003,520, backward 2x (it has weights).
  Layer bn = BuildLast({{64, 56, 56}}, [](ModelBuilder& b) { b.BatchNorm2d("bn", kInput); });
  EXPECT_EQ(bn.params, 128);
  EXPECT_DOUBLE_EQ(bn.forward_flops, 1003520.0);
  EXPECT_DOUBLE_EQ(bn.backward_flops, 2007040.0);
  EXPECT_TRUE(bn.reuses_input_memory);
  Layer gelu = BuildLast({{128, 3072}}, [](ModelBuilder& b) { b.GELU("gelu", kInput); });
  EXPECT_DOUBLE_EQ(gelu.forward_flops, 8.0 * 128 * 3072);
  EXPECT_TRUE(gelu.reuses_input_memory);
  Layer dropout = BuildLast({{4096}}, [](ModelBuilder& b) { b.Dropout("dropout", kInput); });
  EXPECT_DOUBLE_EQ(dropout.forward_flops, 4096.0);
  EXPECT_TRUE(dropout.reuses_input_memory);
  // LayerNorm over 768 features: 1,536 params; not in place.
  Layer ln = BuildLast({{128, 768}}, [](ModelBuilder& b) { b.LayerNorm("ln", kInput); });
  EXPECT_EQ(ln.params, 1536);
  EXPECT_DOUBLE_EQ(ln.forward_flops, 5.0 * 128 * 768);
  EXPECT_FALSE(ln.reuses_input_memory);
  // Add of 3 inputs: 2 FLOPs per item.
  Layer add = BuildLast({{4, 2, 2}}, [](ModelBuilder& b) {
    const LayerId x = b.ReLU("x", kInput);
    const LayerId y = b.ReLU("y", kInput);
    const LayerId z = b.ReLU("z", kInput);
    b.Add("add", {x, y, z});
  });
  EXPECT_DOUBLE_EQ(add.forward_flops, 2.0 * 16);
  EXPECT_FALSE(add.reuses_input_memory);
}

TEST(ModelBuilder, SoftmaxCrossEntropyReducesToOneLoss) {
  // 1000 classes: 5 FLOPs per logit + 1 per row = 5,001; keeps the probabilities.
  Layer loss = BuildLast({{1000}}, [](ModelBuilder& b) { b.SoftmaxCrossEntropy("loss", kInput); });
  EXPECT_EQ(loss.output, (TensorShape{{1}}));
  EXPECT_DOUBLE_EQ(loss.forward_flops, 5001.0);
  EXPECT_DOUBLE_EQ(loss.backward_flops, 5001.0);
  EXPECT_EQ(loss.internal_activation_items, 1000);
}

TEST(ModelBuilder, OpaqueLayerKeepsWhatItIsGiven) {
  Layer opaque = BuildLast({{128, 768}}, [](ModelBuilder& b) {
    b.Opaque("pooler", {kInput}, TensorShape{{768}}, 590592, 1.5e6, 2.5e6);
  });
  EXPECT_EQ(opaque.kind, LayerKind::kOpaque);
  EXPECT_TRUE(opaque.inputs.empty());  // reads the model input
  EXPECT_EQ(opaque.input, (TensorShape{{128, 768}}));
  EXPECT_EQ(opaque.params, 590592);
  EXPECT_DOUBLE_EQ(opaque.forward_flops, 1.5e6);
  EXPECT_DOUBLE_EQ(opaque.backward_flops, 2.5e6);
  EXPECT_EQ(opaque.in_channels, 768);
  EXPECT_EQ(opaque.out_channels, 768);
}

TEST(ModelBuilder, SetMeasuredTimeAttachesToTheLayer) {
  ModelBuilder builder("timed", TensorShape{{10}});
  const LayerId fc = builder.Linear("fc", kInput, 5);
  builder.SetMeasuredTime(fc, Microseconds(41.5));
  ASSERT_OK_AND_ASSIGN(ModelGraph graph, std::move(builder).Build());
  ASSERT_TRUE(graph.layer(fc).measured_time_per_sample.has_value());
  EXPECT_DOUBLE_EQ(ToMicros(*graph.layer(fc).measured_time_per_sample), 41.5);
}

TEST(ModelBuilder, OutputShapeOfInputAndUnknownIds) {
  ModelBuilder builder("shapes", TensorShape{{3, 8, 8}});
  const LayerId relu = builder.ReLU("relu", kInput);
  EXPECT_EQ(builder.OutputShape(kInput), (TensorShape{{3, 8, 8}}));
  EXPECT_EQ(builder.OutputShape(relu), (TensorShape{{3, 8, 8}}));
  EXPECT_TRUE(builder.OutputShape(7).dims.empty());
  EXPECT_EQ(builder.size(), 1);
  EXPECT_OK(builder.status());
}

}  // namespace
}  // namespace wavepool::planner
