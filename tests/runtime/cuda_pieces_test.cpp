// Graph pieces and the piece launcher on a real GPU, with graphs of memset, copy and host nodes
// (the CUDA runtime only, no kernels of ours): cutting a graph anywhere keeps its result, durations
// bound the pieces, splitting only ever runs the whole step in order, the launcher never has more
// pieces in flight than the pacer grants, a pause holds pieces back, and a stopped pacer launches
// nothing. Skipped where no GPU is visible.
#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/runtime/counting_pacer.h"
#include "tests/support/status_matchers.h"
#include "wavepool/runtime/gpu_launch_pacer.h"
#include "wavepool/runtime/graph_pieces.h"
#include "wavepool/runtime/launch_pacer.h"
#include "wavepool/runtime/piece_launcher.h"
#include "wavepool/runtime/role_stream.h"

namespace wavepool::runtime {
namespace {

using ::testing::ElementsAreArray;
using ::wavepool::testing::StatusIs;

constexpr std::size_t kChunk = 1 << 20;  // bytes per step of the chain

bool HaveGpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

#define REQUIRE_GPU() \
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA GPU visible"

// A chain whose result depends on the order of its nodes: step i sets `scratch` to byte i and
// copies it to chunk i of `out`. Run out of order, a chunk would hold another step's byte.
class ChainGraph {
 public:
  explicit ChainGraph(int steps) : steps_(steps) {
    void* scratch = nullptr;
    void* out = nullptr;
    EXPECT_EQ(cudaMalloc(&scratch, kChunk), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&out, kChunk * static_cast<std::size_t>(steps)), cudaSuccess);
    scratch_ = static_cast<unsigned char*>(scratch);
    out_ = static_cast<unsigned char*>(out);
    EXPECT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    EXPECT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    for (int i = 0; i < steps; ++i) EnqueueStep(i);
    EXPECT_EQ(cudaStreamEndCapture(stream_, &graph_), cudaSuccess);
  }
  ~ChainGraph() {
    cudaGraphDestroy(graph_);
    cudaStreamDestroy(stream_);
    cudaFree(scratch_);
    cudaFree(out_);
  }

  // Step i of the chain on the stream (captured by the constructor; eager afterwards).
  void EnqueueStep(int i) {
    EXPECT_EQ(cudaMemsetAsync(scratch_, i + 1, kChunk, stream_), cudaSuccess);
    EXPECT_EQ(cudaMemcpyAsync(out_ + kChunk * static_cast<std::size_t>(i), scratch_, kChunk,
                              cudaMemcpyDeviceToDevice, stream_),
              cudaSuccess);
  }
  cudaGraph_t graph() const { return graph_; }
  cudaStream_t stream() const { return stream_; }
  std::size_t nodes() const { return 2 * static_cast<std::size_t>(steps_); }
  void Clear() {
    EXPECT_EQ(cudaMemset(out_, 0, kChunk * static_cast<std::size_t>(steps_)), cudaSuccess);
  }
  // The first byte of each chunk of `out`: 1, 2, ... when the chain ran in order.
  std::vector<int> Result() {
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    std::vector<int> firsts;
    for (int i = 0; i < steps_; ++i) {
      unsigned char byte = 0;
      EXPECT_EQ(
          cudaMemcpy(&byte, out_ + kChunk * static_cast<std::size_t>(i), 1, cudaMemcpyDeviceToHost),
          cudaSuccess);
      firsts.push_back(byte);
    }
    return firsts;
  }
  std::vector<int> Expected() const {
    std::vector<int> expected(static_cast<std::size_t>(steps_));
    std::iota(expected.begin(), expected.end(), 1);
    return expected;
  }

 private:
  int steps_;
  unsigned char* scratch_ = nullptr;
  unsigned char* out_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaGraph_t graph_ = nullptr;
};

TEST(GraphPiecesTest, PiecesCutAnywhereGiveTheWholeGraphsResult) {
  REQUIRE_GPU();
  ChainGraph chain(24);
  ASSERT_OK_AND_ASSIGN(std::vector<cudaGraphNode_t> order, TopologicalOrder(chain.graph()));
  ASSERT_EQ(order.size(), chain.nodes());
  // Odd cuts split a memset from the copy that reads it.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphPieces> pieces,
                       GraphPieces::SplitByNodeCounts(chain.graph(), {1, 6, 3, 17, 21}));
  ASSERT_EQ(pieces->size(), 5u);
  chain.Clear();
  ASSERT_OK(pieces->LaunchAll(chain.stream()));
  EXPECT_THAT(chain.Result(), ElementsAreArray(chain.Expected()));
}

