// Every invalid request ModelBuilder rejects: the first error names the model and the layer, and
// Build() fails with InvalidArgument.
#include <limits>
#include <string>
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

// Runs `add` on a fresh builder over `input` and returns Build()'s status.
template <typename Add>
absl::Status BuildError(TensorShape input, Add add) {
  ModelBuilder builder("m", std::move(input));
  add(builder);
  return std::move(builder).Build().status();
}

auto Invalid(const std::string& what) {
  return StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(what));
}

TEST(ModelBuilderErrors, InputShapeMustBePositive) {
  EXPECT_THAT(BuildError({}, [](ModelBuilder& b) { b.ReLU("r", kInput); }),
              Invalid("model m: input shape [] must have at least one dim"));
  EXPECT_THAT(BuildError({{3, 0, 4}}, [](ModelBuilder& b) { b.ReLU("r", kInput); }),
              Invalid("input shape [3,0,4]"));
}

TEST(ModelBuilderErrors, KernelLargerThanPaddedInput) {
  EXPECT_THAT(
      BuildError({{3, 2, 2}},
                 [](ModelBuilder& b) { b.Conv2d("conv1", kInput, ModelBuilder::Square(8, 3)); }),
      Invalid("model m, layer conv1 (conv2d): kernel 3x3 is larger than the padded "
              "input 2x2 (input [3,2,2], padding 0x0)"));
  // Padding 1 makes it fit: 2 + 2 = 4 >= 3.
  EXPECT_OK(BuildError({{3, 2, 2}}, [](ModelBuilder& b) {
    b.Conv2d("conv1", kInput, ModelBuilder::Square(8, 3, 1, 1));
  }));
  EXPECT_THAT(BuildError({{3, 4, 4}}, [](ModelBuilder& b) { b.MaxPool2d("pool", kInput, 5, 1); }),
              Invalid("layer pool (maxpool2d): kernel 5x5 is larger than the padded input 4x4"));
}

TEST(ModelBuilderErrors, BadConvSettings) {
  EXPECT_THAT(
      BuildError({{3, 8, 8}},
                 [](ModelBuilder& b) { b.Conv2d("c", kInput, ModelBuilder::Square(0, 3)); }),
      Invalid("out_channels must be >= 1, got 0"));
  ModelBuilder::Conv grouped = ModelBuilder::Square(8, 3);
  grouped.groups = 2;
  EXPECT_THAT(BuildError({{3, 8, 8}}, [&](ModelBuilder& b) { b.Conv2d("c", kInput, grouped); }),
              Invalid("groups 2 must be >= 1 and divide both the 3 input and the 8 output"));
  grouped.groups = 0;
  EXPECT_THAT(BuildError({{4, 8, 8}}, [&](ModelBuilder& b) { b.Conv2d("c", kInput, grouped); }),
              Invalid("groups 0"));
  EXPECT_THAT(BuildError({{3, 8, 8}},
                         [](ModelBuilder& b) {
                           b.Conv2d("c", kInput, ModelBuilder::Square(8, 3, /*stride=*/0));
                         }),
              Invalid("kernel and stride must be >= 1, padding >= 0"));
  EXPECT_THAT(BuildError({{3, 8, 8}},
                         [](ModelBuilder& b) {
                           b.Conv2d("c", kInput, ModelBuilder::Square(8, 3, 1, /*pad=*/-1));
                         }),
              Invalid("padding -1x-1"));
  EXPECT_THAT(
      BuildError({{64}},
                 [](ModelBuilder& b) { b.Conv2d("c", kInput, ModelBuilder::Square(8, 1)); }),
      Invalid("layer c (conv2d): needs a {C,H,W} input, got [64]"));
}

TEST(ModelBuilderErrors, BadPoolAndNormSettings) {
  EXPECT_THAT(BuildError({{3, 8, 8}}, [](ModelBuilder& b) { b.AvgPool2d("p", kInput, 2, 2, 2); }),
              Invalid("padding 2 must be at most half the kernel 2"));
  EXPECT_THAT(
      BuildError({{3, 8, 8}}, [](ModelBuilder& b) { b.AdaptiveAvgPool2d("p", kInput, 0, 1); }),
      Invalid("output size 0x1 must be >= 1x1"));
  EXPECT_THAT(BuildError({{8}}, [](ModelBuilder& b) { b.AdaptiveAvgPool2d("p", kInput, 1, 1); }),
              Invalid("needs a {C,H,W} input"));
  EXPECT_THAT(BuildError({{8}}, [](ModelBuilder& b) { b.BatchNorm2d("bn", kInput); }),
              Invalid("layer bn (batchnorm2d): needs a {C,H,W} input, got [8]"));
  EXPECT_THAT(BuildError({{8}}, [](ModelBuilder& b) { b.Linear("fc", kInput, 0); }),
              Invalid("layer fc (linear): out_features must be >= 1, got 0"));
}

