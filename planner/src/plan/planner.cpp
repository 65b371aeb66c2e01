#include "wavepool/planner/planner.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "plan/plan_assembly.h"
#include "plan/plan_candidates.h"
#include "plan/plan_request.h"
#include "wavepool/api/validation.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/planner/burst_search.h"

namespace wavepool::planner {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string Millis(double seconds) { return absl::StrFormat("%.2f ms", seconds * 1e3); }
std::string GiB(Bytes bytes) {
  return absl::StrFormat("%.1f GiB", static_cast<double>(bytes) / kGiB);
}

bool IsUniform(const BurstAssignment& a) {
  for (size_t l = 0; l < a.count.size(); ++l) {
    if (a.count[l] != a.count.front() || a.mode[l] == BranchMode::kParallel) return false;
  }
  return true;
}

// The search's view of data parallelism on every GPU: one count for every layer, no limit.
absl::StatusOr<BurstEvaluation> EvaluateDataParallel(const BurstProblem& problem,
                                                     BurstAssignment* assignment) {
  BurstProblem unlimited = problem;
  unlimited.amp_budget_scale = std::numeric_limits<double>::infinity();
  assignment->count.assign(problem.layers.size(), problem.counts.size() - 1);
  assignment->mode.assign(problem.layers.size(), BranchMode::kSerial);
  return EvaluateAssignment(unlimited, *assignment);
}

bool Allows(api::Toggle toggle, bool value) {
  return toggle == api::Toggle::kAuto || (toggle == api::Toggle::kOn) == value;
}

// The fastest data-movement option the request allows. Lossy weight compression changes the
// numerics, so Auto leaves it off; it is used only when asked for.
const DataMovementEstimate& FastestAllowedOption(const DataMovementReport& movement,
                                                 const PlanRequest& r) {
  const api::Toggle compression =
      r.weight_compression == api::Toggle::kAuto ? api::Toggle::kOff : r.weight_compression;
  const DataMovementEstimate* best = nullptr;
  for (const DataMovementEstimate& option : movement.options) {
    const DataMovementOption& o = option.option;
    if (!Allows(r.cpu_split, o.split == BatchSplit::kCpuCentric) || !Allows(r.preload, o.preload) ||
        !Allows(compression, o.compress_weights)) {
      continue;
    }
    if (best == nullptr || option.iteration < best->iteration) best = &option;
  }
  return *best;
}

// Adds the input copy left on the critical path to the plan's iteration, so that the plan shows
// one iteration time.
void AddExposedInputCopy(const PlanRequest& r, Seconds exposed, api::Plan* plan) {
  api::PlanPredictions& p = plan->predictions;
  p.iteration_seconds += exposed.count();
  p.communication_seconds += exposed.count();
  p.samples_per_second =
      p.iteration_seconds > 0 ? static_cast<double>(r.global_batch) / p.iteration_seconds : 0;
  p.background_idle_gpu_seconds =
      std::max(0.0, static_cast<double>(plan->gpus) * p.iteration_seconds - p.gpu_seconds);
}

// Prices the input copy of `option` into every candidate the report compares, as the plan's.
absl::Status AddInputCopyToCandidates(const PlanContext& c, const PlanRequest& r,
                                      const DataMovementOption& option, PlanReport* report) {
  for (CandidateFigures* figures :
       {&report->burst_figures, &report->data_parallel_figures,
        report->unbounded_burst ? &*report->unbounded_burst : nullptr}) {
    if (figures == nullptr) continue;
    WAVEPOOL_ASSIGN_OR_RETURN(
        InputCopy input, EstimateInputCopy(c, r, figures->gpus, figures->compute.count(), option));
    figures->input = input.exposed;
    figures->iteration += input.exposed;
  }
  return absl::OkStatus();
}

// Chooses the data-movement switches (scalednn-data-movement §IV) for the GPUs of one node: the
// fastest combination the request allows. The input copy it leaves on the critical path joins
// the plan's iteration (and the candidates', priced the same way).
absl::Status DecideDataMovement(const PlanContext& c, const PlanRequest& r, PlanReport* report) {
  api::Plan& plan = report->plan;
  const int node_gpus = static_cast<int>(std::min<std::int64_t>(plan.gpus, c.device.gpus_per_node));
  const std::int64_t node_batch = std::max<std::int64_t>(
      node_gpus, r.global_batch * node_gpus / std::max<std::int64_t>(plan.gpus, 1));
  const DataMovementRequest request = DataMovementRequestFor(
      c.model, c.device, node_gpus, node_batch, Seconds(plan.predictions.compute_seconds));
  CommPeerTransfer peers(c.comm);
  WAVEPOOL_ASSIGN_OR_RETURN(DataMovementReport movement, CompareDataMovement(request, peers));
  const DataMovementEstimate& best = FastestAllowedOption(movement, r);
  plan.data_movement.cpu_split = best.option.split == BatchSplit::kCpuCentric;
  plan.data_movement.preload = best.option.preload;
  plan.data_movement.weight_compression = best.option.compress_weights;
  // Only the input moves every iteration: the runtime all-reduces gradients, so every replica
  // updates its own weights, broadcast once at the start (docs/runtime.md).
  report->input_copy = best.host_to_device + best.peer_to_peer;
  report->input_exposed = best.exposed_host_to_device + best.peer_to_peer;
  AddExposedInputCopy(r, report->input_exposed, &plan);
  report->decisions.push_back(absl::StrCat(
      "data movement: ", DataMovementOptionName(best.option), ": the input copy takes ",
      Millis(report->input_copy.count()), " per iteration on the ", node_gpus, " GPUs of a node, ",
      Millis(report->input_exposed.count()),
      " of it on the critical path; the weights are broadcast once, at the start"));
  WAVEPOOL_RETURN_IF_ERROR(AddInputCopyToCandidates(c, r, best.option, report));
  report->data_movement = std::move(movement);
  return absl::OkStatus();
}

// Two waves share each GPU (wavelet-tick-tock §3): a global step (one wave's update) now comes
// every iteration / gain, with the same split between compute and communication.
void ApplyTickTock(const TickTockAnalysis& analysis, api::Plan* plan) {
  plan->strategy = api::Strategy::kTickTock;
  plan->waves = 2;
  plan->wave_offset_fraction = analysis.offsets.best_offset;
  api::PlanPredictions& p = plan->predictions;
  const double gain = analysis.predicted_gain;
  p.memory_per_gpu_bytes = analysis.offsets.best_peak;
  p.iteration_seconds /= gain;
  p.compute_seconds /= gain;
  p.communication_seconds /= gain;
  p.samples_per_second *= gain;
  p.background_idle_gpu_seconds =
      std::max(0.0, static_cast<double>(plan->gpus) * p.iteration_seconds - p.gpu_seconds);
}

// Tick-tock on a data-parallel plan (wavelet-tick-tock §3): two waves offset in time, when the
// analysis recommends it or the request forces it (then the two waves must fit).
absl::Status DecideTickTock(const PlanContext& c, const PlanRequest& r, bool forced,
                            PlanReport* report) {
  api::Plan& plan = report->plan;
  TickTockRequest request;
  request.per_wave_batch = plan.stages.front().per_gpu_batch;
  request.device_memory = c.device.memory_bytes;
  request.memory.optimizer_moments = OptimizerMoments(r.optimizer);
  WAVEPOOL_ASSIGN_OR_RETURN(TickTockAnalysis analysis,
                            AnalyzeTickTock(c.model, c.compute, request));
  if (forced && !analysis.fits) {
    return absl::FailedPreconditionError(
        absl::StrCat("tick-tock: two waves of ", request.per_wave_batch, " samples need ",
                     GiB(analysis.offsets.best_peak), " per GPU at the best offset; ",
                     c.device.name, " leaves ", GiB(analysis.usable_memory)));
  }
  report->decisions.push_back(
      absl::StrFormat("tick-tock: %s (predicted gain %.2fx, two-wave peak %s of %s usable)",
                      TickTockVerdictName(analysis.verdict), analysis.predicted_gain,
                      GiB(analysis.offsets.best_peak), GiB(analysis.usable_memory)));
  if (forced || analysis.verdict == TickTockVerdict::kRecommended) ApplyTickTock(analysis, &plan);
  report->tick_tock = std::move(analysis);
  return absl::OkStatus();
}

// Moves stage boundaries off layers that work in place on their producer's output (they must
// run on its GPU), dropping stages that become empty.
std::vector<LayerId> KeepInPlaceLayersWithProducers(const ModelGraph& model,
                                                    const std::vector<LayerId>& starts) {
  std::vector<LayerId> kept;
  for (LayerId start : starts) {
    while (start > 0 && start < model.size() && model.layer(start).WorksInPlace()) ++start;
    if (start < model.size() && (kept.empty() || start > kept.back())) kept.push_back(start);
  }
  return kept;
}

// Whether the round-robin placement (wavelet-tick-tock §3.3.2) is the better one: it places
// tock waves at all (with one wave both placements are the same plan) and is predicted at least
// as fast as keeping every stage on its GPU. Both analyses price the same stages at the same
// batch, so their speedups compare directly.
bool PreferRoundRobin(const ModelParallelWavesAnalysis& round_robin,
                      const ModelParallelWavesAnalysis& stationary) {
  return round_robin.tick_fits && round_robin.tock_waves >= 1 &&
         round_robin.predicted_speedup >= stationary.predicted_speedup;
}

// The model-parallel waves analysed in both placements (wavelet-tick-tock §3.3.2).
struct BothPlacements {
  ModelParallelWavesAnalysis stationary;
  ModelParallelWavesAnalysis round_robin;
};

absl::StatusOr<BothPlacements> AnalyzeBothPlacements(const PlanContext& c, const PlanRequest& r,
                                                     const std::vector<LayerId>& starts) {
  const int stages = static_cast<int>(starts.size());
  ModelParallelWavesRequest request;
  request.stages = stages;
  request.stage_starts = starts;
  request.per_wave_batch = r.global_batch;
  request.device_memory = c.device.memory_bytes;
  request.memory.optimizer_moments = OptimizerMoments(r.optimizer);
  request.placement = WavePlacement::kStationary;
  BothPlacements both;
  WAVEPOOL_ASSIGN_OR_RETURN(both.stationary,
                            AnalyzeModelParallelWaves(c.model, c.compute, request));
  // The tick alone holds stage s on GPU s in both placements: one check covers both.
  if (!both.stationary.tick_fits) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model ", c.model.name(), " split into ", stages, " stages of ", r.global_batch,
        " samples does not fit the ", GiB(c.device.memory_bytes), " of ", c.device.name));
  }
  request.placement = WavePlacement::kRoundRobin;
  WAVEPOOL_ASSIGN_OR_RETURN(both.round_robin,
                            AnalyzeModelParallelWaves(c.model, c.compute, request));
  return both;
}