TEST(GraphPiecesTest, NodeCountsMustCoverTheGraph) {
  REQUIRE_GPU();
  ChainGraph chain(4);
  EXPECT_THAT(GraphPieces::SplitByNodeCounts(chain.graph(), {3, 3}),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("add up to 6")));
  EXPECT_THAT(GraphPieces::SplitByNodeCounts(chain.graph(), {0, 8}),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

TEST(GraphPiecesTest, SplitByDurationBoundsPiecesAndKeepsTheResult) {
  REQUIRE_GPU();
  ChainGraph chain(64);
  PieceTargets targets;
  targets.min_duration = std::chrono::microseconds(40);
  targets.max_duration = std::chrono::microseconds(80);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphPieces> pieces,
                       GraphPieces::SplitByDuration(chain.graph(), chain.stream(), targets));
  std::size_t nodes = 0;
  for (std::size_t i = 0; i < pieces->size(); ++i) {
    nodes += pieces->node_count(i);
    EXPECT_GT(pieces->solo_duration(i).count(), 0) << "piece " << i;
    // Timing noise aside, a piece of several nodes stays within the maximum.
    if (pieces->node_count(i) > 1) {
      EXPECT_LE(pieces->solo_duration(i), 2 * targets.max_duration) << "piece " << i;
    }
  }
  EXPECT_EQ(nodes, chain.nodes());
  EXPECT_GT(pieces->size(), 1u);
  chain.Clear();
  ASSERT_OK(pieces->LaunchAll(chain.stream()));
  EXPECT_THAT(chain.Result(), ElementsAreArray(chain.Expected()));
}

// Host nodes that append their index to a trace: the trace shows which nodes ran in what order.
class TracedGraph {
 public:
  explicit TracedGraph(int steps) : steps_(steps), calls_(static_cast<std::size_t>(steps)) {
    void* scratch = nullptr;
    EXPECT_EQ(cudaMalloc(&scratch, kChunk), cudaSuccess);
    scratch_ = scratch;
    EXPECT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    EXPECT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    for (int i = 0; i < steps; ++i) {
      calls_[static_cast<std::size_t>(i)] = {this, i};
      EXPECT_EQ(cudaMemsetAsync(scratch_, i, kChunk, stream_), cudaSuccess);
      EXPECT_EQ(
          cudaLaunchHostFunc(stream_, &TracedGraph::Record, &calls_[static_cast<std::size_t>(i)]),
          cudaSuccess);
    }
    EXPECT_EQ(cudaStreamEndCapture(stream_, &graph_), cudaSuccess);
  }
  ~TracedGraph() {
    cudaGraphDestroy(graph_);
    cudaStreamDestroy(stream_);
    cudaFree(scratch_);
  }

  cudaGraph_t graph() const { return graph_; }
  cudaStream_t stream() const { return stream_; }
  int steps() const { return steps_; }
  std::vector<int> Trace() {
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    std::lock_guard<std::mutex> lock(mu_);
    return trace_;
  }

 private:
  struct Call {
    TracedGraph* graph;
    int index;
  };
  static void CUDART_CB Record(void* data) {
    const Call* call = static_cast<const Call*>(data);
    std::lock_guard<std::mutex> lock(call->graph->mu_);
    call->graph->trace_.push_back(call->index);
  }

  int steps_;
  std::vector<Call> calls_;
  void* scratch_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  std::mutex mu_;
  std::vector<int> trace_;
};

// Splitting times runs the way the step runs them: every launch it makes is part of a whole pass
// over the graph in order, so no run starts from a state its predecessors would not leave.
TEST(GraphPiecesTest, SplitByDurationOnlyRunsTheWholeStepInOrder) {
  REQUIRE_GPU();
  TracedGraph traced(32);
  PieceTargets targets;
  targets.min_duration = std::chrono::microseconds(20);
  targets.max_duration = std::chrono::microseconds(40);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphPieces> pieces,
                       GraphPieces::SplitByDuration(traced.graph(), traced.stream(), targets));
  EXPECT_GT(pieces->size(), 1u);
  const std::vector<int> trace = traced.Trace();
  ASSERT_FALSE(trace.empty());
  EXPECT_EQ(trace.size() % static_cast<std::size_t>(traced.steps()), 0u);
  for (std::size_t i = 0; i < trace.size(); ++i) {
    ASSERT_EQ(trace[i], static_cast<int>(i % static_cast<std::size_t>(traced.steps())))
        << "launch " << i << " of the trace";
  }
}

TEST(GraphPiecesTest, InconsistentTargetsAreRejected) {
  REQUIRE_GPU();
  ChainGraph chain(2);
  PieceTargets targets;
  targets.min_duration = std::chrono::microseconds(900);
  targets.max_duration = std::chrono::microseconds(100);
  EXPECT_THAT(GraphPieces::SplitByDuration(chain.graph(), chain.stream(), targets),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::HasSubstr("min")));
}

