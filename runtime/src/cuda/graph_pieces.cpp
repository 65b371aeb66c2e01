#include "wavepool/runtime/graph_pieces.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cuda_status.h"
#include "wavepool/base/status_macros.h"

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
  WAVEPOOL_RETURN_IF_ERROR(CudaStatus(cudaGraphClone(&raw_clone, graph), "cudaGraphClone"));
  OwnedGraph clone(raw_clone);
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (i >= first && i < last) continue;
    cudaGraphNode_t cloned = nullptr;
    WAVEPOOL_RETURN_IF_ERROR(CudaStatus(cudaGraphNodeFindInClone(&cloned, order[i], clone.get()),
                                        "cudaGraphNodeFindInClone"));
    WAVEPOOL_RETURN_IF_ERROR(CudaStatus(cudaGraphDestroyNode(cloned), "cudaGraphDestroyNode"));
  }
  cudaGraphExec_t exec = nullptr;
  WAVEPOOL_RETURN_IF_ERROR(
      CudaStatus(cudaGraphInstantiate(&exec, clone.get(), 0),
                 absl::StrCat("cudaGraphInstantiate(nodes ", first, "..", last, ")")));
  return OwnedExec(exec);
}

// A run of consecutive nodes of the order, instantiated, with its median duration in sequence.
struct Run {
  std::size_t first = 0;
  std::size_t last = 0;
  OwnedExec exec;
  nanoseconds duration{0};
};

absl::StatusOr<Run> MakeRun(cudaGraph_t graph, const std::vector<cudaGraphNode_t>& order,
                            std::size_t first, std::size_t last) {
  WAVEPOOL_ASSIGN_OR_RETURN(OwnedExec exec, InstantiateRange(graph, order, first, last));
  return Run{first, last, std::move(exec), nanoseconds(0)};
}

// Events created on construction and destroyed with it.
class EventSet {
 public:
  explicit EventSet(std::size_t count) : events_(count, nullptr) {}
  ~EventSet() {
    for (cudaEvent_t event : events_) {
      if (event != nullptr) cudaEventDestroy(event);
    }
  }
  EventSet(const EventSet&) = delete;
  EventSet& operator=(const EventSet&) = delete;

  absl::Status Create() {
    for (cudaEvent_t& event : events_) {
      WAVEPOOL_RETURN_IF_ERROR(CudaStatus(cudaEventCreate(&event), "cudaEventCreate"));
    }
    return absl::OkStatus();
  }
  cudaEvent_t operator[](std::size_t i) const { return events_[i]; }

 private:
  std::vector<cudaEvent_t> events_;
};

// Launches every run in order on `stream` (a warm-up pass, then `repeats` timed passes) and sets
// each run's median duration between the events around it. Runs are only ever timed in sequence,
// as the step launches them: alone, a run can start from a state its predecessors would not leave
// it in (a kernel whose semaphores a preceding memset zeroes waits forever), and it would be
// timed with cold caches.
absl::Status TimeInSequence(std::vector<Run>& runs, cudaStream_t stream, int repeats) {
  EventSet events(runs.size() + 1);
  WAVEPOOL_RETURN_IF_ERROR(events.Create());
  std::vector<std::vector<float>> times_ms(runs.size());
  for (int pass = 0; pass <= repeats; ++pass) {
    absl::Status s = CudaStatus(cudaEventRecord(events[0], stream), "cudaEventRecord");
    for (std::size_t i = 0; s.ok() && i < runs.size(); ++i) {
      s = CudaStatus(
          cudaGraphLaunch(runs[i].exec.get(), stream),
          absl::StrCat("cudaGraphLaunch(nodes ", runs[i].first, "..", runs[i].last, ")"));
      if (s.ok()) s = CudaStatus(cudaEventRecord(events[i + 1], stream), "cudaEventRecord");
    }
    if (s.ok()) s = CudaStatus(cudaEventSynchronize(events[runs.size()]), "cudaEventSynchronize");
    for (std::size_t i = 0; s.ok() && pass > 0 && i < runs.size(); ++i) {
      float ms = 0;
      s = CudaStatus(cudaEventElapsedTime(&ms, events[i], events[i + 1]), "cudaEventElapsedTime");
      times_ms[i].push_back(ms);
    }
    WAVEPOOL_RETURN_IF_ERROR(s);
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    std::vector<float>& t = times_ms[i];
    std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
    runs[i].duration = nanoseconds(static_cast<std::int64_t>(t[t.size() / 2] * 1e6));
  }
  return absl::OkStatus();
}

// Halves every run longer than targets.max_duration (a single node stays whole) and times the
// runs again, until none is longer.
absl::StatusOr<std::vector<Run>> SplitToMax(cudaGraph_t graph,
                                            const std::vector<cudaGraphNode_t>& order,
                                            cudaStream_t stream, const PieceTargets& targets) {
  std::vector<Run> runs;
  WAVEPOOL_ASSIGN_OR_RETURN(Run whole, MakeRun(graph, order, 0, order.size()));
  runs.push_back(std::move(whole));
  bool halved = true;
  while (halved) {
    WAVEPOOL_RETURN_IF_ERROR(TimeInSequence(runs, stream, targets.timing_repeats));
    halved = false;
    std::vector<Run> next;
    for (Run& run : runs) {
      if (run.duration <= targets.max_duration || run.last - run.first == 1) {
        next.push_back(std::move(run));
        continue;
      }
      const std::size_t middle = run.first + (run.last - run.first) / 2;
      run.exec.reset();
      for (auto [first, last] : {std::pair{run.first, middle}, std::pair{middle, run.last}}) {
        WAVEPOOL_ASSIGN_OR_RETURN(Run half, MakeRun(graph, order, first, last));
        next.push_back(std::move(half));
      }
      halved = true;
    }
    runs = std::move(next);
  }
  return runs;
}

