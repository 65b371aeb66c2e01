// MakePlan's figures a user reads: one iteration time with the input copy in it, the candidates
// counted the same way, and the fallback to a plan that fits when the search's optimum does not.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/validation.h"
#include "wavepool/planner/data_movement.h"
#include "wavepool/planner/planner.h"
#include "wavepool/planner/zoo.h"

namespace wavepool::planner {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

struct Planning {
  ModelGraph model;
  DeviceSpec device;
  ComputeCostModelPtr compute;
  std::unique_ptr<CommModel> comm;

  PlanContext Context() const { return PlanContext{model, device, *compute, *comm}; }
};

// `name` on the a100-40gb, analytical cost model, the device's default network.
Planning Zoo(const char* name) {
  const DeviceSpec device = FindDevice("a100-40gb").value();
  ComputeCostModelPtr compute = MakeAnalyticCostModel(device);
  auto comm = std::make_unique<CommModel>(DefaultNetworkModel(device));
  return Planning{BuiltinModel(name).value(), device, std::move(compute), std::move(comm)};
}

PlanRequest Request(int gpus, std::int64_t batch) {
  PlanRequest request;
  request.gpus = gpus;
  request.global_batch = batch;
  return request;
}

TEST(PlanFigures, TheIterationCountsTheInputCopyLeftOnTheCriticalPath) {
  const Planning setup = Zoo("resnet50");
  PlanRequest request = Request(8, 256);
  request.preload = api::Toggle::kOff;  // nothing hides the copy
  request.cpu_split = api::Toggle::kOff;
  ASSERT_OK_AND_ASSIGN(const PlanReport report, MakePlan(setup.Context(), request));
  const api::PlanPredictions& p = report.plan.predictions;
  EXPECT_FALSE(report.plan.data_movement.preload);
  EXPECT_FALSE(report.plan.data_movement.cpu_split);
  // The chosen data-movement estimate's exposed copy and scatter, nothing else per iteration.
  ASSERT_TRUE(report.data_movement.has_value());
  const DataMovementEstimate& chosen =
      report.data_movement->Find(DataMovementOption{BatchSplit::kMasterGpu, false, false});
  EXPECT_EQ(report.input_exposed, chosen.exposed_host_to_device + chosen.peer_to_peer);
  EXPECT_EQ(report.input_copy, chosen.host_to_device + chosen.peer_to_peer);
  EXPECT_GT(report.input_exposed.count(), 0);
  const double searched = 1e-9 * static_cast<double>(report.burst.iteration);
  EXPECT_DOUBLE_EQ(p.iteration_seconds, searched + report.input_exposed.count());
  EXPECT_NEAR(p.compute_seconds + p.communication_seconds, p.iteration_seconds, 1e-15);
  EXPECT_NEAR(p.samples_per_second, 256 / p.iteration_seconds, 1e-9);
  EXPECT_NEAR(p.background_idle_gpu_seconds, report.plan.gpus * p.iteration_seconds - p.gpu_seconds,
              1e-12);
  // The plan is the search's candidate, and both are counted the same way.
  EXPECT_DOUBLE_EQ(report.burst_figures.iteration.count(), p.iteration_seconds);
  EXPECT_EQ(report.burst_figures.input, report.input_exposed);
  EXPECT_THAT(report.decisions, Contains(HasSubstr("data movement: master-gpu: the input copy "
                                                   "takes ")));
}

TEST(PlanFigures, PreloadHidesACopyShorterThanTheCompute) {
  const Planning setup = Zoo("resnet50");
  ASSERT_OK_AND_ASSIGN(const PlanReport report, MakePlan(setup.Context(), Request(8, 256)));
  EXPECT_TRUE(report.plan.data_movement.preload);
  EXPECT_GT(report.input_copy.count(), 0);
  EXPECT_EQ(report.input_exposed.count(), 0);
  EXPECT_DOUBLE_EQ(report.plan.predictions.iteration_seconds,
                   1e-9 * static_cast<double>(report.burst.iteration));
}

TEST(PlanFigures, SixtyFiveThousandGpusFallBackToAPlanThatFits) {
  // vgg16 with 65536 samples: the search's optimum keeps layers on few GPUs (the amplification
  // limit), whose thousands of samples per GPU do not fit; model-parallel stages of 65536 samples
  // fit even less. The search is re-run with every layer on enough GPUs for its samples to fit.
  const Planning setup = Zoo("vgg16");
  ASSERT_OK_AND_ASSIGN(const PlanReport report, MakePlan(setup.Context(), Request(65536, 65536)));
  const api::Plan& plan = report.plan;
  EXPECT_OK(api::Validate(plan));
  const Bytes usable = setup.device.memory_bytes - kDefaultMemoryReserve;
  EXPECT_LE(plan.predictions.memory_per_gpu_bytes, usable);
  ASSERT_TRUE(report.unbounded_burst.has_value());
  EXPECT_GT(report.unbounded_burst->memory_per_gpu, usable);
  EXPECT_FALSE(report.unbounded_burst->fits_memory);
  EXPECT_TRUE(report.burst_figures.fits_memory);
  EXPECT_GT(report.memory_bound_gpus, 1);
  for (const api::PlanStage& stage : plan.stages) EXPECT_GE(stage.gpus, report.memory_bound_gpus);
  EXPECT_THAT(report.decisions, Contains(HasSubstr("memory: the search's optimum needs ")));
  EXPECT_THAT(report.decisions,
              Contains(HasSubstr(absl::StrCat("searched again with every layer on at least ",
                                              report.memory_bound_gpus, " GPUs"))));
  EXPECT_NE(plan.strategy, api::Strategy::kModelParallelWaves);
}

TEST(PlanFigures, FourThousandGpuDataParallelUsesTheHierarchicalAllReduce) {
  const Planning setup = Zoo("vgg16");
  PlanRequest request = Request(4096, 4096);
  request.strategy = api::Strategy::kDataParallel;
  ASSERT_OK_AND_ASSIGN(const PlanReport report, MakePlan(setup.Context(), request));
  ASSERT_EQ(report.plan.sync_groups.size(), 1u);
  const api::SyncGroup& group = report.plan.sync_groups[0];
  EXPECT_EQ(group.ranks.size(), 4096u);
  EXPECT_EQ(group.algorithm, api::CollectiveAlgorithm::kHierarchical);
  // Each layer's gradients are all-reduced on their own (deeppool-burst-parallel §4.1).
  double expected = 0;
  for (const Layer& layer : setup.model.layers()) {
    expected += setup.comm->AllReduce(layer.ParamBytes(), 4096).count();
  }
  EXPECT_NEAR(group.predicted_seconds, expected, 1e-12);
  // A flat ring would pay 2 x 4095 latencies of 40 us for each of the 16 layers with weights.
  EXPECT_LT(group.predicted_seconds, 16 * 2 * 4095 * 40e-6);
}

}  // namespace
}  // namespace wavepool::planner
