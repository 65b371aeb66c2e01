// The planner's front door (plan_pipeline.h): the optimizer mapping, how each source resolves,
// every resolution error naming the caller's field, and plans identical to MakePlan's on the
// same inputs.
#include "wavepool/planner/plan_pipeline.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/plan.h"
#include "wavepool/planner/builtin_profiles.h"
#include "wavepool/planner/compute_source.h"
#include "wavepool/planner/zoo.h"

namespace wavepool::planner {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::wavepool::testing::StatusIs;

// mlp_tiny, layer by layer.
constexpr char kMlpTable[] = R"(# mlp_tiny, layer by layer
name,type,inputs,input_shape,weight_shape,output_shape,attrs
fc1,linear,,64,128x64,128,
relu1,relu,fc1,128,,128,
fc2,linear,relu1,128,10x128,10,
)";

// vgg16 on 8 A100s, data-parallel, with the shipped profile and the default network.
PlanSources Vgg16Sources() {
  PlanSources sources{BuiltinModelSource{"vgg16", "spec.model.name"},
                      ComputeSource{ShippedProfileSource{"spec.model"}, Precision::kMixed}, "a100",
                      DefaultNetworkSource{}, PlanRequest{}};
  sources.request.gpus = 8;
  sources.request.global_batch = 256;
  sources.request.strategy = api::Strategy::kDataParallel;
  sources.request.tick_tock = api::Toggle::kOff;
  return sources;
}

PlanSources TableSources(std::string text) {
  PlanSources sources = Vgg16Sources();
  sources.model = LayerTableSource{"mlp", std::move(text), "tables/mlp.csv"};
  sources.request.gpus = 2;
  sources.request.global_batch = 16;
  return sources;
}

std::string A100ProfileCsv() {
  for (const BuiltinProfileFile& file : BuiltinProfileFiles()) {
    if (file.device == "a100-40gb") return std::string(file.csv);
  }
  ADD_FAILURE() << "no shipped a100-40gb profile";
  return "";
}

TEST(OptimizerMoments, SgdKeepsOneMomentAdamAndAdamWTwo) {
  EXPECT_EQ(OptimizerMoments(api::Optimizer::kSgd), 1);
  EXPECT_EQ(OptimizerMoments(api::Optimizer::kAdam), 2);
  EXPECT_EQ(OptimizerMoments(api::Optimizer::kAdamW), 2);
}

// Data parallelism keeps every parameter on every GPU: Adam's second moment adds exactly one
// 4-byte item per parameter to the busiest GPU, and nothing else changes.
TEST(PlanFromSources, TheOptimizerDecidesTheStateEveryGpuHolds) {
  PlanSources sources = Vgg16Sources();
  ASSERT_OK_AND_ASSIGN(const ResolvedPlan sgd, PlanFromSources(sources));
  sources.request.optimizer = api::Optimizer::kAdamW;
  ASSERT_OK_AND_ASSIGN(const ResolvedPlan adam, PlanFromSources(sources));
  EXPECT_EQ(adam.report.plan.predictions.memory_per_gpu_bytes -
                sgd.report.plan.predictions.memory_per_gpu_bytes,
            kBytesPerItem * sgd.model.TotalParams());
  EXPECT_EQ(adam.report.plan.gpus, sgd.report.plan.gpus);
}

TEST(PlanFromSources, PlansExactlyAsMakePlanOnTheResolvedInputs) {
  const PlanSources sources = Vgg16Sources();
  ASSERT_OK_AND_ASSIGN(const ResolvedPlan resolved, PlanFromSources(sources));
  ASSERT_OK_AND_ASSIGN(const DeviceSpec device, FindDevice("a100"));
  ASSERT_OK_AND_ASSIGN(const ModelGraph model, BuiltinModel("vgg16"));
  ASSERT_OK_AND_ASSIGN(const ComputeCostModelPtr compute,
                       ChooseComputeCost(std::nullopt, model, device, Precision::kMixed));
  const CommModel comm(DefaultNetworkModel(device));
  ASSERT_OK_AND_ASSIGN(const PlanReport direct,
                       MakePlan(PlanContext{model, device, *compute, comm}, sources.request));
  EXPECT_EQ(api::ToJson(resolved.report.plan), api::ToJson(direct.plan));
  EXPECT_EQ(resolved.report.decisions, direct.decisions);
  EXPECT_EQ(resolved.device.name, "a100-40gb");
  EXPECT_EQ(resolved.model.name(), "vgg16");
  EXPECT_EQ(resolved.network.name, comm.network().name);
  EXPECT_TRUE(resolved.report.plan.layer_table.empty());
}

TEST(PlanFromSources, ALayerTablePlanCarriesItsTextAndName) {
  ASSERT_OK_AND_ASSIGN(const ResolvedPlan resolved, PlanFromSources(TableSources(kMlpTable)));
  EXPECT_EQ(resolved.report.plan.layer_table, kMlpTable);
  EXPECT_EQ(resolved.report.plan.model, "mlp");
  EXPECT_EQ(resolved.model.size(), 3);
}

TEST(PlanFromSources, AnalyticSourceUsesItsPrecisionAndIgnoresShippedProfiles) {
  PlanSources sources = Vgg16Sources();
  ASSERT_OK_AND_ASSIGN(const ResolvedPlan shipped, PlanFromSources(sources));
  EXPECT_THAT(shipped.report.compute_source, StartsWith("measured profile of vgg16"));
  sources.compute = ComputeSource{AnalyticSource{}, Precision::kFp32};
  ASSERT_OK_AND_ASSIGN(const ResolvedPlan analytic, PlanFromSources(sources));
  EXPECT_EQ(analytic.report.compute_source, "analytical, a100-40gb, fp32");
}

