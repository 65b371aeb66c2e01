// MakePlan (planner.h) on real zoo models: the burst-parallel plan it assembles, how it resolves
// the requested strategy, its errors, its data-movement switches, and the exactness of the burst
// search's pruning of GPU counts with equal shards.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/planner/burst_random_problems.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/validation.h"
#include "wavepool/planner/builtin_profiles.h"
#include "wavepool/planner/burst_search.h"
#include "wavepool/planner/model_builder.h"
#include "wavepool/planner/planner.h"
#include "wavepool/planner/profile.h"
#include "wavepool/planner/zoo.h"

namespace wavepool::planner {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

// Everything a PlanContext borrows, kept alive together.
struct Planning {
  ModelGraph model;
  DeviceSpec device;
  ComputeCostModelPtr compute;
  std::unique_ptr<CommModel> comm;

  PlanContext Context() const { return PlanContext{model, device, *compute, *comm}; }
};

// `model` on the a100-40gb with DefaultNetworkModel and the analytical cost model, or the shipped
// profile (over the analytical model for unprofiled layers) when `profiled`.
Planning MakePlanning(ModelGraph model, bool profiled = false) {
  const DeviceSpec device = FindDevice("a100-40gb").value();
  ComputeCostModelPtr compute = MakeAnalyticCostModel(device);
  if (profiled) {
    compute = MakeProfiledCostModel(*FindBuiltinProfile(model.name(), device.name), model,
                                    std::move(compute))
                  .value();
  }
  auto comm = std::make_unique<CommModel>(DefaultNetworkModel(device));
  return Planning{std::move(model), device, std::move(compute), std::move(comm)};
}

Planning Zoo(const char* name, bool profiled = false) {
  return MakePlanning(BuiltinModel(name).value(), profiled);
}

PlanRequest Request(int gpus, std::int64_t batch) {
  PlanRequest request;
  request.gpus = gpus;
  request.global_batch = batch;
  request.amplification_limit = 2.0;
  return request;
}

// A chain of `layers` square linear layers of `width` features without bias: each holds
// width^2 parameters, 3 x 4 bytes each with SGD momentum (weights, gradients, one moment).
// 16384 features: 268,435,456 parameters = 1 GiB of weights, 3 GiB of state per layer.
ModelGraph HugeLinears(int layers, std::int64_t width) {
  ModelBuilder builder("huge", TensorShape{{width}});
  LayerId x = ModelBuilder::kInput;
  for (int i = 0; i < layers; ++i) {
    x = builder.Linear("fc" + std::to_string(i), x, width, /*bias=*/false);
  }
  return std::move(builder).Build().value();
}

std::int64_t CeilDiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The stage of every layer, by name; fails the test if a layer is in no stage or in two.
std::map<std::string, int> StageOfLayers(const api::Plan& plan, const ModelGraph& model) {
  std::map<std::string, int> stage_of;
  for (const api::PlanStage& stage : plan.stages) {
    for (const std::string& name : stage.layers) {
      EXPECT_TRUE(stage_of.emplace(name, static_cast<int>(stage.index)).second)
          << name << " is in two stages";
    }
  }
  EXPECT_EQ(stage_of.size(), static_cast<size_t>(model.size()));
  return stage_of;
}

// Checks that a burst-parallel plan made for `request` is consistent with itself, the model
// and the burst search: stages, ranks, batches, predictions, transfers and sync groups.
void ExpectConsistentBurstPlan(const Planning& setup, const PlanRequest& request,
                               const PlanReport& report) {
  const api::Plan& plan = report.plan;
  const ModelGraph& model = setup.model;
  const std::int64_t batch = request.global_batch;
  EXPECT_OK(api::Validate(plan));
  EXPECT_EQ(plan.model, model.name());
  EXPECT_EQ(plan.global_batch_size, batch);

  // Stages cover every layer once, in a topological order; ranks are consecutive from the
  // stage's first rank, and the per-GPU batch is the shard of its GPU count.
  const std::map<std::string, int> stage_of = StageOfLayers(plan, model);
  std::set<std::string> seen;
  for (const api::PlanStage& stage : plan.stages) {
    ASSERT_EQ(stage.ranks.size(), static_cast<size_t>(stage.gpus));
    for (size_t i = 0; i < stage.ranks.size(); ++i) {
      EXPECT_EQ(stage.ranks[i], stage.ranks.front() + static_cast<std::int64_t>(i));
    }
    EXPECT_LE(stage.ranks.back(), plan.gpus - 1);
    EXPECT_EQ(stage.per_gpu_batch, CeilDiv(batch, stage.gpus)) << "stage " << stage.index;
    for (const std::string& name : stage.layers) {
      for (LayerId in : model.layer(*model.Find(name)).inputs) {
        EXPECT_TRUE(seen.count(model.layer(in).name)) << name << " before its input";
      }
      seen.insert(name);
    }
  }

  // The predictions are the burst evaluation's, and the search re-run from scratch agrees.
  const api::PlanPredictions& p = plan.predictions;
  EXPECT_DOUBLE_EQ(p.iteration_seconds, 1e-9 * static_cast<double>(report.burst.iteration));
  BurstOptions options;
  options.max_gpus = request.gpus;
  options.global_batch = batch;
  options.amplification_limit = request.amplification_limit;
  options.gpu_counts = request.gpu_counts;
  ASSERT_OK_AND_ASSIGN(const BurstProblem problem,
                       BuildBurstProblem(model, *setup.compute, *setup.comm, options));
  ASSERT_OK_AND_ASSIGN(const BurstSearchResult search, SearchBurstAssignment(problem));
  EXPECT_EQ(search.iteration, report.burst.iteration);
  EXPECT_DOUBLE_EQ(p.gpu_seconds, report.burst.gpu_seconds);
  EXPECT_NEAR(p.background_idle_gpu_seconds,
              static_cast<double>(plan.gpus) * p.iteration_seconds - p.gpu_seconds, 1e-12);
  EXPECT_DOUBLE_EQ(p.amplification, report.burst.gpu_seconds / report.burst.single_gpu_seconds);
  // The one-GPU time is every layer's compute at the whole batch (no all-reduce on one GPU), to
  // the half nanosecond each layer's time is rounded to.
  double single = 0;
  for (const Layer& layer : model.layers()) {
    single += setup.compute->Time(layer, batch).Total().count();
  }
  EXPECT_NEAR(report.burst.single_gpu_seconds, single, model.size() * 0.5e-9);
  EXPECT_NEAR(p.samples_per_second, static_cast<double>(batch) / p.iteration_seconds, 1e-9);

  // In-place layers (ReLU) and views (flatten) run in their producer's stage.
  for (const Layer& layer : model.layers()) {
    if (layer.inputs.size() != 1) continue;
    if (!layer.reuses_input_memory && layer.kind != LayerKind::kFlatten) continue;
    const Layer& producer = model.layer(layer.inputs.front());
    EXPECT_EQ(stage_of.at(layer.name), stage_of.at(producer.name)) << layer.name;
  }

  // One transfer for each edge between stages on different GPUs, carrying the producer's output.
  std::multiset<std::tuple<std::int64_t, std::int64_t, std::int64_t>> expected_transfers;
  for (const Layer& layer : model.layers()) {
    for (LayerId in : layer.inputs) {
      const api::PlanStage& from = plan.stages[stage_of.at(model.layer(in).name)];
      const api::PlanStage& to = plan.stages[stage_of.at(layer.name)];
      if (from.ranks == to.ranks) continue;
      expected_transfers.insert({from.index, to.index, model.layer(in).OutputBytesPerSample()});
    }
  }
  std::multiset<std::tuple<std::int64_t, std::int64_t, std::int64_t>> transfers;
  for (const api::SampleTransfer& t : plan.transfers) {
    transfers.insert({t.from_stage, t.to_stage, t.bytes_per_sample});
    const api::PlanStage& from = plan.stages[t.from_stage];
    const api::PlanStage& to = plan.stages[t.to_stage];
    EXPECT_GT(t.predicted_seconds, 0);
    EXPECT_GT(t.samples, 0);
    EXPECT_LE(t.samples, batch);
    if (to.gpus == 1 && from.ranks.front() == 0 && to.ranks.front() == 0) {
      // Contiguous blocks: rank 0 keeps its first ceil(B / g) samples, the rest move to it.
      EXPECT_EQ(t.samples, batch - CeilDiv(batch, from.gpus));
    }
  }
  EXPECT_EQ(transfers, expected_transfers);

  // One all-reduce group per multi-GPU stage holding parameters, over the stage's ranks and
  // parameter bytes.
  size_t groups = 0;
  for (const api::PlanStage& stage : plan.stages) {
    Bytes bytes = 0;
    for (const std::string& name : stage.layers)
      bytes += model.layer(*model.Find(name)).ParamBytes();
    std::vector<const api::SyncGroup*> found;
    for (const api::SyncGroup& g : plan.sync_groups) {
      if (g.stage == stage.index) found.push_back(&g);
    }
    if (stage.gpus < 2 || bytes == 0) {
      EXPECT_TRUE(found.empty()) << "stage " << stage.index;
      continue;
    }
    ++groups;
    ASSERT_EQ(found.size(), 1u) << "stage " << stage.index;
    EXPECT_EQ(found[0]->ranks, stage.ranks);
    EXPECT_EQ(found[0]->bytes, bytes);
  }
  EXPECT_EQ(plan.sync_groups.size(), groups);
}

// The burst-parallel plan of vgg16 on 8 A100s at batch 32 (limit 2): with the analytical model
// conv1_1..pool4 run on 8 GPUs, conv5_x on 4 and the classifier on 1; with the profile the
// split differs, but every property holds for both.
class Vgg16BurstPlan : public ::testing::TestWithParam<bool> {};

TEST_P(Vgg16BurstPlan, IsAValidBurstParallelPlanConsistentWithTheSearch) {
  const Planning setup = Zoo("vgg16", /*profiled=*/GetParam());
  const PlanRequest request = Request(8, 32);
  ASSERT_OK_AND_ASSIGN(const PlanReport report, MakePlan(setup.Context(), request));
  const api::Plan& plan = report.plan;
  EXPECT_EQ(plan.strategy, api::Strategy::kBurstParallel);
  EXPECT_EQ(plan.device, "a100-40gb");
  EXPECT_EQ(plan.waves, 1);
  EXPECT_EQ(plan.gpus, 8);  // the first stage uses all of them in both plans
  EXPECT_GT(plan.stages.size(), 1u);
  std::set<int> counts(report.burst_gpus.begin(), report.burst_gpus.end());
  EXPECT_GT(counts.size(), 1u) << "a burst-parallel plan uses several GPU counts";
  EXPECT_LE(plan.predictions.amplification, 2.0);
  EXPECT_GT(plan.predictions.background_idle_gpu_seconds, 0);
  // A chain: the stages hold its layers in the model's order.
  std::vector<std::string> order, names;
  for (const api::PlanStage& stage : plan.stages) {
    order.insert(order.end(), stage.layers.begin(), stage.layers.end());
  }
  for (const Layer& layer : setup.model.layers()) names.push_back(layer.name);
  EXPECT_EQ(order, names);
  ExpectConsistentBurstPlan(setup, request, report);
}

INSTANTIATE_TEST_SUITE_P(AnalyticAndProfiled, Vgg16BurstPlan, ::testing::Bool());

TEST(PlannerBurst, PlansOfBranchingModelsAreConsistent) {
  // Forks and joins, side-by-side branches (inception_v3 on 8 GPUs runs some of Mixed_7x's
  // branches on separate ranks), and every count 1..6.
  const struct {
    const char* model;
    bool profiled;
    int gpus;
    std::int64_t batch;
    GpuCounts counts;
  } cases[] = {{"inception_v3", true, 8, 256, GpuCounts::kPowersOfTwo},
               {"resnet50", false, 8, 256, GpuCounts::kPowersOfTwo},
               {"branchy_tiny", false, 6, 4096, GpuCounts::kAllIntegers},
               {"bert_base", false, 8, 64, GpuCounts::kPowersOfTwo}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.model);
    const Planning setup = Zoo(c.model, c.profiled);
    PlanRequest request = Request(c.gpus, c.batch);
    request.gpu_counts = c.counts;
    request.tick_tock = api::Toggle::kOff;
    ASSERT_OK_AND_ASSIGN(const PlanReport report, MakePlan(setup.Context(), request));
    ExpectConsistentBurstPlan(setup, request, report);
    if (std::string(c.model) == "inception_v3") {
      size_t side_by_side = 0;
      for (const api::PlanStage& stage : report.plan.stages) {
        side_by_side += stage.concurrent_with.empty() ? 0 : 1;
      }
      EXPECT_GT(side_by_side, 0u) << "no branches ran side by side";
    }
  }
}

