#include "wavepool/runtime/graph_pieces.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cuda_status.h"

namespace wavepool::runtime {
namespace {

using std::chrono::nanoseconds;

// Destroys a graph or an executable graph when it goes out of scope.
struct GraphDeleter {
  void operator()(cudaGraph_t graph) const { cudaGraphDestroy(graph); }
};
using OwnedGraph = std::unique_ptr<CUgraph_st, GraphDeleter>;
struct ExecDeleter {
  void operator()(cudaGraphExec_t exec) const { cudaGraphExecDestroy(exec); }
};
using OwnedExec = std::unique_ptr<CUgraphExec_st, ExecDeleter>;

// An executable graph of the nodes order[first, last): a clone of the whole graph without the
// others. Edges into the range from earlier nodes disappear with them; stream order replaces them.
absl::StatusOr<OwnedExec> InstantiateRange(cudaGraph_t graph,
                                           const std::vector<cudaGraphNode_t>& order,
                                           std::size_t first, std::size_t last) {
  cudaGraph_t raw_clone = nullptr;
  if (absl::Status s = CudaStatus(cudaGraphClone(&raw_clone, graph), "cudaGraphClone"); !s.ok()) {
    return s;
  }
  OwnedGraph clone(raw_clone);
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (i >= first && i < last) continue;
    cudaGraphNode_t cloned = nullptr;
    if (absl::Status s = CudaStatus(cudaGraphNodeFindInClone(&cloned, order[i], clone.get()),
                                    "cudaGraphNodeFindInClone");
        !s.ok()) {
      return s;
    }
    if (absl::Status s = CudaStatus(cudaGraphDestroyNode(cloned), "cudaGraphDestroyNode");
        !s.ok()) {
      return s;
    }
  }
  cudaGraphExec_t exec = nullptr;
  if (absl::Status s =
          CudaStatus(cudaGraphInstantiate(&exec, clone.get(), 0),
                     absl::StrCat("cudaGraphInstantiate(nodes ", first, "..", last, ")"));
      !s.ok()) {
    return s;
  }
  return OwnedExec(exec);
}

// The median of `repeats` solo launches of `exec` on `stream` (after one warm-up launch).
absl::StatusOr<nanoseconds> TimeSolo(cudaGraphExec_t exec, cudaStream_t stream, int repeats) {
  cudaEvent_t start = nullptr;
  cudaEvent_t end = nullptr;
  absl::Status s = CudaStatus(cudaEventCreate(&start), "cudaEventCreate");
  if (s.ok()) s = CudaStatus(cudaEventCreate(&end), "cudaEventCreate");
  std::vector<float> times_ms;
  if (s.ok()) s = CudaStatus(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
  for (int r = 0; s.ok() && r < repeats; ++r) {
    s = CudaStatus(cudaEventRecord(start, stream), "cudaEventRecord");
    if (s.ok()) s = CudaStatus(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    if (s.ok()) s = CudaStatus(cudaEventRecord(end, stream), "cudaEventRecord");
    if (s.ok()) s = CudaStatus(cudaEventSynchronize(end), "cudaEventSynchronize");
    float ms = 0;
    if (s.ok()) s = CudaStatus(cudaEventElapsedTime(&ms, start, end), "cudaEventElapsedTime");
    times_ms.push_back(ms);
  }
  if (start != nullptr) cudaEventDestroy(start);
  if (end != nullptr) cudaEventDestroy(end);
  if (!s.ok()) return s;
  std::nth_element(times_ms.begin(), times_ms.begin() + times_ms.size() / 2, times_ms.end());
  return nanoseconds(static_cast<std::int64_t>(times_ms[times_ms.size() / 2] * 1e6));
}

// A run of consecutive nodes, instantiated and timed.
struct Run {
  std::size_t first = 0;
  std::size_t last = 0;
  OwnedExec exec;
  nanoseconds solo{0};
};

// Halves [first, last) until each run takes at most targets.max_duration alone (a single node
// stays whole), appending the runs in order.
absl::Status SplitToMax(cudaGraph_t graph, const std::vector<cudaGraphNode_t>& order,
                        std::size_t first, std::size_t last, cudaStream_t stream,
                        const PieceTargets& targets, std::vector<Run>& runs) {
  absl::StatusOr<OwnedExec> exec = InstantiateRange(graph, order, first, last);
  if (!exec.ok()) return exec.status();
  absl::StatusOr<nanoseconds> solo = TimeSolo(exec->get(), stream, targets.timing_repeats);
  if (!solo.ok()) return solo.status();
  if (*solo <= targets.max_duration || last - first == 1) {
    runs.push_back({first, last, *std::move(exec), *solo});
    return absl::OkStatus();
  }
  exec->reset();
  const std::size_t middle = first + (last - first) / 2;
  if (absl::Status s = SplitToMax(graph, order, first, middle, stream, targets, runs); !s.ok()) {
    return s;
  }
  return SplitToMax(graph, order, middle, last, stream, targets, runs);
}

absl::Status CheckTargets(const PieceTargets& targets) {
  if (targets.max_duration.count() <= 0 || targets.min_duration > targets.max_duration ||
      targets.timing_repeats <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "piece targets: need 0 < min_duration <= max_duration and timing_repeats > 0, got min ",
        targets.min_duration.count(), " us, max ", targets.max_duration.count(), " us, repeats ",
        targets.timing_repeats));
  }
  return absl::OkStatus();
}

}  // namespace