TEST(ModelBuilderErrors, JoinsNeedMatchingShapes) {
  // Concat of 8x8 and 4x4 maps.
  EXPECT_THAT(BuildError({{3, 8, 8}},
                         [](ModelBuilder& b) {
                           const LayerId a = b.Conv2d("a", kInput, ModelBuilder::Square(4, 1));
                           const LayerId c = b.Conv2d("c", kInput, ModelBuilder::Square(4, 1, 2));
                           b.Concat("cat", {a, c});
                         }),
              Invalid("layer cat (concat): input c [4,4,4] does not match input a [4,8,8] (a "
                      "concatenation needs equal dims but the channels)"));
  // Add of 4 and 6 channels.
  EXPECT_THAT(BuildError({{3, 8, 8}},
                         [](ModelBuilder& b) {
                           const LayerId a = b.Conv2d("a", kInput, ModelBuilder::Square(4, 1));
                           const LayerId c = b.Conv2d("c", kInput, ModelBuilder::Square(6, 1));
                           b.Add("sum", {a, c});
                         }),
              Invalid("layer sum (add): input c [6,8,8] does not match input a [4,8,8] (a sum "
                      "needs equal shapes)"));
  EXPECT_THAT(BuildError({{3, 8, 8}}, [](ModelBuilder& b) { b.Add("sum", {b.ReLU("a", kInput)}); }),
              Invalid("layer sum (add): a join needs at least 2 inputs, got 1"));
  EXPECT_THAT(BuildError({{3, 8, 8}},
                         [](ModelBuilder& b) {
                           b.Add("sum", {b.ReLU("a", kInput), kInput});
                         }),
              Invalid("a layer with several inputs cannot read the model input directly"));
  EXPECT_THAT(BuildError({{3, 8, 8}},
                         [](ModelBuilder& b) {
                           const LayerId a = b.ReLU("a", kInput);
                           b.Concat("cat", {a, a});
                         }),
              Invalid("input a is listed twice"));
}

TEST(ModelBuilderErrors, UnknownIdsAndBadNames) {
  EXPECT_THAT(BuildError({{8}}, [](ModelBuilder& b) { b.ReLU("r", 3); }),
              Invalid("layer r (relu): input id 3 is not a layer added before (there are 0)"));
  EXPECT_THAT(BuildError({{8}}, [](ModelBuilder& b) { b.ReLU("r", -7); }), Invalid("input id -7"));
  EXPECT_THAT(BuildError({{8}},
                         [](ModelBuilder& b) {
                           const LayerId r = b.ReLU("r", kInput);
                           b.ReLU("r", r);
                         }),
              Invalid("layer r (relu): the name is already used by an earlier layer"));
  EXPECT_THAT(BuildError({{8}}, [](ModelBuilder& b) { b.ReLU("", kInput); }),
              Invalid("a name must be non-empty"));
  EXPECT_THAT(BuildError({{8}}, [](ModelBuilder& b) { b.ReLU("a,b", kInput); }),
              Invalid("hold no ',', ';'"));
}