TEST(PlannerStrategy, ExplicitDataParallelUsesEveryGpu) {
  const Planning setup = Zoo("vgg16");
  PlanRequest request = Request(8, 32);
  request.strategy = api::Strategy::kDataParallel;
  request.tick_tock = api::Toggle::kOff;
  ASSERT_OK_AND_ASSIGN(const PlanReport report, MakePlan(setup.Context(), request));
  const api::Plan& plan = report.plan;
  EXPECT_OK(api::Validate(plan));
  EXPECT_EQ(plan.strategy, api::Strategy::kDataParallel);
  EXPECT_EQ(plan.gpus, 8);
  ASSERT_EQ(plan.stages.size(), 1u);
  EXPECT_THAT(plan.stages[0].ranks, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  EXPECT_EQ(plan.stages[0].per_gpu_batch, 4);
  EXPECT_EQ(plan.stages[0].layers.size(), 37u);
  EXPECT_TRUE(plan.transfers.empty());
  // vgg16's 138,357,544 parameters, 4 bytes each, in one all-reduce.
  ASSERT_EQ(plan.sync_groups.size(), 1u);
  EXPECT_EQ(plan.sync_groups[0].bytes, 553'430'176);
  EXPECT_DOUBLE_EQ(plan.predictions.iteration_seconds,
                   1e-9 * static_cast<double>(report.data_parallel.iteration));
  // The search found something faster under the limit, but data parallelism was asked for.
  EXPECT_LT(report.burst.iteration, report.data_parallel.iteration);
}

TEST(PlannerStrategy, AutoIsDataParallelWhenEveryLayerGetsTheSameCount) {
  // cnn_tiny at 1024 samples per GPU scales evenly: every layer runs best on all 4 GPUs.
  const Planning setup = Zoo("cnn_tiny");
  PlanRequest request = Request(4, 4096);
  request.tick_tock = api::Toggle::kOff;
  ASSERT_OK_AND_ASSIGN(const PlanReport report, MakePlan(setup.Context(), request));
  EXPECT_THAT(report.burst_gpus, Each(4));
  EXPECT_EQ(report.plan.strategy, api::Strategy::kDataParallel);
  ASSERT_EQ(report.plan.stages.size(), 1u);
  EXPECT_EQ(report.plan.stages[0].gpus, 4);
  EXPECT_EQ(report.plan.stages[0].per_gpu_batch, 1024);
  EXPECT_THAT(report.decisions, Contains(HasSubstr("every layer runs best on the same 4 GPUs")));
}

TEST(PlannerStrategy, DataParallelPlanOfABranchingModelIsOneStage) {
  // Every layer of inception_v3 on both GPUs: one stage, even though the graph forks and joins.
  const Planning setup = Zoo("inception_v3");
  PlanRequest request = Request(2, 64);
  request.strategy = api::Strategy::kDataParallel;
  request.tick_tock = api::Toggle::kOff;
  ASSERT_OK_AND_ASSIGN(const PlanReport report, MakePlan(setup.Context(), request));
  ASSERT_EQ(report.plan.stages.size(), 1u);
  EXPECT_EQ(report.plan.stages[0].layers.size(), static_cast<size_t>(setup.model.size()));
  EXPECT_EQ(report.plan.sync_groups.size(), 1u);
}

TEST(PlannerStrategy, TickTockForcedGivesTwoWaves) {
  const Planning setup = Zoo("vgg16");
  PlanRequest request = Request(8, 32);
  request.strategy = api::Strategy::kTickTock;
  ASSERT_OK_AND_ASSIGN(const PlanReport report, MakePlan(setup.Context(), request));
  const api::Plan& plan = report.plan;
  EXPECT_OK(api::Validate(plan));
  EXPECT_EQ(plan.strategy, api::Strategy::kTickTock);
  EXPECT_EQ(plan.waves, 2);
  EXPECT_GE(plan.wave_offset_fraction, 0.0);
  EXPECT_LT(plan.wave_offset_fraction, 1.0);
  ASSERT_TRUE(report.tick_tock.has_value());
  EXPECT_TRUE(report.tick_tock->fits);
  EXPECT_EQ(plan.predictions.memory_per_gpu_bytes, report.tick_tock->offsets.best_peak);
  ASSERT_EQ(plan.stages.size(), 1u);  // on every GPU, as data parallelism
  EXPECT_EQ(plan.stages[0].gpus, 8);
}

TEST(PlannerStrategy, ModelParallelWavesPutsOneStageOnEachGpu) {
  const Planning setup = Zoo("vgg16");
  PlanRequest request = Request(8, 32);
  request.strategy = api::Strategy::kModelParallelWaves;
  ASSERT_OK_AND_ASSIGN(const PlanReport report, MakePlan(setup.Context(), request));
  const api::Plan& plan = report.plan;
  EXPECT_OK(api::Validate(plan));
  EXPECT_EQ(plan.strategy, api::Strategy::kModelParallelWaves);
  ASSERT_EQ(plan.stages.size(), 8u);
  for (std::int64_t s = 0; s < 8; ++s) {
    EXPECT_EQ(plan.stages[s].gpus, 1);
    EXPECT_THAT(plan.stages[s].ranks, ElementsAre(s));
    EXPECT_EQ(plan.stages[s].per_gpu_batch, 32);
  }
  StageOfLayers(plan, setup.model);
  ASSERT_TRUE(report.model_parallel.has_value());
  EXPECT_EQ(plan.waves, 1 + report.model_parallel->tock_waves);
  EXPECT_EQ(plan.transfers.size(), 7u);  // a chain cut in 8
  // Stationary waves keep their gradients on the stage's GPU; round-robin replicas all-reduce
  // them (planner_waves_test.cpp).
  EXPECT_EQ(plan.sync_groups.empty(), plan.wave_placement == api::WavePlacement::kStationary);
}

TEST(PlannerStrategy, AutoFallsBackToModelParallelWavesForAModelTooLargeForOneGpu) {
  // 16 layers x 3 GiB of state = 48 GiB on the GPU that runs them all; 8 stages of 2 layers hold
  // 6 GiB each, within the a100-40gb's 40 GiB.
  const Planning setup = MakePlanning(HugeLinears(16, 16384));
  ASSERT_OK_AND_ASSIGN(const PlanReport report, MakePlan(setup.Context(), Request(8, 8)));
  const api::Plan& plan = report.plan;
  EXPECT_OK(api::Validate(plan));
  EXPECT_EQ(plan.strategy, api::Strategy::kModelParallelWaves);
  ASSERT_EQ(plan.stages.size(), 8u);
  for (const api::PlanStage& stage : plan.stages) {
    EXPECT_THAT(stage.ranks, ElementsAre(stage.index));
    EXPECT_EQ(stage.layers.size(), 2u);
  }
  EXPECT_LE(plan.predictions.memory_per_gpu_bytes, setup.device.memory_bytes);
  EXPECT_GE(plan.predictions.memory_per_gpu_bytes, Bytes{6} << 30);
  EXPECT_THAT(report.decisions,
              Contains(HasSubstr("plan needs 48.0 GiB per GPU; splitting the model into stages")));
  // Forced data parallelism does not fall back.
  PlanRequest forced = Request(8, 8);
  forced.strategy = api::Strategy::kDataParallel;
  EXPECT_THAT(MakePlan(setup.Context(), forced),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("model huge needs 48.0 GiB on its busiest GPU")));
}