std::string WavePlacementDecision(const BothPlacements& both, WavePlacement placement) {
  const ModelParallelWavesAnalysis& round_robin = both.round_robin;
  const bool use_round_robin = placement == WavePlacement::kRoundRobin;
  return absl::StrFormat(
      "wave placement: %s (round-robin: %d tock waves, %.2fx; stationary: %d tock waves, %.2fx%s)",
      WavePlacementName(placement), round_robin.tock_waves, round_robin.predicted_speedup,
      both.stationary.tock_waves, both.stationary.predicted_speedup,
      use_round_robin              ? ""
      : round_robin.tock_waves < 1 ? "; round-robin places no tock wave"
                                   : "; round-robin predicted slower");
}

// Model parallelism with tock waves (wavelet-tick-tock §3.3): one stage per GPU, the waves placed
// round-robin (§3.3.2) or stationary, whichever PreferRoundRobin says.
absl::Status PlanModelParallel(const PlanContext& c, const PlanRequest& r, PlanReport* report) {
  WAVEPOOL_ASSIGN_OR_RETURN(
      std::vector<LayerId> starts,
      BalancedStageStarts(c.model, c.compute, r.global_batch, std::min(r.gpus, c.model.size())));
  starts = KeepInPlaceLayersWithProducers(c.model, starts);
  WAVEPOOL_ASSIGN_OR_RETURN(BothPlacements both, AnalyzeBothPlacements(c, r, starts));
  const bool use_round_robin = PreferRoundRobin(both.round_robin, both.stationary);
  const WavePlacement placement =
      use_round_robin ? WavePlacement::kRoundRobin : WavePlacement::kStationary;
  ModelParallelWavesAnalysis& chosen = use_round_robin ? both.round_robin : both.stationary;
  const api::Strategy strategy = report->plan.strategy;
  report->plan = AssembleModelParallelPlan(c, r, starts, chosen, placement);
  report->plan.strategy = strategy;
  report->decisions.push_back(absl::StrFormat(
      "model-parallel waves: %d stages, %d tock waves fit (predicted %.2fx over plain model "
      "parallelism)",
      static_cast<int>(starts.size()), chosen.tock_waves, chosen.predicted_speedup));
  report->decisions.push_back(WavePlacementDecision(both, placement));
  report->model_parallel = std::move(chosen);
  return absl::OkStatus();
}

