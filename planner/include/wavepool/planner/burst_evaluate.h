// A burst-parallel assignment (a GPU count per layer, a mode per fork) and its evaluation under
// the cost model of burst_problem.h. The evaluator is the reference the search is checked
// against: it walks the plan the obvious way, with no dynamic programming.
#ifndef WAVEPOOL_PLANNER_BURST_EVALUATE_H_
#define WAVEPOOL_PLANNER_BURST_EVALUATE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/planner/burst_problem.h"

namespace wavepool::planner {

// How a fork's branches share the GPUs of their group: one after another on all of them, or at
// the same time, each on its own GPUs (BurstProblem::ParallelCaps).
enum class BranchMode { kSerial, kParallel };

struct BurstAssignment {
  std::vector<int> count;        // count index, by LayerId
  std::vector<BranchMode> mode;  // by LayerId; read only at the join layer of each block
};

// Where and when a layer runs within one iteration (forward and backward together).
struct LayerSchedule {
  int gpus = 0;
  int first_rank = 0;    // the layer runs on ranks [first_rank, first_rank + gpus)
  Nanos start = 0;       // when its incoming transfer starts
  Nanos transfer_in = 0; // re-sharding its input (for a join: the slowest branch's transfer)
  Nanos work = 0;        // compute + gradient sync
};

struct BurstEvaluation {
  Nanos iteration = 0;          // predicted iteration time
  double gpu_seconds = 0;       // sum over layers of work * GPUs
  double single_gpu_seconds = 0;  // sum over layers of one-GPU work (the DP-at-1-GPU time)
  std::vector<LayerSchedule> layers;  // by LayerId
};

// Evaluates `assignment`. InvalidArgument when it has the wrong size or a count index out of
// range; FailedPrecondition (naming the layer) when it breaks the amplification limit or a
// branch's GPU share, or asks for parallel branches the GPUs cannot hold.
absl::StatusOr<BurstEvaluation> EvaluateAssignment(const BurstProblem& problem,
                                                   const BurstAssignment& assignment);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_BURST_EVALUATE_H_
