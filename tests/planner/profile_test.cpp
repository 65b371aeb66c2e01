// Measured profiles (profile.h, builtin_profiles.h): parsing DeepPool's profile CSV, binding its
// rows to graph layers, interpolating between measured batches, and the shipped A100 and H100
// profiles.
#include "wavepool/planner/profile.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/planner/builtin_profiles.h"
#include "wavepool/planner/model_builder.h"
#include "wavepool/planner/zoo.h"

namespace wavepool::planner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

constexpr LayerId kInput = ModelBuilder::kInput;
constexpr char kHeader[] =
    "model,per_gpu_batch,layer_idx,name,params_json,input_dim,total_ms,fw_us,bw_us\n";
// Rows of a 3x8x8 model: conv 3->8 (k3, pad 1), ReLU, 2x2 max-pool, flatten (not profiled),
// linear 128->10. The conv is measured at batches 2, 4 and 8, the others at 4 only.
constexpr char kConv[] =
    R"("{""in_channels"":3,""kernel_size"":3,""out_channels"":8,""padding"":1,""stride"":1}","[3,8,8]")";
constexpr char kRelu[] =
    R"("{""inplace"":true,""kernel_size"":1,""padding"":0,""stride"":1}","[8,8,8]")";
constexpr char kPool[] = R"("{""kernel_size"":2,""padding"":0,""stride"":2}","[8,8,8]")";
constexpr char kLinear[] = R"("{""in_features"":128,""out_features"":10}",128)";

std::string TinyCsv() {
  std::ostringstream csv;
  csv << kHeader;
  csv << "tiny,2,0,conv2d," << kConv << ",0.030,10,20\n";
  csv << "tiny,4,0,conv2d," << kConv << ",0.046,16,30\n";
  csv << "tiny,8,0,conv2d," << kConv << ",0.130,40,90\n";
  csv << "tiny,4,1,ReLU2d," << kRelu << ",0.006,2,4\n";
  csv << "tiny,4,2,maxPool2d," << kPool << ",0.009,3,6\n";
  csv << "tiny,4,3,linear," << kLinear << ",0.015,5,10\n";
  return csv.str();
}

// The graph the tiny profile describes.
ModelGraph TinyModel() {
  ModelBuilder builder("tiny", TensorShape{{3, 8, 8}});
  LayerId x = builder.Conv2d("conv", kInput, ModelBuilder::Square(8, 3, 1, 1));
  x = builder.ReLU("relu", x);
  x = builder.MaxPool2d("pool", x, 2, 2);
  x = builder.Flatten("flatten", x);
  builder.Linear("fc", x, 10);
  return std::move(builder).Build().value();
}

// A fallback whose times are recognisable: 1000 s + batch forward, 2000 s + batch backward.
class MarkerCost final : public ComputeCostModel {
 public:
  LayerTime Time(const Layer&, std::int64_t batch) const override {
    const double b = static_cast<double>(batch);
    return {Seconds(1000 + b), Seconds(2000 + b)};
  }
  std::string Description() const override { return "marker"; }
  static bool IsMarker(const LayerTime& t) { return t.forward.count() >= 1000; }
};

// Costs nothing: only measured rows add up.
class ZeroCost final : public ComputeCostModel {
 public:
  LayerTime Time(const Layer&, std::int64_t) const override { return {}; }
  std::string Description() const override { return "zero"; }
};

LayerProfile TinyProfile() {
  absl::StatusOr<std::vector<LayerProfile>> parsed = ParseProfileCsv(TinyCsv());
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() && parsed->size() == 1 ? parsed->front() : LayerProfile{};
}

