#include "wavepool/planner/burst_evaluate.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::planner {
namespace {

// Walks the series-parallel tree in execution order, filling in each layer's schedule.
class Evaluator {
 public:
  Evaluator(const BurstProblem& problem, const BurstAssignment& assignment, BurstEvaluation* out)
      : problem_(problem), assignment_(assignment), out_(out) {}

  // Runs `series` entered from `producer` at count index `in_count` on ranks from
  // `producer_rank` (producer < 0: the model input), inside a group of `cap` GPUs starting at
  // `rank`, from time `start`. Returns when it ends.
  absl::StatusOr<Nanos> Series(const SpSeries& series, LayerId producer, int in_count,
                               int producer_rank, int cap, int rank, Nanos start) {
    Nanos now = start;
    bool relocated = producer >= 0 && producer_rank != rank;
    for (const SpElement& element : series.elements) {
      WAVEPOOL_ASSIGN_OR_RETURN(
          Nanos end, element.is_block
                         ? Block(element, producer, in_count, cap, rank, now)
                         : Layer(element.layer, producer, in_count, relocated, cap, rank, now));
      now = end;
      producer = element.layer;
      in_count = assignment_.count[element.layer];
      relocated = false;
    }
    return now;
  }

 private:
  absl::Status CheckCap(LayerId layer, int cap) const {
    const int gpus = problem_.counts.gpus[assignment_.count[layer]];
    if (gpus <= cap) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat("layer ", problem_.layer_names[layer],
                                                      " uses ", gpus, " GPUs, more than the ", cap,
                                                      " its branch may use"));
  }

  absl::Status CheckAmplification(LayerId layer, LayerId producer, int g, bool relocated) const {
    const int x = assignment_.count[layer];
    if (problem_.EdgeAllowed(layer, producer, g, x, relocated)) return absl::OkStatus();
    if (producer >= 0 && problem_.layers[layer].pinned && (g != x || relocated)) {
      return absl::FailedPreconditionError(
          absl::StrCat("layer ", problem_.layer_names[layer], " works in place on the output of ",
                       problem_.layer_names[producer], " and must run on the same GPUs"));
    }
    if (x < problem_.min_count) {
      return absl::FailedPreconditionError(
          absl::StrCat("layer ", problem_.layer_names[layer], " at ", problem_.counts.gpus[x],
                       " GPUs is below the ", problem_.counts.gpus[problem_.min_count],
                       " GPUs every layer needs for its samples to fit the device's memory"));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("layer ", problem_.layer_names[layer], " at ", problem_.counts.gpus[x],
                     " GPUs exceeds the GPU-time amplification limit of ",
                     problem_.options.amplification_limit));
  }

  absl::StatusOr<Nanos> Layer(LayerId layer, LayerId producer, int in_count, bool relocated,
                              int cap, int rank, Nanos start) {
    WAVEPOOL_RETURN_IF_ERROR(CheckCap(layer, cap));
    WAVEPOOL_RETURN_IF_ERROR(CheckAmplification(layer, producer, in_count, relocated));
    const int x = assignment_.count[layer];
    LayerSchedule& schedule = out_->layers[layer];
    schedule.gpus = problem_.counts.gpus[x];
    schedule.first_rank = rank;
    schedule.start = start;
    schedule.transfer_in = producer < 0 ? 0 : problem_.Transfer(producer, in_count, x, relocated);
    schedule.work = problem_.layers[layer].work[x];
    return start + schedule.transfer_in + schedule.work;
  }

