#include "plan_comparison.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "report_text.h"
#include "text_table.h"
#include "wavepool/api/plan.h"
#include "wavepool/planner/oracle.h"
#include "wavepool/planner/ticktock.h"

namespace wavepool::cli {
namespace {

using nlohmann::json;

constexpr char kBurstSearch[] = "burst search";
constexpr char kWavelet[] = "wavelet";
constexpr char kParaDl[] = "ParaDL";

double Usable(const planner::DeviceSpec& device) {
  return static_cast<double>(device.memory_bytes - planner::kDefaultMemoryReserve);
}

ComparisonRow BurstRow(std::string name, const planner::CandidateFigures& f) {
  ComparisonRow row;
  row.strategy = std::move(name);
  row.model = kBurstSearch;
  row.gpus = f.gpus;
  row.iteration = f.iteration.count();
  row.compute = f.compute.count();
  row.communication = row.iteration - row.compute;
  row.input = f.input.count();
  row.memory = static_cast<double>(f.memory_per_gpu);
  row.gpu_seconds = f.gpu_seconds;
  row.idle_gpu_seconds = f.IdleGpuSeconds();
  row.status = f.fits_memory ? "ok" : "out of memory";
  row.runs = f.fits_memory;
  return row;
}

// Counted as the plan is: the data-parallel plan it was analysed for, its iteration before the
// input copy divided by the predicted gain (DecideTickTock), then the input copy.
ComparisonRow TickTockRow(const planner::PlanReport& report) {
  const planner::TickTockAnalysis& t = *report.tick_tock;
  const api::Plan& plan = report.plan;
  const api::PlanPredictions& p = plan.predictions;
  const bool is_plan = plan.strategy == api::Strategy::kTickTock;
  const double gain = is_plan ? 1.0 : t.predicted_gain;
  const double input = report.input_exposed.count();
  ComparisonRow row;
  row.strategy = "tick-tock (2 waves)";
  row.model = kWavelet;
  row.gpus = static_cast<int>(plan.gpus);
  row.iteration = (p.iteration_seconds - input) / gain + input;
  row.compute = p.compute_seconds / gain;
  row.communication = row.iteration - row.compute;
  row.input = input;
  row.memory = static_cast<double>(t.offsets.best_peak);
  row.gpu_seconds = p.gpu_seconds;
  row.idle_gpu_seconds = std::max(0.0, row.gpus * row.iteration - row.gpu_seconds);
  row.status = std::string(planner::TickTockVerdictName(t.verdict));
  // Every verdict but the two memory ones is a plan that runs (maybe without gain).
  row.runs = t.verdict != planner::TickTockVerdict::kSingleWaveDoesNotFit &&
             t.verdict != planner::TickTockVerdict::kWavesDoNotFit;
  row.is_plan = is_plan;
  return row;
}

// Only a model-parallel plan carries this analysis: the plan's own predictions, which add the
// stage-to-stage transfers to the analysis' compute time.
ComparisonRow ModelParallelRow(const planner::PlanReport& report) {
  const api::PlanPredictions& p = report.plan.predictions;
  ComparisonRow row;
  row.strategy = absl::StrCat("model-parallel (", report.model_parallel->tock_waves + 1, " waves)");
  row.model = kWavelet;
  row.gpus = static_cast<int>(report.plan.gpus);
  row.iteration = p.iteration_seconds;
  row.compute = p.compute_seconds;
  row.communication = p.communication_seconds;
  row.input = report.input_exposed.count();
  row.memory = static_cast<double>(p.memory_per_gpu_bytes);
  row.gpu_seconds = p.gpu_seconds;
  row.idle_gpu_seconds = p.background_idle_gpu_seconds;
  row.status = "ok";
  row.runs = true;
  row.is_plan = true;
  return row;
}

ComparisonRow OracleRow(const planner::Prediction& p) {
  ComparisonRow row;
  row.strategy = std::string(planner::StrategyName(p.strategy));
  row.model = kParaDl;
  row.gpus = p.gpus;
  row.iteration = p.iteration.count();
  row.compute = p.compute_per_iteration.count();
  row.communication = p.communication_per_iteration.count();
  row.memory = static_cast<double>(p.memory_per_gpu);
  if (p.feasible) {
    // Every ParaDL strategy keeps all its GPUs busy for the whole iteration.
    row.gpu_seconds = p.gpus * row.iteration;
    row.idle_gpu_seconds = 0;
  }
  row.status = !p.feasible ? p.infeasible_reason : (p.fits_memory ? "ok" : "out of memory");
  row.runs = p.feasible && p.fits_memory;
  return row;
}

bool IsPlan(const ComparisonRow& row, const planner::PlanReport& report, api::Strategy requested) {
  if (row.model != kBurstSearch) return false;
  const api::Strategy strategy = report.plan.strategy;
  if (strategy == api::Strategy::kTickTock || strategy == api::Strategy::kModelParallelWaves) {
    return false;  // the wavelet row is
  }
  // Data parallelism asked for by name runs on every GPU; otherwise the plan is the search's.
  const bool on_every_gpu = requested == api::Strategy::kDataParallel;
  return row.strategy == (on_every_gpu ? "data-parallel" : "burst-parallel");
}

std::string Amplification(const planner::BurstEvaluation& e) {
  return absl::StrFormat("%.2fx",
                         e.single_gpu_seconds > 0 ? e.gpu_seconds / e.single_gpu_seconds : 1.0);
}

std::string TickTockWhyNot(const planner::PlanReport& report) {
  switch (report.tick_tock->verdict) {
    case planner::TickTockVerdict::kNoGain:
      return absl::StrFormat(
          "its predicted gain, %.2fx, is not worth a second model replica on every GPU",
          report.tick_tock->predicted_gain);
    case planner::TickTockVerdict::kDoubleBatchFits:
      return "one wave of twice the batch fits, at least as fast with one replica and no "
             "cross-wave averaging: Auto uses tick-tock only when it is recommended";
    default:
      return "tick-tock was turned off";
  }
}

// Why the plan was chosen over `row`, which is faster.
std::string WhyNot(const ComparisonRow& row, const ComparisonRow& plan,
                   const planner::PlanReport& report, api::Strategy requested,
                   const planner::DeviceSpec& device) {
  const std::string left = absl::StrFormat(
      "the plan leaves %s GPU-ms per iteration to background "
      "jobs",
      Ms(plan.idle_gpu_seconds));
  if (!row.runs) {
    if (row.status != "out of memory") return row.status;
    const double room =
        row.model == kParaDl ? static_cast<double>(device.memory_bytes) : Usable(device);
    return absl::StrCat("needs ", GiB(row.memory), " per GPU, more than the ", GiB(room),
                        row.model == kParaDl ? " of the device" : " usable");
  }
  if (requested != api::Strategy::kAuto) {
    return absl::StrCat("strategy ", std::string(api::ToString(requested)), " was asked for");
  }
  if (row.model == kParaDl) {
    const std::string counterpart =
        row.strategy == "data"
            ? "the plan's cost model prices data parallelism as the data-parallel row"
            : absl::StrCat("the runtime does not execute ", row.strategy, " parallelism");
    return absl::StrCat("the ParaDL oracle's estimate under its own cost model (", counterpart,
                        "); it keeps all ", row.gpus, " GPUs busy for the whole iteration, ", left);
  }
  if (row.strategy == "data-parallel") {
    return absl::StrCat("it takes ", Amplification(report.data_parallel),
                        " the one-GPU time, beyond the amplification limit of ",
                        absl::StrFormat("%.2fx", report.plan.amplification_limit),
                        " per layer, and leaves ", Ms(row.idle_gpu_seconds),
                        " GPU-ms per iteration to background jobs; ", left);
  }
  if (row.model == kWavelet && report.tick_tock) return TickTockWhyNot(report);
  return "";
}

std::vector<ComparisonRow> Rows(const planner::PlanReport& report) {
  std::vector<ComparisonRow> rows;
  rows.push_back(BurstRow("burst-parallel", report.burst_figures));
  if (report.unbounded_burst) {
    rows.push_back(BurstRow("burst-parallel, any GPU count", *report.unbounded_burst));
  }
  rows.push_back(BurstRow("data-parallel", report.data_parallel_figures));
  if (report.tick_tock) rows.push_back(TickTockRow(report));
  if (report.model_parallel) rows.push_back(ModelParallelRow(report));
  for (const planner::Prediction& p : report.oracle) rows.push_back(OracleRow(p));
  return rows;
}

std::string Optional(double value, const std::string& text) { return value < 0 ? "-" : text; }

std::string Legend(const planner::DeviceSpec& device) {
  return absl::StrCat(
      "what the figures count:\n"
      "  iteration: burst search and wavelet rows as the plan's own (compute, gradient "
      "all-reduces, sample transfers and the input copy on the critical path; comm ms is all but "
      "the compute); ParaDL rows the oracle's compute and communication, without the input copy\n"
      "  memory: burst search and wavelet rows as the plan's own (the busiest GPU's weights, "
      "gradients, optimizer state, activations and input batch), fitting in ",
      GiB(Usable(device)),
      " (the device less a reserve); ParaDL rows the oracle's model (activations with their "
      "gradients, weights, gradients, optimizer state), fitting in ",
      GiB(static_cast<double>(device.memory_bytes)), "\n");
}

std::string WhyLines(const std::vector<ComparisonRow>& rows) {
  size_t plan = 0;
  while (plan < rows.size() && !rows[plan].is_plan) ++plan;
  std::string out = absl::StrCat("\nthe plan is rank ", plan + 1, " (", rows[plan].strategy, ")");
  std::string faster;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].why_not.empty()) continue;
    absl::StrAppend(&faster, "  - rank ", i + 1, " ", rows[i].strategy, " (", rows[i].model, ", ",
                    Ms(rows[i].iteration), " ms): ", rows[i].why_not, "\n");
  }
  if (faster.empty()) return out + ", the fastest of all\n";
  return absl::StrCat(out, "; why not the faster rows:\n", faster);
}

