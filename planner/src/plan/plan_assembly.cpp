#include "plan/plan_assembly.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "wavepool/planner/memory_timeline.h"

namespace wavepool::planner {
namespace {

double ToSeconds(Nanos t) { return 1e-9 * static_cast<double>(t); }

api::CollectiveAlgorithm ToApi(AllReduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllReduceAlgorithm::kRing:
      return api::CollectiveAlgorithm::kRing;
    case AllReduceAlgorithm::kTree:
      return api::CollectiveAlgorithm::kTree;
    case AllReduceAlgorithm::kHierarchical:
      break;
  }
  return api::CollectiveAlgorithm::kHierarchical;
}

// Groups layers into stages while walking the model in execution order (the evaluator's order).
class StageBuilder {
 public:
  StageBuilder(const BurstProblem& problem, const BurstAssignment& assignment,
               const BurstEvaluation& evaluation, api::Plan* plan)
      : problem_(problem),
        assignment_(assignment),
        evaluation_(evaluation),
        plan_(plan),
        stage_of_(problem.layers.size(), -1) {}

  void Series(const SpSeries& series) {
    for (const SpElement& element : series.elements) {
      if (element.is_block) Block(element);
      AddLayer(element.layer);
    }
  }

  const std::vector<int>& stage_of() const { return stage_of_; }

 private:
  void AddLayer(LayerId layer) {
    const LayerSchedule& schedule = evaluation_.layers[layer];
    if (open_ < 0 || plan_->stages[open_].gpus != schedule.gpus ||
        plan_->stages[open_].ranks.front() != schedule.first_rank) {
      api::PlanStage stage;
      stage.index = static_cast<std::int64_t>(plan_->stages.size());
      stage.gpus = schedule.gpus;
      for (int r = 0; r < schedule.gpus; ++r) stage.ranks.push_back(schedule.first_rank + r);
      stage.per_gpu_batch = problem_.counts.shard[assignment_.count[layer]];
      plan_->stages.push_back(std::move(stage));
      open_ = static_cast<int>(plan_->stages.size()) - 1;
    }
    api::PlanStage& stage = plan_->stages[open_];
    stage.layers.push_back(problem_.layer_names[layer]);
    stage.predicted_seconds += ToSeconds(schedule.transfer_in + schedule.work);
    stage_of_[layer] = open_;
  }

  // Branches run one after another may share stages with each other and with the layers around
  // the block (stages stay maximal); branches side by side get their own, and each of their
  // stages runs concurrently with the other branches' stages.
  void Block(const SpElement& block) {
    if (assignment_.mode[block.layer] != BranchMode::kParallel) {
      for (const SpSeries& branch : block.branches) Series(branch);
      return;
    }
    std::vector<std::pair<int, int>> ranges;  // stage index range of each branch
    for (const SpSeries& branch : block.branches) {
      open_ = -1;
      const int first = static_cast<int>(plan_->stages.size());
      Series(branch);
      ranges.emplace_back(first, static_cast<int>(plan_->stages.size()));
    }
    open_ = -1;
    for (size_t a = 0; a < ranges.size(); ++a) {
      for (size_t b = 0; b < ranges.size(); ++b) {
        if (a == b) continue;
        for (int i = ranges[a].first; i < ranges[a].second; ++i) {
          for (int j = ranges[b].first; j < ranges[b].second; ++j) {
            plan_->stages[i].concurrent_with.push_back(j);
          }
        }
      }
    }
  }