TEST(PlannerErrors, RejectsBadRequestsWithCodes) {
  const Planning setup = Zoo("vgg16");
  EXPECT_THAT(MakePlan(setup.Context(), Request(8, 4)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("global batch 4 is smaller than the 8 GPUs")));
  EXPECT_THAT(MakePlan(setup.Context(), Request(0, 4)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("gpus: must be in [1, 65536], got 0")));
  EXPECT_THAT(MakePlan(setup.Context(), Request(1 << 17, std::int64_t{1} << 20)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got 131072")));
  // Sizes beyond 2^31 samples would overflow the planner's integer times and byte counts.
  EXPECT_THAT(MakePlan(setup.Context(), Request(4, std::numeric_limits<std::int64_t>::max())),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("global batch: must be <= 2147483648")));
  PlanRequest bad_job = Request(8, 32);
  bad_job.job = "no namespace";
  EXPECT_THAT(
      MakePlan(setup.Context(), bad_job),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("job: must be namespace/name")));
  bad_job.job = "team-a/vgg";
  EXPECT_OK(MakePlan(setup.Context(), bad_job).status());
  EXPECT_THAT(MakePlan(setup.Context(), Request(-2, 4)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got -2")));
  EXPECT_THAT(
      MakePlan(setup.Context(), Request(1, 0)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("global batch: must be >= 1")));
  for (double limit : {0.5, 0.0, -1.0, std::numeric_limits<double>::quiet_NaN(),
                       std::numeric_limits<double>::infinity()}) {
    PlanRequest request = Request(8, 32);
    request.amplification_limit = limit;
    EXPECT_THAT(MakePlan(setup.Context(), request),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("amplification limit: must be a finite number >= 1.0, got ")))
        << limit;
  }
  PlanRequest half = Request(8, 32);
  half.amplification_limit = 0.5;
  EXPECT_THAT(MakePlan(setup.Context(), half),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got 0.5")));
}

TEST(PlannerErrors, ModelThatFitsNoGpuNamesTheModelAndTheMemory) {
  // One 65536 x 65536 layer: 4,294,967,296 parameters, 48 GiB of state, on any number of GPUs.
  const Planning setup = MakePlanning(HugeLinears(1, 65536));
  EXPECT_THAT(MakePlan(setup.Context(), Request(8, 8)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("model huge split into 1 stages of 8 samples does not fit the "
                                 "40.0 GiB of a100-40gb")));
}

// The planner counts bytes in 64-bit integers: a job whose activations at the global batch pass
// what they hold is an error naming the model and the batch, not a plan built on wrapped
// (negative) byte counts.
TEST(PlannerErrors, JobTooLargeToCountIsRejectedNotWrapped) {
  // 10^12 items per sample: 4 TB; 2^20 samples of them are 4.2 EB (2^62 bytes is 4.6 EB).
  ModelBuilder builder("vast", TensorShape{{1'000'000, 1'000'000}});
  builder.ReLU("relu", ModelBuilder::kInput);
  const Planning setup = MakePlanning(std::move(builder).Build().value());
  for (std::int64_t batch : {std::int64_t{1} << 20, std::int64_t{1} << 24}) {
    EXPECT_THAT(MakePlan(setup.Context(), Request(8, batch)),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr(absl::StrCat("model vast at a global batch of ", batch)),
                               HasSubstr("more than the 1.15e+18 bytes (1 EiB)"))))
        << batch;
  }
  // A smaller batch is planned, and found not to fit.
  EXPECT_THAT(MakePlan(setup.Context(), Request(8, 8)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("does not fit")));
}