json Number(double value) { return value < 0 ? json(nullptr) : json(value); }

json RowJson(size_t rank, const ComparisonRow& r) {
  return json{{"rank", rank},
              {"strategy", r.strategy},
              {"model", r.model},
              {"gpus", r.gpus},
              {"iterationSeconds", r.iteration},
              {"computeSeconds", Number(r.compute)},
              {"communicationSeconds", Number(r.communication)},
              {"inputSeconds", Number(r.input)},
              {"memoryPerGpuBytes", Number(r.memory)},
              {"gpuSeconds", Number(r.gpu_seconds)},
              {"idleGpuSeconds", Number(r.idle_gpu_seconds)},
              {"status", r.status},
              {"runs", r.runs},
              {"isPlan", r.is_plan},
              {"whyNot", r.why_not.empty() ? json(nullptr) : json(r.why_not)}};
}

json Parts(const std::vector<std::pair<std::string, planner::Seconds>>& parts) {
  json list = json::array();
  for (const auto& [name, time] : parts)
    list.push_back({{"name", name}, {"seconds", time.count()}});
  return list;
}

json PredictionJson(const planner::Prediction& p) {
  return json{{"strategy", std::string(planner::StrategyName(p.strategy))},
              {"gpus", p.gpus},
              {"globalBatch", p.global_batch},
              {"feasible", p.feasible},
              {"infeasibleReason", p.infeasible_reason},
              {"layout", p.layout},
              {"iterationSeconds", p.iteration.count()},
              {"computeSeconds", p.compute_per_iteration.count()},
              {"communicationSeconds", p.communication_per_iteration.count()},
              {"iterationsPerEpoch", p.iterations_per_epoch},
              {"epochSeconds", p.epoch.count()},
              {"computeParts", Parts(p.compute_parts)},
              {"communicationParts", Parts(p.communication_parts)},
              {"memory",
               {{"activationsBytes", p.memory.activations},
                {"weightsBytes", p.memory.weights},
                {"gradientsBytes", p.memory.gradients},
                {"optimizerStateBytes", p.memory.optimizer_state},
                {"totalBytes", p.memory_per_gpu}}},
              {"memoryReuseFactor", p.memory_reuse_factor},
              {"fitsMemory", p.fits_memory}};
}

}  // namespace

