// Choosing a plan's compute cost (compute_source.h): picking a model's profile out of a profile
// CSV, and the order given profile -> shipped profile -> analytical model.
#include "wavepool/planner/compute_source.h"

#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/planner/builtin_profiles.h"
#include "wavepool/planner/model_builder.h"
#include "wavepool/planner/zoo.h"

namespace wavepool::planner {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::wavepool::testing::StatusIs;

constexpr char kHeader[] =
    "model,per_gpu_batch,layer_idx,name,params_json,input_dim,total_ms,fw_us,bw_us\n";
// The profile rows of a 3x8x8 model: conv 3->8 (k3, pad 1) and a linear 512->10 after a flatten
// (the flatten is not profiled).
constexpr char kConv[] =
    R"("{""in_channels"":3,""kernel_size"":3,""out_channels"":8,""padding"":1,""stride"":1}","[3,8,8]")";
constexpr char kLinear[] = R"("{""in_features"":512,""out_features"":10}",512)";

// One profile per name in `models`, each the tiny model's rows measured at batch 4: conv 16 us
// forward, 30 us backward; linear 5 us forward, 10 us backward.
std::string Csv(std::initializer_list<std::string_view> models) {
  std::ostringstream csv;
  csv << kHeader;
  for (std::string_view model : models) {
    csv << model << ",4,0,conv2d," << kConv << ",0.046,16,30\n";
    csv << model << ",4,1,linear," << kLinear << ",0.015,5,10\n";
  }
  return csv.str();
}

// The graph the rows describe, named `name`.
ModelGraph TinyModel(const std::string& name = "tiny") {
  ModelBuilder builder(name, TensorShape{{3, 8, 8}});
  LayerId x = builder.Conv2d("conv", ModelBuilder::kInput, ModelBuilder::Square(8, 3, 1, 1));
  x = builder.Flatten("flatten", x);
  builder.Linear("fc", x, 10);
  return std::move(builder).Build().value();
}

const Layer& Named(const ModelGraph& model, std::string_view name) {
  for (const Layer& layer : model.layers()) {
    if (layer.name == name) return layer;
  }
  ADD_FAILURE() << "no layer " << name;
  return model.layers().front();
}

DeviceSpec A100() { return FindDevice("a100-40gb").value(); }

TEST(PickProfile, TakesAFilesOnlyProfileWhateverItsName) {
  ASSERT_OK_AND_ASSIGN(const LayerProfile profile, PickProfile(Csv({"measured"}), TinyModel()));
  EXPECT_EQ(profile.model, "measured");
  EXPECT_EQ(profile.layers.size(), 2u);
}

TEST(PickProfile, TakesTheProfileNamingTheModelAmongSeveral) {
  ASSERT_OK_AND_ASSIGN(const LayerProfile profile,
                       PickProfile(Csv({"alpha", "tiny", "zeta"}), TinyModel()));
  EXPECT_EQ(profile.model, "tiny");
}

TEST(PickProfile, TakesTheProfileNamedByAZooAlias) {
  // The DeepPool profile calls wide_resnet101_2 "wrn101_2" (zoo.h). Picking does not bind, so the
  // tiny rows stand in for the real ones.
  ASSERT_OK_AND_ASSIGN(const ModelGraph wrn, BuiltinModel("wide_resnet101_2"));
  ASSERT_OK_AND_ASSIGN(const LayerProfile profile, PickProfile(Csv({"vgg16", "wrn101_2"}), wrn));
  EXPECT_EQ(profile.model, "wrn101_2");
}

TEST(PickProfile, NoProfileOfTheModelListsTheFilesModels) {
  EXPECT_THAT(PickProfile(Csv({"vgg16", "wrn101_2"}), TinyModel("resnet50")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "no profile of model resnet50 (it has vgg16, wrn101_2)"));
}

TEST(PickProfile, HeaderOnlyFileHasNoProfileOfTheModel) {
  EXPECT_THAT(PickProfile(kHeader, TinyModel()),
              StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("no profile of model tiny")));
}

TEST(PickProfile, MalformedTextIsInvalidArgumentNamingTheLine) {
  EXPECT_THAT(PickProfile("model,per_gpu_batch\nvgg16,abc\n", TinyModel()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("line 1"), HasSubstr("header"))));
  EXPECT_THAT(PickProfile("", TinyModel()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
  EXPECT_THAT(
      PickProfile(std::string(kHeader) + "tiny,four,0,conv2d," + kConv + ",1,1,1\n", TinyModel()),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("line 2"), HasSubstr("per_gpu_batch"))));
}

