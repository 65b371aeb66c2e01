// Replicas on a GPU (replica_device.h): data parallel, a gang of two ranks sharing one GPU and
// tick-tock train like the same plans on the CPU; each role's stream has its priority; per-layer
// launch groups keep their credit until the GPU is done; the loader's batches arrive on the
// device equal to the host's. Skipped (never passed) where LibTorch sees no CUDA device.
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/runtime/counting_pacer.h"
#include "tests/runtime/exec_test_support.h"
#include "tests/support/status_matchers.h"
#include "wavepool/planner/zoo.h"
#include "wavepool/runtime/batch_loader.h"
#include "wavepool/runtime/executable_model.h"
#include "wavepool/runtime/replica_device.h"
#include "wavepool/runtime/sample_source.h"

#ifdef WAVEPOOL_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>

#include "wavepool/runtime/role_stream.h"
#endif

namespace wavepool::runtime {
namespace {

using testing::PlanFor;
using testing::RankResult;
using testing::RelativeDifference;
using testing::TrainRanks;

#define REQUIRE_GPU() \
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device visible to LibTorch"

const torch::Device kGpu(torch::kCUDA, 0);

std::shared_ptr<const planner::ModelGraph> Builtin(const std::string& name) {
  absl::StatusOr<planner::ModelGraph> graph = planner::BuiltinModel(name);
  EXPECT_TRUE(graph.ok()) << graph.status();
  return std::make_shared<const planner::ModelGraph>(*std::move(graph));
}

api::Plan PlanOf(const planner::ModelGraph& graph, int gpus, std::int64_t batch, bool tick_tock) {
  planner::PlanRequest request;
  request.gpus = gpus;
  request.global_batch = batch;
  request.strategy = api::Strategy::kDataParallel;
  request.tick_tock = tick_tock ? api::Toggle::kOn : api::Toggle::kOff;
  absl::StatusOr<api::Plan> plan = PlanFor(graph, request, /*steps=*/6, 0.05, 11);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

// Full float32 on the GPU while it lives: cuDNN convolutions otherwise round their inputs to
// TF32 (10-bit mantissas), a numerics choice LibTorch makes by default, not the runtime's.
class NoTf32 {
 public:
  NoTf32() : cudnn_(at::globalContext().allowTF32CuDNN()) {
    at::globalContext().setAllowTF32CuDNN(false);
  }
  ~NoTf32() { at::globalContext().setAllowTF32CuDNN(cudnn_); }

 private:
  const bool cudnn_;
};

// Trains `plan` of `model` on the CPU and on the GPU: every parameter of every rank equal, within
// float32 kernels' rounding (cuDNN and cuBLAS sum in other orders than the CPU).
void ExpectTrainsLikeTheCpu(const std::string& model, const api::Plan& plan) {
  auto graph = Builtin(model);
  const NoTf32 exact;
  ASSERT_OK_AND_ASSIGN(std::vector<RankResult> cpu, TrainRanks(plan, graph));
  ASSERT_OK_AND_ASSIGN(std::vector<RankResult> gpu, TrainRanks(plan, graph, kGpu));
  ASSERT_EQ(gpu.size(), cpu.size());
  for (std::size_t r = 0; r < gpu.size(); ++r) {
    ASSERT_EQ(gpu[r].parameters.size(), cpu[r].parameters.size());
    for (const auto& [name, tensor] : cpu[r].parameters) {
      const torch::Tensor& on_gpu = gpu[r].parameters.at(name);
      EXPECT_TRUE(on_gpu.device().is_cpu());  // returned as host copies
      EXPECT_LT(RelativeDifference(on_gpu, tensor), 1e-3) << "rank " << r << " " << name;
    }
  }
}

TEST(ReplicaOnGpu, DataParallelTrainsLikeTheCpu) {
  REQUIRE_GPU();
  ExpectTrainsLikeTheCpu("cnn_tiny", PlanOf(*Builtin("cnn_tiny"), 1, 16, false));
}

TEST(ReplicaOnGpu, TwoRanksSharingOneGpuTrainLikeTheCpu) {
  REQUIRE_GPU();
  ExpectTrainsLikeTheCpu("mlp_tiny", PlanOf(*Builtin("mlp_tiny"), 2, 16, false));
}

TEST(ReplicaOnGpu, TickTockTrainsLikeTheCpu) {
  REQUIRE_GPU();
  const api::Plan plan = PlanOf(*Builtin("mlp_tiny"), 2, 16, true);
  ASSERT_EQ(plan.strategy, api::Strategy::kTickTock);
  ExpectTrainsLikeTheCpu("mlp_tiny", plan);
}

TEST(ReplicaOnGpu, LaunchGroupsKeepTheirCreditUntilTheGpuIsDone) {
  REQUIRE_GPU();
  CountingPacer pacer(2);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReplicaDevice> device,
                       ReplicaDevice::Create(kGpu, agent::Role::kBackground, &pacer));
  const c10::OptionalStreamGuard on_device = device->Enter();
  torch::Tensor a = torch::randn({2048, 2048}, torch::TensorOptions().device(kGpu));
  torch::Tensor sum = torch::zeros_like(a);
  constexpr int kGroups = 40;
  for (int i = 0; i < kGroups; ++i) {
    ASSERT_OK(device->pacer()->Run(OpGroup{static_cast<std::uint32_t>(i)},
                                   [&] { sum.add_(torch::mm(a, a)); }));
  }
  ASSERT_OK(device->Synchronize());
  EXPECT_LE(pacer.max_in_flight(), 2);
  EXPECT_EQ(pacer.ended(), kGroups);
  EXPECT_EQ(pacer.zero_durations(), 0);
  const torch::Tensor expected = torch::mm(a, a).mul_(kGroups);
  EXPECT_LT(RelativeDifference(sum, expected), 1e-3);
}

#ifdef WAVEPOOL_TORCH_CUDA
TEST(ReplicaOnGpu, EachRoleLaunchesOnAStreamWithItsPriority) {
  REQUIRE_GPU();
  CountingPacer pacer(4);
  for (agent::Role role : {agent::Role::kForeground, agent::Role::kBackground}) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ReplicaDevice> device,
                         ReplicaDevice::Create(kGpu, role, &pacer));
    const c10::OptionalStreamGuard on_device = device->Enter();
    int priority = 0;
    ASSERT_EQ(cudaStreamGetPriority(c10::cuda::getCurrentCUDAStream(0).stream(), &priority),
              cudaSuccess);
    ASSERT_OK_AND_ASSIGN(int expected, StreamPriorityFor(role));
    EXPECT_EQ(priority, expected);
  }
}
#endif