  absl::StatusOr<Nanos> Block(const SpElement& block, LayerId fork, int g, int cap, int rank,
                              Nanos start) {
    const LayerId join = block.layer;
    WAVEPOOL_RETURN_IF_ERROR(CheckCap(join, cap));
    const int h = assignment_.count[join];
    const bool parallel = assignment_.mode[join] == BranchMode::kParallel;
    std::vector<int> caps(block.branches.size(), cap);
    if (parallel) {
      if (!problem_.options.parallel_branches) {
        return absl::FailedPreconditionError(
            absl::StrCat("join ", problem_.layer_names[join], ": parallel branches are disabled"));
      }
      caps = problem_.ParallelCaps(block, cap);
      if (caps.empty()) {
        return absl::FailedPreconditionError(absl::StrCat("join ", problem_.layer_names[join],
                                                          ": more branches than the ", cap,
                                                          " GPUs of their group"));
      }
    }
    Nanos end = start;
    Nanos slowest_transfer = 0;
    int branch_rank = rank;
    for (size_t b = 0; b < block.branches.size(); ++b) {
      const SpSeries& branch = block.branches[b];
      const Nanos branch_start = parallel ? start : end;
      WAVEPOOL_ASSIGN_OR_RETURN(Nanos done,
                                Series(branch, fork, g, rank, caps[b], branch_rank, branch_start));
      const LayerId last = branch.elements.empty() ? fork : branch.elements.back().layer;
      const int last_count = branch.elements.empty() ? g : assignment_.count[last];
      const bool relocated = !branch.elements.empty() && branch_rank != rank;
      const Nanos transfer = problem_.Transfer(last, last_count, h, relocated);
      slowest_transfer = std::max(slowest_transfer, transfer);
      end = std::max(end, done + transfer);
      // The next branch starts right after the GPUs this one uses (at most its share).
      if (parallel) branch_rank = std::max(branch_rank, RanksEnd(branch));
    }
    WAVEPOOL_RETURN_IF_ERROR(CheckAmplification(join, -1, h, false));
    LayerSchedule& schedule = out_->layers[join];
    schedule.gpus = problem_.counts.gpus[h];
    schedule.first_rank = rank;
    schedule.start = end - slowest_transfer;
    schedule.transfer_in = slowest_transfer;
    schedule.work = problem_.layers[join].work[h];
    return end + schedule.work;
  }

  // One past the highest rank the layers of `series` use.
  int RanksEnd(const SpSeries& series) const {
    int end = 0;
    for (const SpElement& element : series.elements) {
      const LayerSchedule& s = out_->layers[element.layer];
      end = std::max(end, s.first_rank + s.gpus);
      for (const SpSeries& branch : element.branches) end = std::max(end, RanksEnd(branch));
    }
    return end;
  }

  const BurstProblem& problem_;
  const BurstAssignment& assignment_;
  BurstEvaluation* out_;
};

}  // namespace

absl::StatusOr<BurstEvaluation> EvaluateAssignment(const BurstProblem& problem,
                                                   const BurstAssignment& assignment) {
  const size_t n = problem.layers.size();
  if (assignment.count.size() != n || assignment.mode.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("assignment covers ", assignment.count.size(), " layers, the model has ", n));
  }
  for (size_t l = 0; l < n; ++l) {
    if (assignment.count[l] < 0 || assignment.count[l] >= problem.counts.size()) {
      return absl::InvalidArgumentError(absl::StrCat("layer ", problem.layer_names[l],
                                                     ": count index ", assignment.count[l],
                                                     " is out of range"));
    }
  }
  BurstEvaluation evaluation;
  evaluation.layers.resize(n);
  Evaluator evaluator(problem, assignment, &evaluation);
  WAVEPOOL_ASSIGN_OR_RETURN(
      Nanos end, evaluator.Series(problem.tree, -1, 0, 0, problem.options.max_gpus, 0, 0));
  evaluation.iteration = end;
  for (size_t l = 0; l < n; ++l) {
    const LayerSchedule& schedule = evaluation.layers[l];
    evaluation.gpu_seconds += 1e-9 * static_cast<double>(schedule.work) * schedule.gpus;
    evaluation.single_gpu_seconds += 1e-9 * static_cast<double>(problem.layers[l].single);
  }
  return evaluation;
}

}  // namespace wavepool::planner