TEST(ModelBuilderErrors, BadCompositeSettings) {
  EXPECT_THAT(
      BuildError({{64, 8, 8}}, [](ModelBuilder& b) { b.ResNetBottleneck("blk", kInput, 0, 1); }),
      Invalid("layer blk (resnet_bottleneck): planes (0) and base_width (64) must be >= 1"));
  EXPECT_THAT(
      BuildError({{64, 8, 8}}, [](ModelBuilder& b) { b.ResNetBottleneck("blk", kInput, 16, 0); }),
      Invalid("kernel and stride must be >= 1"));
  EXPECT_THAT(BuildError({{64, 8, 8}},
                         [](ModelBuilder& b) { b.ResNetBottleneck("blk", kInput, 1, 1, 32); }),
              Invalid("width planes*base_width/64 = 1*32/64 rounds down to 0"));
  EXPECT_THAT(
      BuildError({{600}}, [](ModelBuilder& b) { b.Embedding("emb", kInput, 100, 512, 2, 16); }),
      Invalid("layer emb (embedding): sequence length 600 exceeds max_positions 512"));
  EXPECT_THAT(BuildError({{8}}, [](ModelBuilder& b) { b.Embedding("emb", kInput, 0, 8, 0, 16); }),
              Invalid("vocab (0)"));
  EXPECT_THAT(BuildError({{8}}, [](ModelBuilder& b) { b.Embedding("emb", kInput, 9, 8, -1, 16); }),
              Invalid("type_vocab (-1) >= 0"));
  EXPECT_THAT(BuildError({{8, 8}}, [](ModelBuilder& b) { b.Embedding("emb", kInput, 9, 8, 0, 4); }),
              Invalid("needs a {seq_len} input of token ids, got [8,8]"));
  EXPECT_THAT(
      BuildError({{16, 10}}, [](ModelBuilder& b) { b.TransformerAttention("att", kInput, 3); }),
      Invalid("layer att (transformer_attention): heads 3 must be >= 1 and divide the "
              "hidden size 10"));
  EXPECT_THAT(BuildError({{10}}, [](ModelBuilder& b) { b.TransformerAttention("att", kInput, 2); }),
              Invalid("needs a {T,D} input, got [10]"));
  EXPECT_THAT(
      BuildError({{16, 10}}, [](ModelBuilder& b) { b.TransformerFeedForward("ffn", kInput, 0); }),
      Invalid("intermediate size must be >= 1, got 0"));
}

TEST(ModelBuilderErrors, BadOpaqueLayersAndTimes) {
  EXPECT_THAT(BuildError({{8}},
                         [](ModelBuilder& b) {
                           b.Opaque("o", {}, TensorShape{{4, 0}}, 0, 0, 0);
                         }),
              Invalid("layer o (opaque): output shape [4,0] must have at least one dim"));
  EXPECT_THAT(
      BuildError({{8}}, [](ModelBuilder& b) { b.Opaque("o", {}, TensorShape{{4}}, -1, 0, 0); }),
      Invalid("params (-1)"));
  EXPECT_THAT(BuildError({{8}},
                         [](ModelBuilder& b) {
                           b.Opaque("o", {}, TensorShape{{4}}, 0,
                                    std::numeric_limits<double>::quiet_NaN(), 0);
                         }),
              Invalid("must be finite and >= 0"));
  EXPECT_THAT(
      BuildError({{8}},
                 [](ModelBuilder& b) { b.SetMeasuredTime(b.ReLU("r", kInput), Microseconds(-1)); }),
      Invalid("layer r (relu): measured time per sample must be >= 0 s"));
  EXPECT_THAT(BuildError({{8}},
                         [](ModelBuilder& b) {
                           b.ReLU("r", kInput);
                           b.SetMeasuredTime(4, Microseconds(1));
                         }),
              Invalid("model m: SetMeasuredTime: layer id 4 is not a layer added before"));
}

TEST(ModelBuilderErrors, TheFirstErrorWins) {
  ModelBuilder builder("m", TensorShape{{3, 8, 8}});
  EXPECT_EQ(builder.Conv2d("bad1", kInput, ModelBuilder::Square(0, 3)), kInput);
  EXPECT_THAT(builder.status(), Invalid("layer bad1"));
  // Later calls, valid or not, add nothing and keep the first error.
  EXPECT_EQ(builder.ReLU("fine", kInput), kInput);
  EXPECT_EQ(builder.Conv2d("bad2", kInput, ModelBuilder::Square(8, 99)), kInput);
  EXPECT_EQ(builder.size(), 0);
  const absl::Status status = std::move(builder).Build().status();
  EXPECT_THAT(status, Invalid("layer bad1 (conv2d): out_channels must be >= 1"));
  EXPECT_THAT(std::string(status.message()), ::testing::Not(HasSubstr("bad2")));
}

TEST(ModelBuilderErrors, GraphErrorsSurfaceFromBuild) {
  // Two layers nobody reads: the graph has two outputs.
  EXPECT_THAT(BuildError({{8}},
                         [](ModelBuilder& b) {
                           b.ReLU("a", kInput);
                           b.ReLU("c", kInput);
                         }),
              Invalid("model m: layers a and c both have no successor; a model has one output"));
  // No layers at all.
  EXPECT_THAT(BuildError({{8}}, [](ModelBuilder&) {}), Invalid("model m: has no layers"));
}

}  // namespace
}  // namespace wavepool::planner