TEST(PieceLauncherTest, NeverExceedsItsCreditsAndReportsEveryPiece) {
  REQUIRE_GPU();
  ChainGraph chain(32);
  std::vector<std::size_t> counts(32, 2);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphPieces> pieces,
                       GraphPieces::SplitByNodeCounts(chain.graph(), counts));
  CountingPacer pacer(2);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PieceLauncher> launcher,
                       PieceLauncher::Create(pacer, chain.stream()));
  chain.Clear();
  for (int round = 0; round < 3; ++round) {
    for (std::size_t i = 0; i < pieces->size(); ++i) {
      ASSERT_OK(launcher->Launch(OpGroup{static_cast<std::uint32_t>(i)}, pieces->piece(i)));
    }
    ASSERT_OK(launcher->Drain());
  }
  EXPECT_THAT(chain.Result(), ElementsAreArray(chain.Expected()));
  EXPECT_LE(pacer.max_in_flight(), 2);
  EXPECT_EQ(pacer.begun(), 96);
  EXPECT_EQ(pacer.ended(), 96);
  EXPECT_EQ(launcher->completed(), 96);
  EXPECT_EQ(pacer.zero_durations(), 0);
}

TEST(PieceLauncherTest, APauseHoldsPiecesUntilLifted) {
  REQUIRE_GPU();
  ChainGraph chain(8);
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<GraphPieces> pieces,
      GraphPieces::SplitByNodeCounts(chain.graph(), std::vector<std::size_t>(8, 2)));
  CountingPacer pacer(1);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PieceLauncher> launcher,
                       PieceLauncher::Create(pacer, chain.stream()));
  chain.Clear();
  pacer.SetPaused(true);
  std::atomic<bool> launched{false};
  std::thread launching([&] {
    for (std::size_t i = 0; i < pieces->size(); ++i) {
      EXPECT_OK(launcher->Launch(OpGroup{static_cast<std::uint32_t>(i)}, pieces->piece(i)));
    }
    launched = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(launched.load());
  EXPECT_EQ(pacer.begun(), 0);
  pacer.SetPaused(false);
  launching.join();
  ASSERT_OK(launcher->Drain());
  EXPECT_EQ(pacer.ended(), 8);
  EXPECT_THAT(chain.Result(), ElementsAreArray(chain.Expected()));
}

TEST(PieceLauncherTest, AStoppedPacerLaunchesNothing) {
  REQUIRE_GPU();
  ChainGraph chain(2);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<GraphPieces> pieces,
                       GraphPieces::SplitByNodeCounts(chain.graph(), {4}));
  CountingPacer pacer(1);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PieceLauncher> launcher,
                       PieceLauncher::Create(pacer, chain.stream()));
  pacer.Stop();
  EXPECT_THAT(launcher->Launch(OpGroup{0}, pieces->piece(0)),
              StatusIs(absl::StatusCode::kCancelled, ::testing::_));
  EXPECT_OK(launcher->Drain());
  EXPECT_EQ(launcher->completed(), 0);
}

TEST(GpuLaunchPacerTest, EagerWorkKeepsItsCreditUntilTheGpuIsDone) {
  REQUIRE_GPU();
  constexpr int kGroups = 32;
  ChainGraph buffers(kGroups);  // its scratch and output memory, launched eagerly here
  CountingPacer pacer(2);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<GpuLaunchPacer> gpu,
                       GpuLaunchPacer::Create(pacer, buffers.stream()));
  buffers.Clear();
  for (int i = 0; i < kGroups; ++i) {
    ASSERT_OK(gpu->Run(OpGroup{static_cast<std::uint32_t>(i)}, [&] { buffers.EnqueueStep(i); }));
  }
  ASSERT_OK(gpu->Drain());
  EXPECT_THAT(buffers.Result(), ElementsAreArray(buffers.Expected()));
  EXPECT_LE(pacer.max_in_flight(), 2);
  EXPECT_EQ(pacer.begun(), kGroups);
  EXPECT_EQ(pacer.ended(), kGroups);
  EXPECT_EQ(gpu->completed(), kGroups);
  EXPECT_EQ(pacer.zero_durations(), 0);  // GPU time between the events, not a launch's
}

TEST(RoleStreamTest, ForegroundGetsTheGreatestPriority) {
  REQUIRE_GPU();
  ASSERT_OK_AND_ASSIGN(int foreground, StreamPriorityFor(agent::Role::kForeground));
  ASSERT_OK_AND_ASSIGN(int background, StreamPriorityFor(agent::Role::kBackground));
  EXPECT_LT(foreground, background);  // CUDA: lower numbers are higher priorities
  ASSERT_OK_AND_ASSIGN(OwnedStream stream, CreateRoleStream(agent::Role::kForeground));
  int priority = 0;
  ASSERT_EQ(cudaStreamGetPriority(stream.get(), &priority), cudaSuccess);
  EXPECT_EQ(priority, foreground);
}

}  // namespace
}  // namespace wavepool::runtime