// The search's decision line: its optimum against data parallelism on every GPU, both counted
// as the plan is (with the input copy).
std::string SearchDecision(const PlanReport& report, const PlanRequest& r) {
  const auto amplification = [](const BurstEvaluation& e) {
    return e.single_gpu_seconds > 0 ? e.gpu_seconds / e.single_gpu_seconds : 1.0;
  };
  const CandidateFigures& burst =
      report.unbounded_burst ? *report.unbounded_burst : report.burst_figures;
  std::string line = absl::StrFormat(
      "burst-parallel search: %s per iteration at %.2fx the one-GPU time (limit %.2fx per "
      "layer); data-parallel on %d GPUs: %s at %.2fx",
      Millis(burst.iteration.count()),
      report.unbounded_burst
          ? report.unbounded_burst->gpu_seconds / std::max(report.burst.single_gpu_seconds, 1e-30)
          : amplification(report.burst),
      r.amplification_limit, report.data_parallel_figures.gpus,
      Millis(report.data_parallel_figures.iteration.count()), amplification(report.data_parallel));
  return line;
}

// The search re-run on GPU counts whose per-GPU batch fits, when its optimum does not fit.
// Replaces report->burst and its figures; `plan` becomes the new optimum's.
absl::StatusOr<std::optional<BoundedSearch>> BoundSearchByMemory(const PlanContext& c,
                                                                 const PlanRequest& r,
                                                                 const BurstProblem& problem,
                                                                 Bytes usable, PlanReport* report,
                                                                 api::Plan* plan) {
  absl::StatusOr<std::optional<BoundedSearch>> bounded = SearchWithinMemory(c, r, problem, usable);
  if (!bounded.ok() || !bounded->has_value()) return bounded;
  const BoundedSearch& b = **bounded;
  report->unbounded_burst = report->burst_figures;
  report->memory_bound_gpus = b.min_gpus;
  report->burst = b.evaluation;
  *plan = AssembleBurstPlan(c, r, b.problem, b.assignment, b.evaluation);
  report->burst_figures = FiguresOf(*plan, usable);
  report->decisions.push_back(absl::StrCat(
      "memory: the search's optimum needs ", GiB(report->unbounded_burst->memory_per_gpu),
      " on its busiest GPU, more than the ", GiB(usable),
      " usable; searched again with every "
      "layer on at least ",
      b.min_gpus, " GPUs (the fewest whose ", b.problem.counts.shard[b.problem.min_count],
      " samples per GPU fit)",
      b.limit_lifted ? ", where no plan meets the amplification limit, so it is lifted" : "", ": ",
      Millis(1e-9 * static_cast<double>(b.evaluation.iteration)),
      " per iteration before the input copy, ", GiB(report->burst_figures.memory_per_gpu),
      " per GPU"));
  return bounded;
}