TEST(ChooseComputeCost, GivenProfileTimesItsRowsAndTheAnalyticalModelTheRest) {
  const ModelGraph model = TinyModel();
  ASSERT_OK_AND_ASSIGN(LayerProfile given, PickProfile(Csv({"tiny"}), model));
  ASSERT_OK_AND_ASSIGN(const ComputeCostModelPtr cost,
                       ChooseComputeCost(given, model, A100(), Precision::kFp32));
  // The conv's row at batch 4: 16 us forward, 30 us backward (0.046 ms total is not used).
  const LayerTime conv = cost->Time(Named(model, "conv"), 4);
  EXPECT_DOUBLE_EQ(conv.forward.count(), 16e-6);
  EXPECT_DOUBLE_EQ(conv.backward.count(), 30e-6);
  // The flatten has no row: the analytical model in the requested precision prices it.
  const LayerTime flatten = cost->Time(Named(model, "flatten"), 4);
  const LayerTime analytic =
      MakeAnalyticCostModel(A100(), Precision::kFp32)->Time(Named(model, "flatten"), 4);
  EXPECT_EQ(flatten.forward, analytic.forward);
  EXPECT_EQ(flatten.backward, analytic.backward);
  EXPECT_THAT(cost->Description(), AllOf(HasSubstr("measured profile of tiny"),
                                         HasSubstr("analytical, a100-40gb, fp32")));
}

TEST(ChooseComputeCost, GivenProfileWinsOverTheShippedOne) {
  // vgg16 ships for the A100; given the H100 measurement instead, the A100 plan uses it.
  ASSERT_OK_AND_ASSIGN(const ModelGraph vgg16, BuiltinModel("vgg16"));
  const std::optional<LayerProfile> h100 = FindBuiltinProfile("vgg16", "h100");
  const std::optional<LayerProfile> a100 = FindBuiltinProfile("vgg16", "a100-40gb");
  ASSERT_TRUE(h100.has_value() && a100.has_value());
  ASSERT_OK_AND_ASSIGN(const ComputeCostModelPtr chosen,
                       ChooseComputeCost(h100, vgg16, A100(), Precision::kMixed));
  ASSERT_OK_AND_ASSIGN(const ComputeCostModelPtr expected,
                       MakeProfiledCostModel(*h100, vgg16, MakeAnalyticCostModel(A100())));
  ASSERT_OK_AND_ASSIGN(const ComputeCostModelPtr shipped,
                       MakeProfiledCostModel(*a100, vgg16, MakeAnalyticCostModel(A100())));
  const Layer& first_conv = vgg16.layers().front();
  EXPECT_EQ(chosen->Time(first_conv, 32).Total(), expected->Time(first_conv, 32).Total());
  EXPECT_NE(chosen->Time(first_conv, 32).Total(), shipped->Time(first_conv, 32).Total());
}

TEST(ChooseComputeCost, WithoutAGivenProfileUsesTheShippedOne) {
  ASSERT_OK_AND_ASSIGN(const ModelGraph vgg16, BuiltinModel("vgg16"));
  const std::optional<LayerProfile> shipped = FindBuiltinProfile("vgg16", "a100-40gb");
  ASSERT_TRUE(shipped.has_value());
  ASSERT_OK_AND_ASSIGN(const ComputeCostModelPtr chosen,
                       ChooseComputeCost(std::nullopt, vgg16, A100(), Precision::kMixed));
  ASSERT_OK_AND_ASSIGN(const ComputeCostModelPtr expected,
                       MakeProfiledCostModel(*shipped, vgg16, MakeAnalyticCostModel(A100())));
  EXPECT_EQ(chosen->Description(), expected->Description());
  const Layer& first_conv = vgg16.layers().front();
  EXPECT_EQ(chosen->Time(first_conv, 32).Total(), expected->Time(first_conv, 32).Total());
}

TEST(ChooseComputeCost, WithoutAnyProfileUsesTheAnalyticalModelInThePrecision) {
  // No profile of resnet50 ships; none of vgg16 on the V100.
  ASSERT_OK_AND_ASSIGN(const ModelGraph resnet50, BuiltinModel("resnet50"));
  ASSERT_OK_AND_ASSIGN(const ComputeCostModelPtr tf32,
                       ChooseComputeCost(std::nullopt, resnet50, A100(), Precision::kTf32));
  EXPECT_EQ(tf32->Description(), "analytical, a100-40gb, tf32");
  ASSERT_OK_AND_ASSIGN(const ModelGraph vgg16, BuiltinModel("vgg16"));
  ASSERT_OK_AND_ASSIGN(const DeviceSpec v100, FindDevice("v100"));
  ASSERT_OK_AND_ASSIGN(const ComputeCostModelPtr mixed,
                       ChooseComputeCost(std::nullopt, vgg16, v100, Precision::kMixed));
  EXPECT_EQ(mixed->Description(), "analytical, v100, mixed precision");
}

TEST(ChooseComputeCost, GivenProfileThatDoesNotFitNamesTheProfileAndRow) {
  // The tiny rows' first layer (a 3->8 conv on 3x8x8) is nowhere in vgg16.
  ASSERT_OK_AND_ASSIGN(const ModelGraph vgg16, BuiltinModel("vgg16"));
  ASSERT_OK_AND_ASSIGN(LayerProfile given, PickProfile(Csv({"tiny"}), TinyModel()));
  EXPECT_THAT(ChooseComputeCost(given, vgg16, A100(), Precision::kMixed),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("profile of tiny"), HasSubstr("layer 0"),
                             HasSubstr("matches no remaining layer of model vgg16"))));
}

}  // namespace
}  // namespace wavepool::planner
