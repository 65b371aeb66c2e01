// Multi-rank training in one test process: N ranks as threads, each with its own executor, meeting
// in a file store; a plain LibTorch loop as the one-process reference; plans from the planner.
#ifndef WAVEPOOL_TESTS_RUNTIME_EXEC_TEST_SUPPORT_H_
#define WAVEPOOL_TESTS_RUNTIME_EXEC_TEST_SUPPORT_H_

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/api/plan.h"
#include "wavepool/planner/model.h"
#include "wavepool/planner/planner.h"
#include "wavepool/runtime/executor.h"

namespace wavepool::runtime::testing {

// The planner's plan for `request` on A100s with the analytical cost model, trained with SGD at
// `learning_rate` for `steps` steps from `seed`.
absl::StatusOr<api::Plan> PlanFor(const planner::ModelGraph& graph,
                                  const planner::PlanRequest& request, std::int64_t steps,
                                  double learning_rate = 0.05, std::int64_t seed = 7);

// branchy_tiny (planner/zoo.h: an Inception-like block with a nested fork, then a residual block)
// without its convolutions' BatchNorm: BatchNorm normalises over each rank's block, so only
// BatchNorm-free models train identically under every split of the batch.
absl::StatusOr<planner::ModelGraph> BranchyWithoutBatchNorm();

struct RankResult {
  std::map<std::string, torch::Tensor> parameters;  // "<replica>/<layer>.<param>"
  std::vector<StepReport> reports;
  bool slices_steps = false;  // the executor's SlicesSteps()
};

// Runs every rank of `plan` on its own thread (synthetic data of `plan.training.seed`), each for
// the plan's steps from a fresh start, every replica on `device`, each step in slices of
// `slice_rows` samples (StepHooks::slice_rows; 0: whole); the parameters returned are host
// copies. The first error of any rank is returned.
absl::StatusOr<std::vector<RankResult>> TrainRanks(const api::Plan& plan,
                                                   std::shared_ptr<const planner::ModelGraph> graph,
                                                   torch::Device device = torch::kCPU,
                                                   std::int64_t slice_rows = 0);

// Every rank's parameters merged by name; InvalidArgument when two ranks hold different values of
// one parameter (relative difference over `tolerance`).
absl::StatusOr<std::map<std::string, torch::Tensor>> MergeReplicas(
    const std::vector<RankResult>& ranks, const std::string& replica, double tolerance = 1e-6);

// A plain LibTorch loop: the whole model in one process (ExecutableModel, one autograd call per
// step over the whole graph), `samples_per_step` samples of the same synthetic source and order per
// step, mean loss, the plan's optimizer. Returns the parameters by "<layer>.<param>" and the loss
// of every step.
struct ReferenceResult {
  std::map<std::string, torch::Tensor> parameters;
  std::vector<double> losses;
};
absl::StatusOr<ReferenceResult> TrainReference(const planner::ModelGraph& graph,
                                               const api::PlanTraining& training,
                                               std::int64_t samples_per_step, std::int64_t steps);

// max |a - b| / max |b| over the tensor (0 for two zero tensors).
double RelativeDifference(const torch::Tensor& a, const torch::Tensor& b);

}  // namespace wavepool::runtime::testing

#endif  // WAVEPOOL_TESTS_RUNTIME_EXEC_TEST_SUPPORT_H_