TEST(PlannerErrors, TickTockOnNeedsADataParallelPlan) {
  const Planning setup = Zoo("vgg16");
  PlanRequest request = Request(8, 32);  // Auto: burst-parallel
  request.tick_tock = api::Toggle::kOn;
  EXPECT_THAT(MakePlan(setup.Context(), request),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("tick-tock: On needs a data-parallel plan, but the plan is "
                                 "burst-parallel")));
  request.strategy = api::Strategy::kModelParallelWaves;
  EXPECT_THAT(
      MakePlan(setup.Context(), request),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("but the plan is model-parallel")));
  request.strategy = api::Strategy::kDataParallel;  // now it can
  EXPECT_OK(MakePlan(setup.Context(), request));
}

TEST(PlannerErrors, TickTockForcedWhenTwoWavesDoNotFit) {
  // 8 layers x 3 GiB = 24 GiB of state: one wave fits the 39 usable GiB, two replicas do not.
  const Planning setup = MakePlanning(HugeLinears(8, 16384));
  PlanRequest request = Request(8, 8);
  request.strategy = api::Strategy::kTickTock;
  EXPECT_THAT(MakePlan(setup.Context(), request),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("tick-tock: two waves of 1 samples need 48.0 GiB per GPU at the "
                                 "best offset; a100-40gb leaves 39.0 GiB")));
  // Auto leaves tick-tock off and plans one wave.
  request.strategy = api::Strategy::kAuto;
  ASSERT_OK_AND_ASSIGN(const PlanReport report, MakePlan(setup.Context(), request));
  EXPECT_EQ(report.plan.waves, 1);
  ASSERT_TRUE(report.tick_tock.has_value());
  EXPECT_EQ(report.tick_tock->verdict, TickTockVerdict::kWavesDoNotFit);
}

