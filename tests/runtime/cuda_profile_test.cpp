// `wavepool profile --device cuda`: every layer's forward and backward timed on a GPU as CUDA
// graphs (eagerly where a layer cannot be captured), written as the planner's profile CSV, which
// binds back to the model. Skipped (never passed) where LibTorch sees no CUDA device.
#include <torch/torch.h>

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models_test_graphs.h"
#include "tests/support/status_matchers.h"
#include "wavepool/planner/compute_cost.h"
#include "wavepool/planner/device.h"
#include "wavepool/planner/profile.h"
#include "wavepool/planner/zoo.h"
#include "wavepool/runtime/layer_profiler.h"

namespace wavepool::runtime {
namespace {

using ::testing::SizeIs;

TEST(GpuProfile, EveryLayerIsTimedOnTheGpuAndItsRowsBind) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible to LibTorch";
  ASSERT_OK_AND_ASSIGN(const planner::ModelGraph cnn, planner::BuiltinModel("cnn_tiny"));
  ASSERT_OK_AND_ASSIGN(const planner::ModelGraph image, testing::ImageGraph());
  ASSERT_OK_AND_ASSIGN(const planner::ModelGraph tokens, testing::TokenGraph());
  for (const planner::ModelGraph* graph : {&cnn, &image, &tokens}) {
    SCOPED_TRACE(graph->name());
    ProfileOptions options;
    options.batch_sizes = {4, 32};
    options.warmup = 1;
    options.repeats = 5;
    options.device = "cuda";
    ASSERT_OK_AND_ASSIGN(const std::vector<MeasuredLayer> measured, ProfileLayers(*graph, options));
    ASSERT_THAT(measured, SizeIs(graph->size()));
    for (const MeasuredLayer& layer : measured) {
      for (const auto& [batch, time] : layer.by_batch) {
        EXPECT_GT(time.forward.count(), 0) << graph->layer(layer.layer).name << " at " << batch;
        EXPECT_GE(time.backward.count(), 0) << graph->layer(layer.layer).name << " at " << batch;
        EXPECT_LT(time.Total().count(), 0.1) << graph->layer(layer.layer).name << " at " << batch;
      }
    }
    ASSERT_OK_AND_ASSIGN(const std::vector<planner::LayerProfile> profiles,
                         planner::ParseProfileCsv(FormatProfileCsv(*graph, measured)));
    ASSERT_THAT(profiles, SizeIs(1));
    ASSERT_OK_AND_ASSIGN(const planner::DeviceSpec device, planner::FindDevice("h100"));
    EXPECT_OK(
        planner::MakeProfiledCostModel(profiles[0], *graph, planner::MakeAnalyticCostModel(device))
            .status());
  }
}

}  // namespace
}  // namespace wavepool::runtime