TEST(ReplicaOnGpu, LoaderBatchesArriveOnTheDeviceAsRead) {
  REQUIRE_GPU();
  auto graph = Builtin("cnn_tiny");
  ASSERT_OK_AND_ASSIGN(SampleSpec spec, SampleSpecOf(*graph));
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source, OpenSampleSource("synthetic", spec, 3));
  const SampleOrder order(3, source->size(), 32);
  BatchLoader::Options on_host;
  BatchLoader::Options on_gpu;
  on_gpu.device = kGpu;
  ASSERT_OK_AND_ASSIGN(auto host_loader, BatchLoader::Create(source, order, {{0, 32}}, on_host));
  ASSERT_OK_AND_ASSIGN(auto gpu_loader, BatchLoader::Create(source, order, {{0, 32}}, on_gpu));
  for (int step = 0; step < 4; ++step) {
    ASSERT_OK_AND_ASSIGN(std::vector<Batch> host, host_loader->Next());
    ASSERT_OK_AND_ASSIGN(std::vector<Batch> gpu, gpu_loader->Next());
    ASSERT_EQ(gpu.size(), 1U);
    EXPECT_TRUE(gpu[0].inputs.is_cuda());
    EXPECT_TRUE(gpu[0].labels.is_cuda());
    EXPECT_TRUE(torch::equal(gpu[0].inputs.cpu(), host[0].inputs));
    EXPECT_TRUE(torch::equal(gpu[0].labels.cpu(), host[0].labels));
  }
}

}  // namespace
}  // namespace wavepool::runtime
