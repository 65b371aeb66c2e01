// A captured CUDA graph cut into pieces that the launch gate can pace (deeppool-burst-parallel
// §5): the foreground's step as pieces of about 250-500 us, the background's whole iteration as
// pieces of at least 0.5 ms. A piece is a run of consecutive nodes of one topological order of the
// graph; launched one after another on one stream, the pieces do exactly what the whole graph
// does (stream order completes piece i before piece i+1 starts, so every edge the cut crosses is
// honoured).
//
// Splitting by duration halves every run of nodes that takes longer than the maximum (a single
// node longer than that stays one piece), then merges consecutive runs while a piece is below the
// minimum and the merge stays within the maximum. Runs are timed as the step launches them: all
// of them in order, with events between them, never one alone (alone, a run can start from a
// state its predecessors would not leave, e.g. a kernel waiting on semaphores that a preceding
// memset zeroes). Splitting therefore launches the whole step several times: what the graph
// updates in place (weights, optimizer state) changes, so capture, split, then restore the state
// if it matters. The pieces' durations are kept: the node agent learns its own, but they tell a
// user what the split did.
//
// Thread safety: a GraphPieces is immutable once built; launching a piece from several threads
// is the caller's to order. Ownership: owns its executable pieces, not the captured graph; the
// memory the graph's kernels read and write (a LibTorch graph pool) must outlive the pieces.
#ifndef WAVEPOOL_RUNTIME_GRAPH_PIECES_H_
#define WAVEPOOL_RUNTIME_GRAPH_PIECES_H_

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"

namespace wavepool::runtime {

struct PieceTargets {
  std::chrono::microseconds min_duration{250};  // merge runs while a piece is shorter
  std::chrono::microseconds max_duration{500};  // halve runs longer; never merge past it
  int timing_repeats = 5;                       // median of this many solo launches
};

// The foreground's and the background's targets (ARTIFACTS: DeepPool merges foreground pieces
// past 250 us and never past 500 us; the background's are at least 0.5 ms).
PieceTargets ForegroundPieceTargets();
PieceTargets BackgroundPieceTargets();

class GraphPieces {
 public:
  // Cuts `graph` (not owned, left unchanged) into pieces by duration, timing runs on `stream`
  // (which must not be capturing). InvalidArgument when the graph is empty or `targets` are
  // inconsistent (min > max, max or repeats not positive); Internal naming the CUDA call that
  // failed otherwise.
  static absl::StatusOr<std::unique_ptr<GraphPieces>> SplitByDuration(cudaGraph_t graph,
                                                                      cudaStream_t stream,
                                                                      const PieceTargets& targets);
  // Cuts `graph` after the given node counts of its topological order: piece i holds
  // `piece_nodes[i]` consecutive nodes. InvalidArgument unless the counts are positive and add up
  // to the graph's node count. Solo durations are left 0 (nothing is timed).
  static absl::StatusOr<std::unique_ptr<GraphPieces>> SplitByNodeCounts(
      cudaGraph_t graph, const std::vector<std::size_t>& piece_nodes);
  ~GraphPieces();
  GraphPieces(const GraphPieces&) = delete;
  GraphPieces& operator=(const GraphPieces&) = delete;

  std::size_t size() const { return pieces_.size(); }
  cudaGraphExec_t piece(std::size_t i) const { return pieces_[i].exec; }
  std::size_t node_count(std::size_t i) const { return pieces_[i].nodes; }
  // The piece's median duration while splitting, the GPU otherwise idle (0 from
  // SplitByNodeCounts).
  std::chrono::nanoseconds solo_duration(std::size_t i) const { return pieces_[i].solo; }

  // Launches every piece in order on `stream`; Internal naming the piece that failed.
  absl::Status LaunchAll(cudaStream_t stream) const;

 private:
  struct Piece {
    cudaGraphExec_t exec = nullptr;
    std::size_t nodes = 0;
    std::chrono::nanoseconds solo{0};
  };
  GraphPieces() = default;

  std::vector<Piece> pieces_;
};

// Every node of `graph` in one topological order (Kahn's algorithm, ties in the order
// cudaGraphGetNodes lists them). Internal naming the CUDA call that failed; FailedPrecondition
// if the graph has a cycle.
absl::StatusOr<std::vector<cudaGraphNode_t>> TopologicalOrder(cudaGraph_t graph);

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_GRAPH_PIECES_H_