TEST(PlannerDataMovement, AutoNeverCompressesWeightsOnDoes) {
  const Planning setup = Zoo("vgg16");
  ASSERT_OK_AND_ASSIGN(const PlanReport automatic, MakePlan(setup.Context(), Request(8, 32)));
  ASSERT_TRUE(automatic.data_movement.has_value());
  // Compression would be fastest here, and Auto still leaves it off (it changes the numerics).
  EXPECT_TRUE(automatic.data_movement->Recommended().option.compress_weights);
  EXPECT_FALSE(automatic.plan.data_movement.weight_compression);
  EXPECT_TRUE(automatic.plan.data_movement.cpu_split);

  PlanRequest on = Request(8, 32);
  on.weight_compression = api::Toggle::kOn;
  ASSERT_OK_AND_ASSIGN(const PlanReport compressed, MakePlan(setup.Context(), on));
  EXPECT_TRUE(compressed.plan.data_movement.weight_compression);

  PlanRequest no_split = Request(8, 32);
  no_split.cpu_split = api::Toggle::kOff;
  no_split.preload = api::Toggle::kOff;
  ASSERT_OK_AND_ASSIGN(const PlanReport master, MakePlan(setup.Context(), no_split));
  EXPECT_FALSE(master.plan.data_movement.cpu_split);
  EXPECT_FALSE(master.plan.data_movement.preload);
}