PieceTargets ForegroundPieceTargets() { return PieceTargets{}; }

PieceTargets BackgroundPieceTargets() {
  PieceTargets targets;
  targets.min_duration = std::chrono::microseconds(500);
  targets.max_duration = std::chrono::microseconds(1000);
  return targets;
}

absl::StatusOr<std::vector<cudaGraphNode_t>> TopologicalOrder(cudaGraph_t graph) {
  std::size_t node_count = 0;
  if (absl::Status s =
          CudaStatus(cudaGraphGetNodes(graph, nullptr, &node_count), "cudaGraphGetNodes");
      !s.ok()) {
    return s;
  }
  std::vector<cudaGraphNode_t> nodes(node_count);
  if (absl::Status s =
          CudaStatus(cudaGraphGetNodes(graph, nodes.data(), &node_count), "cudaGraphGetNodes");
      !s.ok()) {
    return s;
  }
  std::size_t edge_count = 0;
  if (absl::Status s = CudaStatus(cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &edge_count),
                                  "cudaGraphGetEdges");
      !s.ok()) {
    return s;
  }
  std::vector<cudaGraphNode_t> from(edge_count);
  std::vector<cudaGraphNode_t> to(edge_count);
  // Edge data is asked for so that edges of a non-default kind (programmatic launches) do not
  // make the query fail as lossy; the order ignores it.
  std::vector<cudaGraphEdgeData> data(edge_count);
  if (absl::Status s =
          CudaStatus(cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &edge_count),
                     "cudaGraphGetEdges");
      !s.ok()) {
    return s;
  }
  std::unordered_map<cudaGraphNode_t, std::size_t> index;
  for (std::size_t i = 0; i < nodes.size(); ++i) index[nodes[i]] = i;
  std::vector<std::vector<std::size_t>> successors(nodes.size());
  std::vector<std::size_t> pending(nodes.size(), 0);
  for (std::size_t e = 0; e < edge_count; ++e) {
    successors[index.at(from[e])].push_back(index.at(to[e]));
    ++pending[index.at(to[e])];
  }
  std::vector<cudaGraphNode_t> order;
  order.reserve(nodes.size());
  std::vector<std::size_t> ready;
  for (std::size_t i = nodes.size(); i-- > 0;) {
    if (pending[i] == 0) ready.push_back(i);
  }
  while (!ready.empty()) {
    const std::size_t node = ready.back();
    ready.pop_back();
    order.push_back(nodes[node]);
    for (std::size_t next : successors[node]) {
      if (--pending[next] == 0) ready.push_back(next);
    }
  }
  if (order.size() != nodes.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat("CUDA graph has a cycle: ", nodes.size() - order.size(), " of ", nodes.size(),
                     " nodes are never ready"));
  }
  return order;
}