TEST(PlanFromSources, AMeasuredProfileEqualToTheShippedOnePlansTheSame) {
  PlanSources sources = Vgg16Sources();
  ASSERT_OK_AND_ASSIGN(const ResolvedPlan shipped, PlanFromSources(sources));
  sources.compute.times = MeasuredProfileSource{A100ProfileCsv(), "profiles/a100.csv"};
  ASSERT_OK_AND_ASSIGN(const ResolvedPlan measured, PlanFromSources(sources));
  EXPECT_EQ(api::ToJson(measured.report.plan), api::ToJson(shipped.report.plan));
}

TEST(PlanFromSources, NetworkPresetsAndFilesReplaceTheDevicesNetwork) {
  PlanSources sources = Vgg16Sources();
  sources.network = NetworkPresetSource{"abci", "--network"};
  ASSERT_OK_AND_ASSIGN(const ResolvedPlan abci, PlanFromSources(sources));
  EXPECT_EQ(abci.network.name, "abci");
  EXPECT_EQ(abci.network.gpus_per_node, 4);
  sources.network = NetworkFileSource{
      "name: lab\ngpusPerNode: 2\nintraNode: {alphaSeconds: 1.0e-5, bytesPerSecond: 1.0e+11}\n"
      "interNode: {alphaSeconds: 5.0e-5, bytesPerSecond: 1.0e+10}\n",
      "net.yaml"};
  ASSERT_OK_AND_ASSIGN(const ResolvedPlan file, PlanFromSources(sources));
  EXPECT_EQ(file.network.gpus_per_node, 2);
}

TEST(PlanFromSourcesErrors, AnUnknownDeviceIsNotFoundNamingIt) {
  PlanSources sources = Vgg16Sources();
  sources.device = "tpu-v5";
  EXPECT_THAT(PlanFromSources(sources),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("\"tpu-v5\"")));
}

TEST(PlanFromSourcesErrors, AnUnknownBuiltinModelNamesItsField) {
  PlanSources sources = Vgg16Sources();
  sources.model = BuiltinModelSource{"gpt-17", "spec.model.name"};
  EXPECT_THAT(PlanFromSources(sources),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(StartsWith("spec.model.name: "), HasSubstr("gpt-17"))));
  // An empty field leaves BuiltinModel's own message.
  sources.model = BuiltinModelSource{"gpt-17", ""};
  EXPECT_THAT(PlanFromSources(sources),
              StatusIs(absl::StatusCode::kNotFound,
                       std::string(BuiltinModel("gpt-17").status().message())));
}

TEST(PlanFromSourcesErrors, ABadLayerTableNamesItsFieldAndLine) {
  const std::string bad =
      "name,type,inputs,input_shape,weight_shape,output_shape\n"
      "fc1,linear,,64,128x64,x0\n";
  EXPECT_THAT(PlanFromSources(TableSources(bad)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       StartsWith("tables/mlp.csv: layer table line 2")));
}

TEST(PlanFromSourcesErrors, ABadMeasuredProfileNamesItsField) {
  PlanSources sources = Vgg16Sources();
  sources.compute.times = MeasuredProfileSource{"not,a,profile\n1,2,3\n", "spec.model.profile"};
  EXPECT_THAT(PlanFromSources(sources),
              StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("spec.model.profile: ")));
  // A profile that parses but holds no profile of the model (only of others) names it too.
  sources.model = BuiltinModelSource{"resnet50", ""};
  sources.compute.times = MeasuredProfileSource{A100ProfileCsv(), "profiles/a100.csv"};
  EXPECT_THAT(PlanFromSources(sources), StatusIs(absl::StatusCode::kInvalidArgument,
                                                 AllOf(StartsWith("profiles/a100.csv: "),
                                                       HasSubstr("no profile of model resnet50"))));
}

// A layer table named like a zoo model gets that model's shipped profile, which does not fit its
// layers: the error names the field the ShippedProfileSource gave.
TEST(PlanFromSourcesErrors, AShippedProfileThatDoesNotFitNamesTheModelField) {
  PlanSources sources = TableSources(kMlpTable);
  sources.model = LayerTableSource{"vgg16", kMlpTable, "spec.model.layerTable"};
  EXPECT_THAT(PlanFromSources(sources),
              StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("spec.model: ")));
}

TEST(PlanFromSourcesErrors, ABadNetworkNamesItsFieldAndWhatWouldBeValid) {
  PlanSources sources = Vgg16Sources();
  sources.network = NetworkPresetSource{"abcd", "--network"};
  EXPECT_THAT(PlanFromSources(sources),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(StartsWith("--network: unknown network preset \"abcd\""),
                             HasSubstr("did you mean \"abci\"?"),
                             HasSubstr("(or give a JSON or YAML file)"))));
  sources.network = NetworkFileSource{"{ not json", "net.json"};
  EXPECT_THAT(PlanFromSources(sources),
              StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("net.json: network model")));
}

TEST(PlanFromSourcesErrors, MakePlansErrorsNameTheRequestsField) {
  PlanSources sources = Vgg16Sources();
  sources.request.gpus = 0;
  EXPECT_THAT(PlanFromSources(sources),
              StatusIs(absl::StatusCode::kInvalidArgument, StartsWith("gpus: must be in")));
  sources = Vgg16Sources();
  sources.request.global_batch = 4;
  EXPECT_THAT(PlanFromSources(sources), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                 StartsWith("global batch 4 is smaller")));
}

}  // namespace
}  // namespace wavepool::planner