  const BurstProblem& problem_;
  const BurstAssignment& assignment_;
  const BurstEvaluation& evaluation_;
  api::Plan* plan_;
  std::vector<int> stage_of_;
  int open_ = -1;
};

// Samples whose GPU changes when `batch` samples move from `from_gpus` GPUs starting at rank
// `from_rank` to `to_gpus` starting at `to_rank` (contiguous blocks of ceil(batch / gpus)).
std::int64_t MovedSamples(std::int64_t batch, int from_gpus, int from_rank, int to_gpus,
                          int to_rank) {
  const std::int64_t from_shard = (batch + from_gpus - 1) / from_gpus;
  const std::int64_t to_shard = (batch + to_gpus - 1) / to_gpus;
  std::int64_t stay = 0;  // samples whose source rank holds them afterwards too
  for (int i = 0; i < from_gpus; ++i) {
    const std::int64_t j = i + from_rank - to_rank;  // the destination index of the same rank
    if (j < 0 || j >= to_gpus) continue;
    const std::int64_t lo = std::max(i * from_shard, j * to_shard);
    const std::int64_t hi = std::min({(i + 1) * from_shard, (j + 1) * to_shard, batch});
    stay += std::max<std::int64_t>(0, hi - lo);
  }
  return batch - stay;
}

void AddTransfersAndDependencies(const PlanContext& context, const BurstProblem& problem,
                                 const BurstAssignment& assignment,
                                 const BurstEvaluation& evaluation,
                                 const std::vector<int>& stage_of, api::Plan* plan) {
  std::vector<std::set<std::int64_t>> depends(plan->stages.size());
  for (const Layer& layer : context.model.layers()) {
    const LayerSchedule& to = evaluation.layers[layer.id];
    for (LayerId producer : layer.inputs) {
      const int from_stage = stage_of[producer];
      const int to_stage = stage_of[layer.id];
      if (from_stage != to_stage) depends[to_stage].insert(from_stage);
      const LayerSchedule& from = evaluation.layers[producer];
      if (from.gpus == to.gpus && from.first_rank == to.first_rank) continue;
      api::SampleTransfer transfer;
      transfer.from_stage = from_stage;
      transfer.to_stage = to_stage;
      transfer.bytes_per_sample = context.model.layer(producer).OutputBytesPerSample();
      transfer.samples = MovedSamples(problem.options.global_batch, from.gpus, from.first_rank,
                                      to.gpus, to.first_rank);
      transfer.predicted_seconds =
          ToSeconds(problem.Transfer(producer, assignment.count[producer],
                                     assignment.count[layer.id], from.first_rank != to.first_rank));
      plan->transfers.push_back(transfer);
    }
  }
  for (size_t s = 0; s < depends.size(); ++s) {
    plan->stages[s].depends_on.assign(depends[s].begin(), depends[s].end());
  }
}

// One all-reduce group per multi-GPU stage holding parameters. The plan's times assume each
// layer reduces its own gradients (deeppool-burst-parallel §4.1), so the group's time is the sum.
void AddSyncGroups(const PlanContext& context, const std::vector<int>& stage_of, api::Plan* plan) {
  std::vector<Bytes> bytes(plan->stages.size(), 0);
  std::vector<double> seconds(plan->stages.size(), 0);
  for (const Layer& layer : context.model.layers()) {
    const int stage = stage_of[layer.id];
    const int gpus = static_cast<int>(plan->stages[stage].gpus);
    bytes[stage] += layer.ParamBytes();
    seconds[stage] += context.comm.AllReduce(layer.ParamBytes(), gpus).count();
  }
  for (size_t s = 0; s < plan->stages.size(); ++s) {
    const api::PlanStage& stage = plan->stages[s];
    if (stage.gpus < 2 || bytes[s] == 0) continue;
    api::SyncGroup group;
    group.stage = static_cast<std::int64_t>(s);
    group.ranks = stage.ranks;
    group.bytes = bytes[s];
    group.algorithm = ToApi(context.comm.ChooseAllReduce(bytes[s], static_cast<int>(stage.gpus)));
    group.predicted_seconds = seconds[s];
    plan->sync_groups.push_back(group);
  }
}

// Compute time along the critical path (the slowest branch of each side-by-side fork); the rest
// of the iteration is communication.
double CriticalCompute(const PlanContext& context, const BurstProblem& problem,
                       const BurstAssignment& assignment, const BurstEvaluation& evaluation,
                       const SpSeries& series, Nanos* elapsed) {
  double compute = 0;
  for (const SpElement& element : series.elements) {
    if (element.is_block) {
      const bool parallel = assignment.mode[element.layer] == BranchMode::kParallel;
      double block_compute = 0;
      Nanos block_time = 0;
      for (const SpSeries& branch : element.branches) {
        Nanos branch_time = 0;
        const double branch_compute =
            CriticalCompute(context, problem, assignment, evaluation, branch, &branch_time);
        if (!parallel) {
          block_compute += branch_compute;
        } else if (branch_time >= block_time) {
          block_compute = branch_compute;
          block_time = branch_time;
        }
      }
      compute += block_compute;
    }
    const LayerSchedule& schedule = evaluation.layers[element.layer];
    const std::int64_t shard = problem.counts.shard[assignment.count[element.layer]];
    compute += context.compute.Time(context.model.layer(element.layer), shard).Total().count();
    *elapsed += schedule.transfer_in + schedule.work;
  }
  return compute;
}

// Round-robin waves (wavelet-tick-tock §3.3.2-3): wave w runs stage s on GPU (s + w) mod N, so
// stage s has a replica on each of those GPUs, and the waves' gradients of a partition, which all
// finish in the same backward cycle, are all-reduced among them before each replica's update.
// Returns the predicted seconds of all the groups.
double AddRoundRobinSyncGroups(const PlanContext& context, const std::vector<int>& stage_of,
                               api::Plan* plan) {
  const std::int64_t n = plan->gpus;
  std::vector<Bytes> bytes(plan->stages.size(), 0);
  for (const Layer& layer : context.model.layers()) bytes[stage_of[layer.id]] += layer.ParamBytes();
  double seconds = 0;
  for (std::size_t s = 0; s < plan->stages.size(); ++s) {
    if (bytes[s] == 0) continue;
    api::SyncGroup group;
    group.stage = static_cast<std::int64_t>(s);
    for (std::int64_t w = 0; w < plan->waves; ++w) {
      group.ranks.push_back((static_cast<std::int64_t>(s) + w) % n);
    }
    std::sort(group.ranks.begin(), group.ranks.end());
    const int gpus = static_cast<int>(group.ranks.size());
    group.bytes = bytes[s];
    group.algorithm = ToApi(context.comm.ChooseAllReduce(bytes[s], gpus));
    group.predicted_seconds = context.comm.AllReduce(bytes[s], gpus).count();
    seconds += group.predicted_seconds;
    plan->sync_groups.push_back(std::move(group));
  }
  return seconds;
}

}  // namespace