TEST(ProfileCsv, ParsesRowsIntoLayersBySignatureAndBatch) {
  ASSERT_OK_AND_ASSIGN(const std::vector<LayerProfile> profiles, ParseProfileCsv(TinyCsv()));
  ASSERT_EQ(profiles.size(), 1u);
  const LayerProfile& p = profiles[0];
  EXPECT_EQ(p.model, "tiny");
  ASSERT_EQ(p.layers.size(), 4u);
  const ProfiledLayer& conv = p.layers[0];
  EXPECT_EQ(conv.index, 0);
  EXPECT_EQ(conv.signature.kind, "conv2d");
  EXPECT_EQ(conv.signature.input, (TensorShape{{3, 8, 8}}));
  EXPECT_EQ(conv.signature.in_channels, 3);
  EXPECT_EQ(conv.signature.out_channels, 8);
  EXPECT_EQ(conv.signature.kernel_h, 3);
  EXPECT_EQ(conv.signature.kernel_w, 3);
  EXPECT_EQ(conv.signature.stride, 1);
  EXPECT_EQ(conv.signature.ToString(), "conv2d [3,8,8] 3->8 k3x3 s1");
  ASSERT_EQ(conv.by_batch.size(), 3u);
  EXPECT_NEAR(ToMicros(conv.by_batch.at(4).forward), 16, 1e-9);
  EXPECT_NEAR(ToMicros(conv.by_batch.at(4).backward), 30, 1e-9);
  // "ReLU2d" and "maxPool2d" are normalised to the graph's kind names; a linear layer's input is
  // its flat feature count.
  EXPECT_EQ(p.layers[1].signature.kind, "relu");
  EXPECT_EQ(p.layers[2].signature.ToString(), "maxpool2d [8,8,8] k2x2 s2");
  EXPECT_EQ(p.layers[3].signature.ToString(), "linear [128] 128->10");
}

TEST(ProfileCsv, SeparatesModelsAndAcceptsBlankLinesAndCrLf) {
  std::string csv = std::string(kHeader) + "\r\n" + "b," + "4,0,ReLU2d," + kRelu + ",0,1,2\r\n" +
                    "a,4,3,ReLU2d," + kRelu + ",0,1,2\r\n" + "a,4,1,ReLU2d," + kRelu + ",0,1,2\n";
  ASSERT_OK_AND_ASSIGN(const std::vector<LayerProfile> profiles, ParseProfileCsv(csv));
  ASSERT_EQ(profiles.size(), 2u);
  EXPECT_EQ(profiles[0].model, "a");  // in name order
  EXPECT_EQ(profiles[1].model, "b");
  ASSERT_EQ(profiles[0].layers.size(), 2u);  // by layer_idx, whatever the row order
  EXPECT_EQ(profiles[0].layers[0].index, 1);
  EXPECT_EQ(profiles[0].layers[1].index, 3);
}

struct BadCsv {
  std::string what;
  std::string text;
  std::string message;  // a substring of the error
};

