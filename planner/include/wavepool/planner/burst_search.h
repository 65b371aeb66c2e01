// The burst-parallel search (deeppool-burst-parallel §4.2, Algorithm 1 with the multi-chain graph
// reduction): the GPU count of every layer, and for every fork whether its branches run one after
// another or side by side, that minimise the iteration time under the amplification limit.
//
// The search is exact under the cost model of burst_problem.h: on a chain it is Algorithm 1 with
// the limit applied to each layer's own transfer, compute and sync (so no feasible plan is pruned);
// a fork's branches are reduced to one matrix of fork-count x join-count times (Figure 7), with
// every branch searched from every fork count. The steps exploit the transfer cost's structure
// (burst_steps.h) to stay linear per layer and fork count: O(K^2 L) for K candidate counts and L
// layers, plus O(K^3) per extra nested fork in a branch that already holds one.
#ifndef WAVEPOOL_PLANNER_BURST_SEARCH_H_
#define WAVEPOOL_PLANNER_BURST_SEARCH_H_

#include "absl/status/statusor.h"
#include "wavepool/planner/burst_evaluate.h"
#include "wavepool/planner/burst_problem.h"

namespace wavepool::planner {

struct BurstSearchResult {
  BurstAssignment assignment;
  Nanos iteration = 0;  // the optimum, equal to EvaluateAssignment(assignment).iteration
};

// Finds an optimal assignment. Ties go to fewer GPUs. FailedPrecondition when no assignment is
// allowed (possible only with a problem.min_count above 0, whose counts may all break the
// amplification limit for some layer); Internal when the reconstructed plan does not evaluate to
// the optimum (a bug, never an input error).
absl::StatusOr<BurstSearchResult> SearchBurstAssignment(const BurstProblem& problem);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_BURST_SEARCH_H_
