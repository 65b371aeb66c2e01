// A training step captured as one CUDA graph and cut into pieces trains exactly as the eager
// step does: after K steps launched piece by piece through the launch gate, every parameter
// equals the eager run's within bf16 tolerance. Needs a GPU and LibTorch with CUDA; skipped
// (never passed) otherwise.
#include <torch/torch.h>

#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/runtime/graph_pieces.h"
#include "wavepool/runtime/launch_pacer.h"
#include "wavepool/runtime/piece_launcher.h"

#ifdef WAVEPOOL_TORCH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace wavepool::runtime {
namespace {

#ifdef WAVEPOOL_TORCH_CUDA

constexpr int kSteps = 5;

struct Model {
  torch::nn::Sequential net;
  std::unique_ptr<torch::optim::SGD> optimizer;
};

Model MakeModel() {
  torch::manual_seed(7);
  Model model;
  model.net = torch::nn::Sequential(torch::nn::Linear(64, 256), torch::nn::ReLU(),
                                    torch::nn::Linear(256, 256), torch::nn::ReLU(),
                                    torch::nn::Linear(256, 10));
  model.net->to(torch::Device(torch::kCUDA, 0), torch::kBFloat16);
  model.optimizer = std::make_unique<torch::optim::SGD>(
      model.net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  return model;
}

void Step(Model& model, const torch::Tensor& x, const torch::Tensor& y) {
  torch::Tensor loss = torch::mse_loss(model.net->forward(x), y);
  loss.backward();
  torch::NoGradGuard no_grad;
  model.optimizer->step();
}

TEST(CudaTrainingPiecesTest, PiecesTrainLikeTheEagerStep) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA GPU visible";
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool();
  c10::cuda::CUDAStreamGuard guard(stream);
  const auto options = torch::TensorOptions().device(torch::kCUDA, 0).dtype(torch::kBFloat16);
  torch::manual_seed(11);
  const torch::Tensor x = torch::randn({32, 64}, options);
  const torch::Tensor y = torch::randn({32, 10}, options);
  Model eager = MakeModel();
  Model graphed = MakeModel();
  for (Model* model : {&eager, &graphed}) {  // warm-up: momentum buffers exist before capture
    for (int i = 0; i < 2; ++i) {
      model->optimizer->zero_grad();
      Step(*model, x, y);
    }
  }
  at::cuda::CUDAGraph graph(/*keep_graph=*/true);
  graphed.optimizer->zero_grad(/*set_to_none=*/true);
  graph.capture_begin();
  Step(graphed, x, y);
  graph.capture_end();
  ASSERT_OK_AND_ASSIGN(std::vector<cudaGraphNode_t> order,
                       TopologicalOrder(graph.raw_cuda_graph()));
  ASSERT_GE(order.size(), 5u);
  std::vector<std::size_t> counts(5, order.size() / 5);
  counts.back() += order.size() % 5;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphPieces> pieces,
                       GraphPieces::SplitByNodeCounts(graph.raw_cuda_graph(), counts));
  std::vector<torch::Tensor> before;
  for (const torch::Tensor& p : eager.net->parameters()) before.push_back(p.detach().clone());
  std::unique_ptr<LaunchPacer> pacer = MakeUnpacedLauncher();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PieceLauncher> launcher,
                       PieceLauncher::Create(*pacer, stream.stream()));
  for (int step = 0; step < kSteps; ++step) {
    eager.optimizer->zero_grad();
    Step(eager, x, y);
    for (std::size_t i = 0; i < pieces->size(); ++i) {
      ASSERT_OK(launcher->Launch(OpGroup{static_cast<std::uint32_t>(i)}, pieces->piece(i)));
    }
    ASSERT_OK(launcher->Drain());
  }
  stream.synchronize();
  const std::vector<torch::Tensor> expected = eager.net->parameters();
  const std::vector<torch::Tensor> actual = graphed.net->parameters();
  ASSERT_EQ(expected.size(), actual.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_TRUE(torch::allclose(actual[i].to(torch::kFloat32), expected[i].to(torch::kFloat32),
                                /*rtol=*/1e-2, /*atol=*/1e-2))
        << "parameter " << i << " differs by "
        << (actual[i] - expected[i]).abs().max().item<float>();
  }
  // Training moved the weights: the comparison is not between two untouched models.
  EXPECT_FALSE(torch::equal(expected[0], before[0]));
  EXPECT_EQ(launcher->completed(), static_cast<std::int64_t>(kSteps * pieces->size()));
}

#else

TEST(CudaTrainingPiecesTest, PiecesTrainLikeTheEagerStep) {
  GTEST_SKIP() << "LibTorch without CUDA";
}

#endif

}  // namespace
}  // namespace wavepool::runtime