api::Plan AssembleModelParallelPlan(const PlanContext& context, const PlanRequest& request,
                                    const std::vector<LayerId>& stage_starts,
                                    const ModelParallelWavesAnalysis& analysis,
                                    WavePlacement placement) {
  api::Plan plan;
  const int n = static_cast<int>(stage_starts.size());
  std::vector<int> stage_of(static_cast<size_t>(context.model.size()), 0);
  double busy = 0;
  for (int s = 0; s < n; ++s) {
    api::PlanStage stage;
    stage.index = s;
    stage.gpus = 1;
    stage.ranks = {s};
    stage.per_gpu_batch = request.global_batch;
    const LayerId end = s + 1 < n ? stage_starts[s + 1] : context.model.size();
    for (LayerId l = stage_starts[s]; l < end; ++l) {
      stage.layers.push_back(context.model.layer(l).name);
      stage_of[l] = s;
    }
    if (s > 0) stage.depends_on = {s - 1};
    const StageMemory& memory = analysis.stages[s];
    stage.predicted_seconds = (memory.forward + memory.backward).count();
    busy += stage.predicted_seconds;
    plan.stages.push_back(std::move(stage));
  }
  double communication = 0;
  for (const Layer& layer : context.model.layers()) {
    for (LayerId producer : layer.inputs) {
      if (stage_of[producer] == stage_of[layer.id]) continue;
      api::SampleTransfer transfer;
      transfer.from_stage = stage_of[producer];
      transfer.to_stage = stage_of[layer.id];
      transfer.bytes_per_sample = context.model.layer(producer).OutputBytesPerSample();
      transfer.samples = request.global_batch;
      const bool cross_node = transfer.from_stage / context.comm.network().gpus_per_node !=
                              transfer.to_stage / context.comm.network().gpus_per_node;
      // Activations forward, their gradients backward.
      transfer.predicted_seconds =
          2 * context.comm.PointToPoint(transfer.bytes_per_sample * transfer.samples, cross_node)
                  .count();
      communication += transfer.predicted_seconds;
      plan.transfers.push_back(transfer);
    }
  }
  plan.gpus = n;
  plan.waves = 1 + analysis.tock_waves;
  plan.wave_offset_fraction = 1.0 / static_cast<double>(plan.waves);
  plan.wave_placement = placement == WavePlacement::kRoundRobin ? api::WavePlacement::kRoundRobin
                                                                : api::WavePlacement::kStationary;
  if (placement == WavePlacement::kRoundRobin && plan.waves > 1) {
    // One all-reduce per stage and round of waves.
    communication += AddRoundRobinSyncGroups(context, stage_of, &plan);
  }
  api::PlanPredictions& p = plan.predictions;
  const double per_batch = analysis.wave_iteration.count() / static_cast<double>(plan.waves);
  p.iteration_seconds = per_batch + communication / static_cast<double>(plan.waves);
  p.compute_seconds = per_batch;
  p.communication_seconds = p.iteration_seconds - p.compute_seconds;
  p.gpu_seconds = busy;
  p.amplification = 1.0;
  for (const GpuWaves& gpu : analysis.gpus) {
    p.memory_per_gpu_bytes = std::max<std::int64_t>(p.memory_per_gpu_bytes, gpu.bytes);
  }
  p.background_idle_gpu_seconds = std::max(0.0, n * p.iteration_seconds - busy);
  p.samples_per_second = static_cast<double>(request.global_batch) / p.iteration_seconds;
  return plan;
}