// The search's optimum and data parallelism on every GPU, assembled as plans.
struct SearchedPlans {
  BurstProblem problem;
  BurstAssignment optimum;  // the search's; the memory-bounded search's once it ran
  api::Plan burst_plan;
  api::Plan data_parallel_plan;
};

BurstOptions SearchOptions(const PlanRequest& r) {
  BurstOptions options;
  options.max_gpus = r.gpus;
  options.global_batch = r.global_batch;
  options.amplification_limit = r.amplification_limit;
  options.gpu_counts = r.gpu_counts;
  options.amplification_exempt_below = r.amplification_exempt_below;
  return options;
}

// Runs the burst search (deeppool-burst-parallel §4) and prices data parallelism on every GPU
// under the same cost model; the report gets both evaluations and their figures.
absl::StatusOr<SearchedPlans> SearchPlans(const PlanContext& c, const PlanRequest& r, Bytes usable,
                                          PlanReport* report) {
  WAVEPOOL_ASSIGN_OR_RETURN(BurstProblem problem,
                            BuildBurstProblem(c.model, c.compute, c.comm, SearchOptions(r)));
  WAVEPOOL_ASSIGN_OR_RETURN(BurstSearchResult search, SearchBurstAssignment(problem));
  WAVEPOOL_ASSIGN_OR_RETURN(BurstEvaluation burst, EvaluateAssignment(problem, search.assignment));
  BurstAssignment data_parallel;
  WAVEPOOL_ASSIGN_OR_RETURN(BurstEvaluation dp, EvaluateDataParallel(problem, &data_parallel));
  report->burst = burst;
  report->data_parallel = dp;
  SearchedPlans plans{std::move(problem), search.assignment, {}, {}};
  plans.burst_plan = AssembleBurstPlan(c, r, plans.problem, plans.optimum, burst);
  plans.data_parallel_plan = AssembleBurstPlan(c, r, plans.problem, data_parallel, dp);
  report->burst_figures = FiguresOf(plans.burst_plan, usable);
  report->data_parallel_figures = FiguresOf(plans.data_parallel_plan, usable);
  return plans;
}