std::vector<ComparisonRow> CompareStrategies(const planner::PlanReport& report,
                                             api::Strategy requested,
                                             const planner::DeviceSpec& device) {
  std::vector<ComparisonRow> rows = Rows(report);
  for (ComparisonRow& row : rows) row.is_plan = row.is_plan || IsPlan(row, report, requested);
  std::stable_sort(rows.begin(), rows.end(), [](const ComparisonRow& a, const ComparisonRow& b) {
    if (a.runs != b.runs) return a.runs;
    return a.iteration < b.iteration;
  });
  const auto plan =
      std::find_if(rows.begin(), rows.end(), [](const ComparisonRow& row) { return row.is_plan; });
  if (plan == rows.end()) return rows;
  for (ComparisonRow& row : rows) {
    // Infeasible ParaDL rows have no figures to be faster with.
    if (row.is_plan || row.gpu_seconds < 0 || !(row.iteration < plan->iteration)) continue;
    row.why_not = WhyNot(row, *plan, report, requested, device);
  }
  return rows;
}

std::string FormatComparison(const planner::PlanReport& report, api::Strategy requested,
                             const planner::DeviceSpec& device) {
  const std::vector<ComparisonRow> rows = CompareStrategies(report, requested, device);
  TextTable table({"rank", "strategy", "model", "GPUs", "iteration ms", "compute ms", "comm ms",
                   "memory", "status"});
  for (size_t i = 0; i < rows.size(); ++i) {
    const ComparisonRow& r = rows[i];
    table.AddRow({absl::StrCat(i + 1), r.strategy, r.model, absl::StrCat(r.gpus), Ms(r.iteration),
                  Optional(r.compute, Ms(r.compute)),
                  Optional(r.communication, Ms(r.communication)), Optional(r.memory, GiB(r.memory)),
                  r.status});
  }
  return absl::StrCat(table.Render(), "\n", Legend(device), WhyLines(rows), "\nParaDL breakdown:\n",
                      planner::FormatComparison(report.oracle));
}

json ComparisonJson(const planner::PlanReport& report, api::Strategy requested,
                    const planner::DeviceSpec& device) {
  const std::vector<ComparisonRow> rows = CompareStrategies(report, requested, device);
  json strategies = json::array();
  for (size_t i = 0; i < rows.size(); ++i) strategies.push_back(RowJson(i + 1, rows[i]));
  json paradl = json::array();
  for (const planner::Prediction& p : report.oracle) paradl.push_back(PredictionJson(p));
  return json{{"plan", api::ToJson(report.plan)},
              {"strategies", std::move(strategies)},
              {"paradl", std::move(paradl)},
              {"decisions", report.decisions}};
}

}  // namespace wavepool::cli