Bytes MaxMemoryPerGpu(const PlanContext& context, const PlanRequest& request,
                      const BurstProblem& problem, const BurstAssignment& assignment,
                      const BurstEvaluation& evaluation) {
  int gpus = 0;
  for (const LayerSchedule& s : evaluation.layers) gpus = std::max(gpus, s.first_rank + s.gpus);
  std::vector<Bytes> per_rank(static_cast<size_t>(gpus), 0);
  for (const Layer& layer : context.model.layers()) {
    const LayerSchedule& s = evaluation.layers[layer.id];
    const std::int64_t shard = problem.counts.shard[assignment.count[layer.id]];
    Bytes bytes = ResidentStateBytes(layer.params, OptimizerMoments(request.optimizer)) +
                  LayerActivationBytes(layer, shard);
    if (layer.inputs.empty()) bytes += InputBatchBytes(context.model, shard);
    for (int r = s.first_rank; r < s.first_rank + s.gpus; ++r) per_rank[r] += bytes;
  }
  return per_rank.empty() ? 0 : *std::max_element(per_rank.begin(), per_rank.end());
}

api::Plan AssembleBurstPlan(const PlanContext& context, const PlanRequest& request,
                            const BurstProblem& problem, const BurstAssignment& assignment,
                            const BurstEvaluation& evaluation) {
  api::Plan plan;
  StageBuilder stages(problem, assignment, evaluation, &plan);
  stages.Series(problem.tree);
  AddTransfersAndDependencies(context, problem, assignment, evaluation, stages.stage_of(), &plan);
  AddSyncGroups(context, stages.stage_of(), &plan);

  int gpus = 0;
  for (const LayerSchedule& s : evaluation.layers) gpus = std::max(gpus, s.first_rank + s.gpus);
  plan.gpus = gpus;
  api::PlanPredictions& p = plan.predictions;
  p.iteration_seconds = ToSeconds(evaluation.iteration);
  Nanos elapsed = 0;
  p.compute_seconds =
      CriticalCompute(context, problem, assignment, evaluation, problem.tree, &elapsed);
  p.compute_seconds = std::min(p.compute_seconds, p.iteration_seconds);
  p.communication_seconds = p.iteration_seconds - p.compute_seconds;
  p.gpu_seconds = evaluation.gpu_seconds;
  p.amplification = evaluation.single_gpu_seconds > 0
                        ? evaluation.gpu_seconds / evaluation.single_gpu_seconds
                        : 1.0;
  p.memory_per_gpu_bytes = MaxMemoryPerGpu(context, request, problem, assignment, evaluation);
  p.background_idle_gpu_seconds =
      std::max(0.0, gpus * p.iteration_seconds - evaluation.gpu_seconds);
  p.samples_per_second =
      p.iteration_seconds > 0 ? static_cast<double>(request.global_batch) / p.iteration_seconds : 0;
  return plan;
}

}  // namespace wavepool::planner