// An optimum too large for the device is searched again where every layer's batch fits, when
// the search decides the plan (Auto, BurstParallel).
absl::Status BoundByMemory(const PlanContext& c, const PlanRequest& r, Bytes usable,
                           SearchedPlans* plans, PlanReport* report) {
  const bool search_decides =
      r.strategy == api::Strategy::kAuto || r.strategy == api::Strategy::kBurstParallel;
  if (!search_decides || report->burst_figures.fits_memory) return absl::OkStatus();
  WAVEPOOL_ASSIGN_OR_RETURN(
      std::optional<BoundedSearch> bounded,
      BoundSearchByMemory(c, r, plans->problem, usable, report, &plans->burst_plan));
  if (bounded.has_value()) plans->optimum = bounded->assignment;
  return absl::OkStatus();
}

// The ParaDL strategies ranked for the request (paradl-oracle §4).
absl::Status RankOracle(const PlanContext& c, const PlanRequest& r, PlanReport* report) {
  OracleConfig oracle;
  oracle.dataset_samples = r.dataset_samples;
  oracle.global_batch = r.global_batch;
  oracle.gpus = r.gpus;
  oracle.device_memory = c.device.memory_bytes;
  oracle.optimizer_state_per_param = OptimizerMoments(r.optimizer);
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<Prediction> ranking,
                            RankStrategies(c.model, c.compute, c.comm, oracle));
  report->oracle = std::move(ranking);
  return absl::OkStatus();
}

std::string StrategyDecision(const PlanRequest& r, bool uniform, const PlanReport& report) {
  if (r.strategy != api::Strategy::kAuto) {
    return absl::StrCat("strategy ", std::string(api::ToString(r.strategy)), " was asked for");
  }
  if (!uniform) return "layers scale unevenly: burst-parallel";
  return absl::StrCat("every layer runs best on the same ", report.burst.layers.front().gpus,
                      " GPUs under the limit: data-parallel");
}

// The strategy the request resolves to (Auto: data-parallel when every layer runs best on the
// same GPUs, else burst-parallel), and the plan it starts from in report->plan.
api::Strategy ChooseStrategy(const PlanRequest& r, SearchedPlans* plans, PlanReport* report) {
  const bool uniform = IsUniform(plans->optimum);
  api::Strategy strategy = r.strategy;
  if (strategy == api::Strategy::kAuto) {
    strategy = uniform ? api::Strategy::kDataParallel : api::Strategy::kBurstParallel;
  }
  // Data parallelism asked for by name runs on every GPU; chosen by Auto it is the search's
  // uniform optimum, which the amplification limit may keep on fewer GPUs.
  const bool on_every_gpu =
      r.strategy == api::Strategy::kDataParallel || r.strategy == api::Strategy::kTickTock;
  report->plan = on_every_gpu ? std::move(plans->data_parallel_plan) : std::move(plans->burst_plan);
  report->plan.strategy =
      strategy == api::Strategy::kTickTock ? api::Strategy::kDataParallel : strategy;
  report->decisions.push_back(StrategyDecision(r, uniform, *report));
  return strategy;
}