// BuildBurstProblem's tables at every count of `counts`, priced as it prices them
// (burst_problem.h): work = round_ns(compute(shard) + all-reduce(params, gpus)).
BurstProblem Unpruned(const BurstProblem& pruned, const Planning& setup, const CountSet& counts) {
  BurstProblem problem = pruned;
  problem.counts = counts;
  for (const Layer& layer : setup.model.layers()) {
    LayerCost& cost = problem.layers[layer.id];
    cost.work.clear();
    for (int k = 0; k < counts.size(); ++k) {
      const Seconds time = setup.compute->Time(layer, counts.shard[k]).Total() +
                           setup.comm->AllReduce(layer.ParamBytes(), counts.gpus[k]);
      cost.work.push_back(std::llround(time.count() * 1e9));
    }
  }
  return problem;
}

// Every layer's work of `pruned` appears unchanged at its count in `unpruned`.
void ExpectSameTablesAtKeptCounts(const BurstProblem& pruned, const BurstProblem& unpruned) {
  for (int k = 0; k < pruned.counts.size(); ++k) {
    int u = 0;
    while (unpruned.counts.gpus[u] != pruned.counts.gpus[k]) ++u;
    for (size_t l = 0; l < pruned.layers.size(); ++l) {
      EXPECT_EQ(pruned.layers[l].work[k], unpruned.layers[l].work[u]) << "layer " << l;
    }
  }
}