TEST(ProfileCsv, RejectsBadInputNamingLineAndColumn) {
  const std::string conv_row = std::string("tiny,4,0,conv2d,") + kConv + ",0.046,16,30\n";
  const std::vector<BadCsv> cases = {
      {"bad header", "model,batch,layer_idx\n",
       "profile line 1: header must be model,per_gpu_batch"},
      {"header after a blank line", "\nmodel,per_gpu_batch\n", "profile line 2: header must be"},
      {"too few columns", std::string(kHeader) + "tiny,4,0,conv2d,{},[3],0,1\n",
       "profile line 2: has 8 columns, expected 9"},
      {"too many columns", std::string(kHeader) + conv_row + "tiny,4,1,ReLU2d,{},[8],0,1,2,3\n",
       "profile line 3: has 10 columns, expected 9"},
      {"non-integer batch", std::string(kHeader) + "tiny,4.5,0,ReLU2d,{},[8],0,1,2\n",
       "profile line 2, column per_gpu_batch: \"4.5\" is not a positive integer"},
      {"zero batch", std::string(kHeader) + "tiny,0,0,ReLU2d,{},[8],0,1,2\n",
       "profile line 2, column per_gpu_batch: \"0\" is not a positive integer"},
      {"negative layer index", std::string(kHeader) + "tiny,1,-1,ReLU2d,{},[8],0,1,2\n",
       "profile line 2, column layer_idx: \"-1\" is not an index"},
      {"negative forward time", std::string(kHeader) + "tiny,4,0,ReLU2d,{},[8],0,-1,2\n",
       "profile line 2, column fw_us: \"-1\" is not a time >= 0"},
      {"backward time not a number", std::string(kHeader) + "tiny,4,0,ReLU2d,{},[8],0,1,fast\n",
       "profile line 2, column bw_us: \"fast\" is not a time >= 0"},
      {"NaN backward time", std::string(kHeader) + "tiny,4,0,ReLU2d,{},[8],0,1,nan\n",
       "profile line 2, column bw_us: \"nan\" is not a time >= 0"},
      {"params_json not JSON", std::string(kHeader) + "tiny,4,0,ReLU2d,{inplace,[8],0,1,2\n",
       "profile line 2, column params_json: "},
      {"params_json without in_channels",
       std::string(kHeader) + R"(tiny,4,0,conv2d,"{""out_channels"":8}",[3],0,1,2)" + "\n",
       "profile line 2, column params_json: "},
      {"bad input_dim", std::string(kHeader) + "tiny,4,0,ReLU2d,{},\"[8,x,8]\",0,1,2\n",
       "profile line 2, column input_dim: bad dimension \"x\""},
      {"one layer, two signatures",
       std::string(kHeader) + conv_row +
           R"(tiny,8,0,conv2d,"{""in_channels"":3,""kernel_size"":3,""out_channels"":16}",)" +
           "\"[3,8,8]\",0,1,2\n",
       "profile line 3: layer 0 of tiny was conv2d [3,8,8] 3->8 k3x3 s1 on an earlier line, here "
       "conv2d [3,8,8] 3->16 k3x3 s1"},
      {"layer measured twice at one batch", std::string(kHeader) + conv_row + conv_row,
       "profile line 3: layer 0 of tiny at batch 4 is measured twice"},
      {"unterminated quote", std::string(kHeader) + "tiny,4,0,ReLU2d,\"{},[8],0,1,2\n",
       "profile line 2: unterminated quote in field 5"},
      {"text after a closing quote", std::string(kHeader) + "tiny,4,0,ReLU2d,\"{}\"x,[8],0,1,2\n",
       "profile line 2: text after a closing quote in field 5"},
      {"empty", "\n\n", "profile is empty"},
  };
  for (const BadCsv& c : cases) {
    EXPECT_THAT(ParseProfileCsv(c.text),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.what;
  }
}

TEST(ProfiledCost, InterpolatesBetweenMeasuredBatches) {
  const ModelGraph model = TinyModel();
  ASSERT_OK_AND_ASSIGN(const ComputeCostModelPtr cost,
                       MakeProfiledCostModel(TinyProfile(), model, std::make_unique<MarkerCost>()));
  const Layer& conv = model.layer(0);
  // Measured: batch 2 -> 10/20 us, 4 -> 16/30 us, 8 -> 40/90 us (forward/backward).
  const struct {
    std::int64_t batch;
    double forward_us, backward_us;
  } cases[] = {
      {4, 16, 30},  // exact
      {2, 10, 20},  // exact, the smallest
      {3, 13, 25},  // halfway between 2 and 4: 10 + (16 - 10) / 2, 20 + (30 - 20) / 2
      {6, 28, 60},  // halfway between 4 and 8: 16 + (40 - 16) / 2, 30 + (90 - 30) / 2
      {7, 34, 75},  // 3/4 of the way: 16 + 24 * 3/4, 30 + 60 * 3/4
      {1, 10, 20},  // below the smallest: the smallest measurement
      // Above the largest: proportional to the batch from it (profile.h), 40 * 16 / 8 and
      // 90 * 16 / 8. (The slope of the last two would give 40 + 6 * 8 = 88.)
      {16, 80, 180},
      {12, 60, 135},
  };
  for (const auto& c : cases) {
    const LayerTime t = cost->Time(conv, c.batch);
    EXPECT_NEAR(ToMicros(t.forward), c.forward_us, 1e-9) << "batch " << c.batch;
    EXPECT_NEAR(ToMicros(t.backward), c.backward_us, 1e-9) << "batch " << c.batch;
  }
  // A layer measured at one batch only (the ReLU at 4: 2/4 us): constant below, proportional above.
  const Layer& relu = model.layer(1);
  EXPECT_NEAR(ToMicros(cost->Time(relu, 1).forward), 2, 1e-9);
  EXPECT_NEAR(ToMicros(cost->Time(relu, 4).backward), 4, 1e-9);
  EXPECT_NEAR(ToMicros(cost->Time(relu, 10).forward), 5, 1e-9);  // 2 * 10 / 4
  EXPECT_NEAR(ToMicros(cost->Time(relu, 10).backward), 10, 1e-9);
}

TEST(ProfiledCost, UnprofiledLayersGoToTheFallback) {
  const ModelGraph model = TinyModel();
  ASSERT_OK_AND_ASSIGN(const ComputeCostModelPtr cost,
                       MakeProfiledCostModel(TinyProfile(), model, std::make_unique<MarkerCost>()));
  // The flatten (layer 3) has no row: the fallback's 1000 s + batch, 2000 s + batch.
  const LayerTime flatten = cost->Time(model.layer(3), 4);
  EXPECT_DOUBLE_EQ(flatten.forward.count(), 1004);
  EXPECT_DOUBLE_EQ(flatten.backward.count(), 2004);
  EXPECT_NEAR(ToMicros(cost->Time(model.layer(4), 4).forward), 5, 1e-9);  // the linear row
  EXPECT_THAT(cost->Description(), HasSubstr("measured profile of tiny (4 layers; others marker)"));
}

TEST(ProfiledCost, RowMatchingNoLayerIsAnErrorNamingTheRow) {
  const ModelGraph model = TinyModel();
  // A linear row 128 -> 20 matches nothing (the model's fc is 128 -> 10).
  std::string csv = TinyCsv();
  csv.replace(csv.find(R"(""out_features"":10)"), 19, R"(""out_features"":20)");
  ASSERT_OK_AND_ASSIGN(const std::vector<LayerProfile> profiles, ParseProfileCsv(csv));
  EXPECT_THAT(MakeProfiledCostModel(profiles[0], model, std::make_unique<ZeroCost>()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("profile of tiny: layer 3 (linear [128] 128->20) matches no "
                                 "remaining layer of model tiny (3 of 4 profiled layers matched "
                                 "in order)")));
  // Rows are matched in order: with the pool row first, the pool binds, and the ReLU row after it
  // finds no ReLU left.
  LayerProfile swapped = TinyProfile();
  std::swap(swapped.layers[0], swapped.layers[2]);
  EXPECT_THAT(MakeProfiledCostModel(swapped, model, std::make_unique<ZeroCost>()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("layer 1 (relu [8,8,8]) matches no remaining layer of model "
                                 "tiny (1 of 4")));
}

TEST(ProfiledCost, ShippedProfileDoesNotBindToAnotherModel) {
  const std::optional<LayerProfile> vgg = FindBuiltinProfile("vgg16", "a100-40gb");
  ASSERT_TRUE(vgg.has_value());
  ASSERT_OK_AND_ASSIGN(const ModelGraph wrn, BuiltinModel("wide_resnet101_2"));
  EXPECT_THAT(MakeProfiledCostModel(*vgg, wrn, std::make_unique<ZeroCost>()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("profile of vgg16: layer 0 (conv2d [3,224,224] 3->64 k3x3 s1) "
                                 "matches no remaining layer of model wide_resnet101_2")));
  // One changed row in the middle is named.
  ASSERT_OK_AND_ASSIGN(const ModelGraph vgg16, BuiltinModel("vgg16"));
  LayerProfile changed = *vgg;
  changed.layers[12].signature.out_channels = 255;
  EXPECT_THAT(MakeProfiledCostModel(changed, vgg16, std::make_unique<ZeroCost>()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("layer 12 (conv2d [256,56,56] 256->255 k3x3 s1) matches no "
                                 "remaining layer of model vgg16 (12 of 37")));
}

constexpr const char* kShippedDevices[] = {"a100-40gb", "h100"};

// The shipped profile of `name` on `device`, bound to the zoo model with the marker fallback.
struct Bound {
  ModelGraph model;
  ComputeCostModelPtr cost;
};
absl::StatusOr<Bound> BindShipped(const std::string& name, const std::string& device) {
  absl::StatusOr<ModelGraph> model = BuiltinModel(name);
  if (!model.ok()) return model.status();
  const std::optional<LayerProfile> profile = FindBuiltinProfile(name, device);
  if (!profile) return absl::NotFoundError(name + " on " + device);
  absl::StatusOr<ComputeCostModelPtr> cost =
      MakeProfiledCostModel(*profile, *model, std::make_unique<MarkerCost>());
  if (!cost.ok()) return cost.status();
  return Bound{*std::move(model), *std::move(cost)};
}

TEST(ShippedProfile, BindsEveryLayerOfVgg16AndWideResnet) {
  for (const char* device : kShippedDevices) {
    for (const char* name : {"vgg16", "wide_resnet101_2"}) {
      ASSERT_OK_AND_ASSIGN(const Bound bound, BindShipped(name, device));
      for (const Layer& layer : bound.model.layers()) {
        EXPECT_FALSE(MarkerCost::IsMarker(bound.cost->Time(layer, 32)))
            << device << " " << name << " " << layer.name;
      }
    }
  }
  // Spot checks against the CSVs' rows: vgg16 batch 64, layer 0 (conv2d) and 1 (ReLU2d):
  // A100 2157 / 6 us and 1205 / 3730 us; H100 1470 / 2277 us and 548 / 813 us.
  const struct {
    const char* device;
    double conv_fw, conv_bw, relu_fw, relu_bw;
  } rows[] = {{"a100-40gb", 2157, 6, 1205, 3730}, {"h100", 1470, 2277, 548, 813}};
  for (const auto& r : rows) {
    ASSERT_OK_AND_ASSIGN(const Bound vgg, BindShipped("vgg16", r.device));
    EXPECT_NEAR(ToMicros(vgg.cost->Time(vgg.model.layer(0), 64).forward), r.conv_fw, 1e-6);
    EXPECT_NEAR(ToMicros(vgg.cost->Time(vgg.model.layer(0), 64).backward), r.conv_bw, 1e-6);
    EXPECT_NEAR(ToMicros(vgg.cost->Time(vgg.model.layer(1), 64).forward), r.relu_fw, 1e-6);
    EXPECT_NEAR(ToMicros(vgg.cost->Time(vgg.model.layer(1), 64).backward), r.relu_bw, 1e-6);
  }
}

TEST(ShippedProfile, BindsInceptionConvsAndPoolsAndLeavesJoinsToTheFallback) {
  for (const char* device : kShippedDevices) {
    ASSERT_OK_AND_ASSIGN(const Bound bound, BindShipped("inception_v3", device));
    int profiled = 0;
    std::set<LayerKind> fallback_kinds;
    for (const Layer& layer : bound.model.layers()) {
      const bool fallback = MarkerCost::IsMarker(bound.cost->Time(layer, 16));
      if (!fallback) ++profiled;
      if (fallback) fallback_kinds.insert(layer.kind);
      if (layer.kind == LayerKind::kConv2d || layer.kind == LayerKind::kMaxPool2d ||
          layer.kind == LayerKind::kAvgPool2d) {
        EXPECT_FALSE(fallback) << device << " " << layer.name;
      }
    }
    EXPECT_EQ(profiled, 107) << device;  // 94 convolutions and 13 pools
    EXPECT_THAT(fallback_kinds,
                ElementsAre(LayerKind::kLinear, LayerKind::kAdaptiveAvgPool2d, LayerKind::kFlatten,
                            LayerKind::kDropout, LayerKind::kConcat))
        << device;
  }
  // A100: stem.Conv2d_4a_3x3 is profile row 5: 1471 / 3106 us at batch 64, 1450 / 3142 us at 63.
  // Beyond 64 it is proportional: x4 at 256 (the slope 63 -> 64 of the backward time is
  // negative, -36 us per sample, and must not be extrapolated).
  ASSERT_OK_AND_ASSIGN(const Bound bound, BindShipped("inception_v3", "a100-40gb"));
  const std::optional<LayerId> conv = bound.model.Find("stem.Conv2d_4a_3x3");
  ASSERT_TRUE(conv.has_value());
  const Layer& layer = bound.model.layer(*conv);
  EXPECT_NEAR(ToMicros(bound.cost->Time(layer, 64).backward), 3106, 1e-6);
  EXPECT_NEAR(ToMicros(bound.cost->Time(layer, 63).backward), 3142, 1e-6);
  EXPECT_NEAR(ToMicros(bound.cost->Time(layer, 256).forward), 4 * 1471, 1e-6);
  EXPECT_NEAR(ToMicros(bound.cost->Time(layer, 256).backward), 4 * 3106, 1e-6);
  for (const Layer& l : bound.model.layers()) {
    const LayerTime t = bound.cost->Time(l, 512);
    EXPECT_GE(t.forward.count(), 0) << l.name;
    EXPECT_GE(t.backward.count(), 0) << l.name;
  }
  // H100: the same row is 1004 / 1651 us at batch 64 and 533 / 870 us at 32; batch 48 lies
  // half-way: 768.5 / 1260.5 us.
  ASSERT_OK_AND_ASSIGN(const Bound h100, BindShipped("inception_v3", "h100"));
  EXPECT_NEAR(ToMicros(h100.cost->Time(layer, 64).forward), 1004, 1e-6);
  EXPECT_NEAR(ToMicros(h100.cost->Time(layer, 48).forward), 768.5, 1e-6);
  EXPECT_NEAR(ToMicros(h100.cost->Time(layer, 48).backward), 1260.5, 1e-6);
}

// The per-model sums of fw_us + bw_us, added up from the CSVs independently of the planner
// (data/README.md quotes them). For DeepPool's vgg16 and wrn101_2 they differ from the sums of
// the total_ms column (103.078, 53.733, 5.527, 103.838, 19.303 ms), which is not fw_us + bw_us on
// every row of these two models; inception_v3's columns agree (74.361 and 6.912 ms).
TEST(ShippedProfile, PerModelSumsComeOutOfTheBoundCostModel) {
  const struct {
    const char* device;
    const char* model;
    std::int64_t batch;
    double millis;
  } cases[] = {
      {"a100-40gb", "vgg16", 64, 103.133},
      {"a100-40gb", "vgg16", 32, 53.750},
      {"a100-40gb", "vgg16", 1, 5.499},
      {"a100-40gb", "wide_resnet101_2", 32, 103.800},
      {"a100-40gb", "wide_resnet101_2", 1, 19.263},
      {"a100-40gb", "inception_v3", 64, 74.361},
      {"a100-40gb", "inception_v3", 1, 6.912},
      {"h100", "vgg16", 1, 3.079},
      {"h100", "vgg16", 4, 4.788},
      {"h100", "vgg16", 16, 11.573},
      {"h100", "vgg16", 32, 20.517},
      {"h100", "vgg16", 64, 37.862},
      {"h100", "wide_resnet101_2", 1, 10.710},
      {"h100", "wide_resnet101_2", 4, 13.375},
      {"h100", "wide_resnet101_2", 16, 24.098},
      {"h100", "wide_resnet101_2", 32, 39.786},
      {"h100", "wide_resnet101_2", 64, 71.399},
      {"h100", "inception_v3", 1, 8.215},
      {"h100", "inception_v3", 4, 10.337},
      {"h100", "inception_v3", 16, 19.986},
      {"h100", "inception_v3", 32, 33.191},
      {"h100", "inception_v3", 64, 59.000},
  };
  for (const auto& c : cases) {
    ASSERT_OK_AND_ASSIGN(const ModelGraph model, BuiltinModel(c.model));
    const std::optional<LayerProfile> profile = FindBuiltinProfile(c.model, c.device);
    ASSERT_TRUE(profile.has_value()) << c.device << " " << c.model;
    ASSERT_OK_AND_ASSIGN(const ComputeCostModelPtr cost,
                         MakeProfiledCostModel(*profile, model, std::make_unique<ZeroCost>()));
    double total = 0;
    for (const Layer& layer : model.layers()) total += cost->Time(layer, c.batch).Total().count();
    EXPECT_NEAR(ToMillis(Seconds(total)), c.millis, 1e-6)
        << c.device << " " << c.model << " at batch " << c.batch;
  }
}

TEST(ShippedProfile, FindBuiltinProfileKnowsTheA100AndH100Profiles) {
  const struct {
    const char* name;
    const char* profile_model;
    size_t layers;
  } found[] = {{"vgg16", "vgg16", 37},
               {"wide_resnet101_2", "wrn101_2", 39},
               {"wrn101_2", "wrn101_2", 39},
               {"inception_v3", "inception_v3", 107}};
  for (const char* device : kShippedDevices) {
    for (const auto& f : found) {
      const std::optional<LayerProfile> profile = FindBuiltinProfile(f.name, device);
      ASSERT_TRUE(profile.has_value()) << device << " " << f.name;
      EXPECT_EQ(profile->model, f.profile_model);
      EXPECT_EQ(profile->layers.size(), f.layers);
    }
    EXPECT_FALSE(FindBuiltinProfile("resnet50", device).has_value());
    EXPECT_FALSE(FindBuiltinProfile("bert_base", device).has_value());
    EXPECT_FALSE(FindBuiltinProfile("", device).has_value());
  }
  // The two devices' profiles differ: vgg16's first row at batch 1 is 43 / 0 us on the A100 and
  // 40 / 94 us on the H100.
  EXPECT_EQ(FindBuiltinProfile("vgg16", "a100-40gb")->layers[0].by_batch.at(1).backward,
            Seconds(0));
  EXPECT_NEAR(ToMicros(FindBuiltinProfile("vgg16", "h100")->layers[0].by_batch.at(1).backward), 94,
              1e-9);
  // Canonical catalog names only; devices without a shipped profile have none.
  for (const char* device : {"v100", "h200", "a100", "h100-sxm", "H100", ""}) {
    EXPECT_FALSE(FindBuiltinProfile("vgg16", device).has_value()) << device;
  }
}

TEST(ShippedProfile, CompiledTextsAreTheDataFilesAndParse) {
  const struct {
    const char* device;
    const char* path;
    size_t rows;
    std::vector<std::int64_t> vgg_batches;
  } expected[] = {
      {"a100-40gb",
       "data/profiles/deeppool_a100_layer_profiles.csv",
       3106,
       {1, 2, 3, 4, 6, 8, 16, 32, 64}},
      {"h100", "data/profiles/h100_layer_profiles.csv", 1281, {1, 2, 4, 8, 16, 32, 64}},
  };
  const std::vector<BuiltinProfileFile>& files = BuiltinProfileFiles();
  ASSERT_EQ(files.size(), std::size(expected));
  for (size_t i = 0; i < files.size(); ++i) {
    const BuiltinProfileFile& file = files[i];
    EXPECT_EQ(file.device, expected[i].device);
    EXPECT_EQ(file.data_path, expected[i].path);
    std::ifstream in(std::string(WAVEPOOL_SOURCE_DIR) + "/" + std::string(file.data_path));
    ASSERT_TRUE(in.good()) << file.data_path;
    std::ostringstream text;
    text << in.rdbuf();
    // The files have CRLF line endings; the compiler reads the raw string's line breaks as "\n".
    std::string contents = text.str();
    contents.erase(std::remove(contents.begin(), contents.end(), '\r'), contents.end());
    EXPECT_TRUE(contents == file.csv) << "the compiled-in " << file.data_path << " is stale";
    ASSERT_OK_AND_ASSIGN(const std::vector<LayerProfile> profiles, ParseProfileCsv(file.csv));
    ASSERT_EQ(profiles.size(), 3u) << file.data_path;
    size_t rows = 0;
    for (const LayerProfile& p : profiles) {
      for (const ProfiledLayer& layer : p.layers) rows += layer.by_batch.size();
    }
    EXPECT_EQ(rows, expected[i].rows) << file.data_path;  // data/README.md
    // Models in name order.
    EXPECT_EQ(profiles[0].model, "inception_v3");
    EXPECT_EQ(profiles[1].model, "vgg16");
    EXPECT_EQ(profiles[2].model, "wrn101_2");
    std::vector<std::int64_t> vgg_batches;
    for (const auto& [batch, time] : profiles[1].layers[0].by_batch) vgg_batches.push_back(batch);
    EXPECT_EQ(vgg_batches, expected[i].vgg_batches) << file.data_path;
  }
}

}  // namespace
}  // namespace wavepool::planner