// Merges consecutive runs while a piece is below targets.min_duration and the next run keeps it
// within targets.max_duration, then times the merged pieces in sequence.
absl::StatusOr<std::vector<Run>> MergeToMin(cudaGraph_t graph,
                                            const std::vector<cudaGraphNode_t>& order,
                                            std::vector<Run> runs, cudaStream_t stream,
                                            const PieceTargets& targets) {
  std::vector<Run> merged;
  for (std::size_t i = 0; i < runs.size();) {
    std::size_t j = i + 1;
    nanoseconds sum = runs[i].duration;
    while (j < runs.size() && sum < targets.min_duration &&
           sum + runs[j].duration <= targets.max_duration) {
      sum += runs[j].duration;
      ++j;
    }
    if (j == i + 1) {
      merged.push_back(std::move(runs[i]));
    } else {
      WAVEPOOL_ASSIGN_OR_RETURN(Run piece, MakeRun(graph, order, runs[i].first, runs[j - 1].last));
      merged.push_back(std::move(piece));
    }
    i = j;
  }
  WAVEPOOL_RETURN_IF_ERROR(TimeInSequence(merged, stream, targets.timing_repeats));
  return merged;
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
  WAVEPOOL_RETURN_IF_ERROR(
      CudaStatus(cudaGraphGetNodes(graph, nullptr, &node_count), "cudaGraphGetNodes"));
  std::vector<cudaGraphNode_t> nodes(node_count);
  WAVEPOOL_RETURN_IF_ERROR(
      CudaStatus(cudaGraphGetNodes(graph, nodes.data(), &node_count), "cudaGraphGetNodes"));
  std::size_t edge_count = 0;
  WAVEPOOL_RETURN_IF_ERROR(CudaStatus(
      cudaGraphGetEdges(graph, nullptr, nullptr, nullptr, &edge_count), "cudaGraphGetEdges"));
  std::vector<cudaGraphNode_t> from(edge_count);
  std::vector<cudaGraphNode_t> to(edge_count);
  // Edge data is asked for so that edges of a non-default kind (programmatic launches) do not
  // make the query fail as lossy; the order ignores it.
  std::vector<cudaGraphEdgeData> data(edge_count);
  WAVEPOOL_RETURN_IF_ERROR(
      CudaStatus(cudaGraphGetEdges(graph, from.data(), to.data(), data.data(), &edge_count),
                 "cudaGraphGetEdges"));
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
  WAVEPOOL_ASSIGN_OR_RETURN(const std::vector<cudaGraphNode_t> order, TopologicalOrder(graph));
  std::size_t total = 0;
  for (std::size_t count : piece_nodes) {
    if (count == 0) return absl::InvalidArgumentError("piece_nodes: a piece of 0 nodes");
    total += count;
  }
  if (total != order.size()) {
    return absl::InvalidArgumentError(absl::StrCat("piece_nodes: add up to ", total,
                                                   ", but the graph has ", order.size(), " nodes"));
  }
  std::unique_ptr<GraphPieces> pieces(new GraphPieces());
  std::size_t first = 0;
  for (std::size_t count : piece_nodes) {
    WAVEPOOL_ASSIGN_OR_RETURN(OwnedExec exec, InstantiateRange(graph, order, first, first + count));
    pieces->pieces_.push_back({exec.release(), count, nanoseconds(0)});
    first += count;
  }
  return pieces;
}

absl::StatusOr<std::unique_ptr<GraphPieces>> GraphPieces::SplitByDuration(
    cudaGraph_t graph, cudaStream_t stream, const PieceTargets& targets) {
  WAVEPOOL_RETURN_IF_ERROR(CheckTargets(targets));
  WAVEPOOL_ASSIGN_OR_RETURN(const std::vector<cudaGraphNode_t> order, TopologicalOrder(graph));
  if (order.empty()) return absl::InvalidArgumentError("CUDA graph has no nodes");
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<Run> runs, SplitToMax(graph, order, stream, targets));
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<Run> merged,
                            MergeToMin(graph, order, std::move(runs), stream, targets));
  std::unique_ptr<GraphPieces> pieces(new GraphPieces());
  for (Run& run : merged) {
    pieces->pieces_.push_back({run.exec.release(), run.last - run.first, run.duration});
  }
  return pieces;
}

GraphPieces::~GraphPieces() {
  for (const Piece& piece : pieces_) cudaGraphExecDestroy(piece.exec);
}

absl::Status GraphPieces::LaunchAll(cudaStream_t stream) const {
  for (std::size_t i = 0; i < pieces_.size(); ++i) {
    WAVEPOOL_RETURN_IF_ERROR(CudaStatus(cudaGraphLaunch(pieces_[i].exec, stream),
                                        absl::StrCat("cudaGraphLaunch(piece ", i, ")")));
  }
  return absl::OkStatus();
}

}  // namespace wavepool::runtime