TEST(BurstPrune, KeepsTheSmallestCountOfEachShardAndFindsTheSameOptimum) {
  // vgg16, every count 1..8 at B = 10: shards ceil(10 / g) = 10, 5, 4, 3, 2, 2, 2, 2, so 6, 7
  // and 8 GPUs give the 5-GPU shard and are dropped.
  const Planning setup = Zoo("vgg16");
  BurstOptions options;
  options.max_gpus = 8;
  options.global_batch = 10;
  options.gpu_counts = GpuCounts::kAllIntegers;
  ASSERT_OK_AND_ASSIGN(const BurstProblem pruned,
                       BuildBurstProblem(setup.model, *setup.compute, *setup.comm, options));
  EXPECT_THAT(pruned.counts.gpus, ElementsAre(1, 2, 3, 4, 5));
  EXPECT_THAT(pruned.counts.shard, ElementsAre(10, 5, 4, 3, 2));
  const CountSet all = MakeCountSet(8, 10, GpuCounts::kAllIntegers, 8);
  ASSERT_THAT(all.shard, ElementsAre(10, 5, 4, 3, 2, 2, 2, 2));
  const BurstProblem unpruned = Unpruned(pruned, setup, all);
  ExpectSameTablesAtKeptCounts(pruned, unpruned);
  ASSERT_OK_AND_ASSIGN(const BurstSearchResult with_prune, SearchBurstAssignment(pruned));
  ASSERT_OK_AND_ASSIGN(const BurstSearchResult without, SearchBurstAssignment(unpruned));
  EXPECT_EQ(with_prune.iteration, without.iteration);

  // MakePlan plans on the pruned problem and gets the same iteration.
  PlanRequest request = Request(8, 10);
  request.gpu_counts = GpuCounts::kAllIntegers;
  ASSERT_OK_AND_ASSIGN(const PlanReport report, MakePlan(setup.Context(), request));
  EXPECT_EQ(report.burst.iteration, without.iteration);
  EXPECT_LE(report.plan.gpus, 5);
}