// Model-parallel waves when asked for, or (Auto) when the model is too large for data or burst
// parallelism on any GPU count.
absl::Status SplitModelIfNeeded(const PlanContext& c, const PlanRequest& r, api::Strategy strategy,
                                Bytes usable, PlanReport* report) {
  api::Plan& plan = report->plan;
  const bool too_large = plan.predictions.memory_per_gpu_bytes > usable;
  if (strategy != api::Strategy::kModelParallelWaves &&
      !(too_large && r.strategy == api::Strategy::kAuto)) {
    return absl::OkStatus();
  }
  plan.strategy = api::Strategy::kModelParallelWaves;
  if (too_large) {
    report->decisions.push_back(absl::StrCat("the data/burst-parallel plan needs ",
                                             GiB(plan.predictions.memory_per_gpu_bytes),
                                             " per GPU; splitting the model into stages"));
  }
  return PlanModelParallel(c, r, report);
}

// Tick-tock waves for a data-parallel plan unless switched off (forced by strategy TickTock or
// tick-tock On); On for any other plan is an error naming the switch.
absl::Status DecideWaves(const PlanContext& c, const PlanRequest& r, api::Strategy strategy,
                         PlanReport* report) {
  const api::Strategy planned = report->plan.strategy;
  if (planned == api::Strategy::kDataParallel &&
      (strategy == api::Strategy::kTickTock || r.tick_tock != api::Toggle::kOff)) {
    const bool forced = strategy == api::Strategy::kTickTock || r.tick_tock == api::Toggle::kOn;
    return DecideTickTock(c, r, forced, report);
  }
  if (r.tick_tock != api::Toggle::kOn) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "tick-tock: On needs a data-parallel plan, but the plan is ",
      planned == api::Strategy::kModelParallelWaves ? "model-parallel" : "burst-parallel",
      " (set strategy DataParallel or TickTock)"));
}

// The last checks: the plan fits the device, carries the request's settings, and is a valid Plan.
absl::Status FinishPlan(const PlanContext& c, const PlanRequest& r, Bytes usable, api::Plan* plan) {
  if (plan->predictions.memory_per_gpu_bytes > usable) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model ", c.model.name(), " needs ", GiB(plan->predictions.memory_per_gpu_bytes),
        " on its busiest GPU with this plan, more than the ", GiB(usable), " usable of the ",
        GiB(c.device.memory_bytes), " of ", c.device.name,
        " (use more GPUs or a smaller global batch)"));
  }
  plan->job = r.job;
  plan->model = c.model.name();
  plan->device = c.device.name;
  plan->global_batch_size = r.global_batch;
  plan->amplification_limit = r.amplification_limit;
  plan->gpu_counts = r.gpu_counts;
  if (absl::Status s = api::Validate(*plan); !s.ok()) {
    return absl::InternalError(absl::StrCat("the planner made an invalid plan: ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PlanReport> MakePlan(const PlanContext& c, const PlanRequest& r) {
  WAVEPOOL_RETURN_IF_ERROR(ValidateRequest(r));
  WAVEPOOL_RETURN_IF_ERROR(ValidateJobSize(c.model, r));
  PlanReport report;
  report.compute_source = c.compute.Description();
  // Every memory check keeps the same reserve for the framework and CUDA context (ticktock.h).
  const Bytes usable = c.device.memory_bytes - kDefaultMemoryReserve;
  WAVEPOOL_ASSIGN_OR_RETURN(SearchedPlans plans, SearchPlans(c, r, usable, &report));
  report.decisions.emplace_back();  // the search's line, once the input copy is known
  WAVEPOOL_RETURN_IF_ERROR(BoundByMemory(c, r, usable, &plans, &report));
  for (const LayerSchedule& layer : report.burst.layers) {
    report.burst_gpus.push_back(layer.gpus);
  }
  WAVEPOOL_RETURN_IF_ERROR(RankOracle(c, r, &report));
  const api::Strategy strategy = ChooseStrategy(r, &plans, &report);
  WAVEPOOL_RETURN_IF_ERROR(SplitModelIfNeeded(c, r, strategy, usable, &report));
  WAVEPOOL_RETURN_IF_ERROR(DecideWaves(c, r, strategy, &report));
  WAVEPOOL_RETURN_IF_ERROR(DecideDataMovement(c, r, &report));
  report.decisions.front() = SearchDecision(report, r);
  WAVEPOOL_RETURN_IF_ERROR(FinishPlan(c, r, usable, &report.plan));
  return report;
}

}  // namespace wavepool::planner