absl::StatusOr<std::unique_ptr<GraphPieces>> GraphPieces::SplitByNodeCounts(
    cudaGraph_t graph, const std::vector<std::size_t>& piece_nodes) {
  absl::StatusOr<std::vector<cudaGraphNode_t>> order = TopologicalOrder(graph);
  if (!order.ok()) return order.status();
  std::size_t total = 0;
  for (std::size_t count : piece_nodes) {
    if (count == 0) return absl::InvalidArgumentError("piece_nodes: a piece of 0 nodes");
    total += count;
  }
  if (total != order->size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "piece_nodes: add up to ", total, ", but the graph has ", order->size(), " nodes"));
  }
  std::unique_ptr<GraphPieces> pieces(new GraphPieces());
  std::size_t first = 0;
  for (std::size_t count : piece_nodes) {
    absl::StatusOr<OwnedExec> exec = InstantiateRange(graph, *order, first, first + count);
    if (!exec.ok()) return exec.status();
    pieces->pieces_.push_back({exec->release(), count, nanoseconds(0)});
    first += count;
  }
  return pieces;
}

absl::StatusOr<std::unique_ptr<GraphPieces>> GraphPieces::SplitByDuration(
    cudaGraph_t graph, cudaStream_t stream, const PieceTargets& targets) {
  if (absl::Status s = CheckTargets(targets); !s.ok()) return s;
  absl::StatusOr<std::vector<cudaGraphNode_t>> order = TopologicalOrder(graph);
  if (!order.ok()) return order.status();
  if (order->empty()) return absl::InvalidArgumentError("CUDA graph has no nodes");
  std::vector<Run> runs;
  if (absl::Status s = SplitToMax(graph, *order, 0, order->size(), stream, targets, runs);
      !s.ok()) {
    return s;
  }
  std::unique_ptr<GraphPieces> pieces(new GraphPieces());
  for (std::size_t i = 0; i < runs.size();) {
    // Merge runs i..j-1 while the piece is short and the next run keeps it within the maximum.
    std::size_t j = i + 1;
    nanoseconds sum = runs[i].solo;
    while (j < runs.size() && sum < targets.min_duration &&
           sum + runs[j].solo <= targets.max_duration) {
      sum += runs[j].solo;
      ++j;
    }
    Piece piece{nullptr, runs[j - 1].last - runs[i].first, runs[i].solo};
    if (j == i + 1) {
      piece.exec = runs[i].exec.release();
    } else {
      absl::StatusOr<OwnedExec> merged =
          InstantiateRange(graph, *order, runs[i].first, runs[j - 1].last);
      if (!merged.ok()) return merged.status();
      absl::StatusOr<nanoseconds> solo = TimeSolo(merged->get(), stream, targets.timing_repeats);
      if (!solo.ok()) return solo.status();
      piece.exec = merged->release();
      piece.solo = *solo;
    }
    pieces->pieces_.push_back(piece);
    i = j;
  }
  return pieces;
}

GraphPieces::~GraphPieces() {
  for (const Piece& piece : pieces_) cudaGraphExecDestroy(piece.exec);
}

absl::Status GraphPieces::LaunchAll(cudaStream_t stream) const {
  for (std::size_t i = 0; i < pieces_.size(); ++i) {
    if (absl::Status s = CudaStatus(cudaGraphLaunch(pieces_[i].exec, stream),
                                    absl::StrCat("cudaGraphLaunch(piece ", i, ")"));
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace wavepool::runtime