// A cost model under which scaling pays: layer l takes (l + 1) x 40 us per sample forward and
// twice that backward, plus 20 us per pass, so the search has real choices to make.
class LinearCost final : public ComputeCostModel {
 public:
  LayerTime Time(const Layer& layer, std::int64_t batch) const override {
    const double per_sample = 40e-6 * (layer.id + 1);
    return {Seconds(20e-6 + per_sample * batch), Seconds(20e-6 + 2 * per_sample * batch)};
  }
  std::string Description() const override { return "linear in the batch"; }
};

TEST(BurstPrune, MatchesAnExhaustiveSearchOverEveryCountOnSmallModels) {
  // mlp_tiny on 6 GPUs, B = 7: shards 7, 4, 3, 2, 2, 2 (4, 5 and 6 GPUs share shard 2);
  // cnn_tiny on 4 GPUs, B = 5: shards 5, 3, 2, 2 (3 and 4 GPUs share shard 2).
  const struct {
    const char* model;
    int gpus;
    std::int64_t batch;
    std::vector<int> kept;
  } cases[] = {{"mlp_tiny", 6, 7, {1, 2, 3, 4}}, {"cnn_tiny", 4, 5, {1, 2, 3}}};
  for (const auto& c : cases) {
    for (bool analytic : {true, false}) {
      Planning setup = Zoo(c.model);
      if (!analytic) setup.compute = std::make_unique<LinearCost>();
      BurstOptions options;
      options.max_gpus = c.gpus;
      options.global_batch = c.batch;
      options.gpu_counts = GpuCounts::kAllIntegers;
      ASSERT_OK_AND_ASSIGN(const BurstProblem pruned,
                           BuildBurstProblem(setup.model, *setup.compute, *setup.comm, options));
      EXPECT_EQ(pruned.counts.gpus, c.kept) << c.model;
      const BurstProblem unpruned =
          Unpruned(pruned, setup, MakeCountSet(c.gpus, c.batch, GpuCounts::kAllIntegers, 8));
      ExpectSameTablesAtKeptCounts(pruned, unpruned);
      ASSERT_OK_AND_ASSIGN(const BurstSearchResult searched, SearchBurstAssignment(pruned));
      EXPECT_EQ(searched.iteration, testing::ExhaustiveOptimum(unpruned))
          << c.model << (analytic ? " analytic" : " linear cost");
      if (!analytic) {  // the optimum really spreads some layers over several GPUs
        EXPECT_GT(
            *std::max_element(searched.assignment.count.begin(), searched.assignment.count.end()),
            0)
            << c.model;
      }
    }
  }
}

}  // namespace
}  // namespace wavepool::planner
