#include "plan_report.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "text_table.h"
#include "wavepool/api/enums.h"
#include "wavepool/planner/oracle.h"

namespace wavepool::cli {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

std::string Ms(double seconds) { return absl::StrFormat("%.3f", seconds * 1e3); }
// MiB below a GiB, so that small models do not show "0.0 GiB".
std::string GiB(double bytes) {
  if (bytes < kGiB) return absl::StrFormat("%.1f MiB", bytes / kMiB);
  return absl::StrFormat("%.1f GiB", bytes / kGiB);
}

// Ascending ranks as runs: "0-3", "5", "0-1,4-5" (a stage's ranks need not be contiguous).
std::string Ranks(const std::vector<std::int64_t>& ranks) {
  std::vector<std::string> runs;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    runs.push_back(j == i ? absl::StrCat(ranks[i]) : absl::StrCat(ranks[i], "-", ranks[j]));
    i = j + 1;
  }
  return absl::StrJoin(runs, ",");
}

std::string SortedList(std::vector<std::int64_t> values) {
  std::sort(values.begin(), values.end());
  return absl::StrJoin(values, ",");
}

std::string StageLayers(const api::PlanStage& stage) {
  if (stage.layers.size() == 1) return stage.layers.front();
  return absl::StrCat(stage.layers.front(), " .. ", stage.layers.back(), " (", stage.layers.size(),
                      ")");
}

std::string Summary(const planner::PlanReport& report, const planner::ModelGraph& model,
                    const planner::DeviceSpec& device, int gpus_allowed) {
  const api::Plan& plan = report.plan;
  const api::PlanPredictions& p = plan.predictions;
  const double dp = 1e-9 * static_cast<double>(report.data_parallel.iteration);
  std::string out = absl::StrFormat("%s on %d x %s (%s)", model.name(), plan.gpus, device.name,
                                    device.display_name);
  if (plan.gpus < gpus_allowed) absl::StrAppendFormat(&out, " of %d allowed", gpus_allowed);
  absl::StrAppendFormat(&out, ", global batch %d, amplification limit %.2f, GPU counts %s\n",
                        plan.global_batch_size, plan.amplification_limit,
                        api::ToString(plan.gpu_counts));
  absl::StrAppend(&out, "compute cost: ", report.compute_source, "\n");
  absl::StrAppend(&out, "strategy: ", std::string(api::ToString(plan.strategy)));
  if (plan.waves > 1) {
    absl::StrAppendFormat(&out, ", %d waves offset by %.2f of an iteration", plan.waves,
                          plan.wave_offset_fraction);
  }
  absl::StrAppendFormat(
      &out, "\niteration: %s ms (%.1f samples/s); data-parallel on %d GPUs: %s ms\n",
      Ms(p.iteration_seconds), p.samples_per_second,
      report.data_parallel.layers.empty() ? 0 : report.data_parallel.layers.front().gpus, Ms(dp));
  absl::StrAppendFormat(&out, "  compute %s ms, communication %s ms on the critical path\n",
                        Ms(p.compute_seconds), Ms(p.communication_seconds));
  absl::StrAppendFormat(&out, "memory per GPU: %s of %s\n",
                        GiB(static_cast<double>(p.memory_per_gpu_bytes)),
                        GiB(static_cast<double>(device.memory_bytes)));
  absl::StrAppendFormat(&out, "GPU time: %s GPU-ms per iteration, %.2fx the one-GPU time\n",
                        Ms(p.gpu_seconds), p.amplification);
  const double capacity = static_cast<double>(plan.gpus) * p.iteration_seconds;
  absl::StrAppendFormat(
      &out, "idle for background jobs: %s GPU-ms per iteration (%.0f%% of %d GPUs)\n",
      Ms(p.background_idle_gpu_seconds),
      capacity > 0 ? 100.0 * p.background_idle_gpu_seconds / capacity : 0.0, plan.gpus);
  absl::StrAppendFormat(&out, "data movement: cpu split %s, preload %s, weight compression %s\n",
                        plan.data_movement.cpu_split ? "on" : "off",
                        plan.data_movement.preload ? "on" : "off",
                        plan.data_movement.weight_compression ? "on" : "off");
  return out;
}

std::string Stages(const api::Plan& plan) {
  TextTable table({"stage", "layers", "GPUs", "ranks", "batch/GPU", "time ms", "after", "beside"});
  for (const api::PlanStage& stage : plan.stages) {
    table.AddRow({absl::StrCat(stage.index), StageLayers(stage), absl::StrCat(stage.gpus),
                  Ranks(stage.ranks), absl::StrCat(stage.per_gpu_batch),
                  Ms(stage.predicted_seconds), SortedList(stage.depends_on),
                  SortedList(stage.concurrent_with)});
  }
  return table.Render();
}

std::string Transfers(const api::Plan& plan) {
  if (plan.transfers.empty()) return "";
  TextTable table({"from", "to", "samples moved", "MiB", "time ms"});
  for (const api::SampleTransfer& t : plan.transfers) {
    table.AddRow(
        {absl::StrCat("stage ", t.from_stage), absl::StrCat("stage ", t.to_stage),
         absl::StrCat(t.samples),
         absl::StrFormat("%.2f", static_cast<double>(t.bytes_per_sample * t.samples) / kMiB),
         Ms(t.predicted_seconds)});
  }
  return absl::StrCat("\nsample transfers (forward and backward):\n", table.Render());
}

std::string SyncGroups(const api::Plan& plan) {
  if (plan.sync_groups.empty()) return "";
  TextTable table({"stage", "GPUs", "MiB", "algorithm", "time ms"});
  for (const api::SyncGroup& g : plan.sync_groups) {
    table.AddRow({absl::StrCat(g.stage), absl::StrCat(g.ranks.size()),
                  absl::StrFormat("%.2f", static_cast<double>(g.bytes) / kMiB),
                  std::string(api::ToString(g.algorithm)), Ms(g.predicted_seconds)});
  }
  return absl::StrCat("\ngradient all-reduce per stage:\n", table.Render());
}

std::string PerLayer(const planner::PlanReport& report, const planner::ModelGraph& model) {
  TextTable table({"layer", "kind", "GPUs (burst search)", "work ms", "transfer ms"});
  for (const planner::Layer& layer : model.layers()) {
    const planner::LayerSchedule& s = report.burst.layers[layer.id];
    table.AddRow({layer.name, std::string(planner::LayerKindName(layer.kind)), absl::StrCat(s.gpus),
                  Ms(1e-9 * static_cast<double>(s.work)),
                  Ms(1e-9 * static_cast<double>(s.transfer_in))});
  }
  return absl::StrCat("\nlayers:\n", table.Render());
}

}  // namespace

std::string FormatPlan(const planner::PlanReport& report, const planner::ModelGraph& model,
                       const planner::DeviceSpec& device, int gpus_allowed, bool per_layer) {
  std::string out = Summary(report, model, device, gpus_allowed);
  absl::StrAppend(&out, "\n", Stages(report.plan), Transfers(report.plan), SyncGroups(report.plan));
  if (per_layer) absl::StrAppend(&out, PerLayer(report, model));
  absl::StrAppend(&out, "\nwhy:\n");
  for (const std::string& decision : report.decisions)
    absl::StrAppend(&out, "  - ", decision, "\n");
  return out;
}

std::string FormatComparison(const planner::PlanReport& report) {
  struct Row {
    std::string name, model;
    int gpus;
    double iteration, compute, communication;
    double memory;
    std::string status;
    bool runs;  // ranked before every row that cannot run
  };
  std::vector<Row> rows;
  const api::Plan& plan = report.plan;
  auto burst_row = [&](const std::string& name, const planner::BurstEvaluation& e) {
    int gpus = 0;
    for (const auto& l : e.layers) gpus = std::max(gpus, l.first_rank + l.gpus);
    rows.push_back({name, "burst search", gpus, 1e-9 * static_cast<double>(e.iteration), -1, -1, -1,
                    "ok", true});
  };
  burst_row("burst-parallel", report.burst);
  burst_row("data-parallel", report.data_parallel);
  if (report.tick_tock) {
    // Every verdict but the two memory ones is a plan that runs (maybe without gain).
    const planner::TickTockAnalysis& t = *report.tick_tock;
    const bool runs = t.verdict != planner::TickTockVerdict::kSingleWaveDoesNotFit &&
                      t.verdict != planner::TickTockVerdict::kWavesDoNotFit;
    rows.push_back({"tick-tock (2 waves)", "wavelet", static_cast<int>(plan.gpus),
                    t.pair_iteration.count() / 2, -1, -1, static_cast<double>(t.offsets.best_peak),
                    std::string(planner::TickTockVerdictName(t.verdict)), runs});
  }
  if (report.model_parallel) {
    // Only a model-parallel plan carries this analysis: show the plan's own predictions, which
    // add the stage-to-stage transfers to the analysis' compute time.
    const planner::ModelParallelWavesAnalysis& m = *report.model_parallel;
    const api::PlanPredictions& p = plan.predictions;
    rows.push_back({absl::StrCat("model-parallel (", m.tock_waves + 1, " waves)"), "wavelet",
                    static_cast<int>(plan.gpus), p.iteration_seconds, p.compute_seconds,
                    p.communication_seconds, static_cast<double>(p.memory_per_gpu_bytes), "ok",
                    true});
  }
  for (const planner::Prediction& p : report.oracle) {
    rows.push_back({std::string(planner::StrategyName(p.strategy)), "ParaDL", p.gpus,
                    p.iteration.count(), p.compute_per_iteration.count(),
                    p.communication_per_iteration.count(), static_cast<double>(p.memory_per_gpu),
                    !p.feasible ? p.infeasible_reason : (p.fits_memory ? "ok" : "out of memory"),
                    p.feasible && p.fits_memory});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    if (a.runs != b.runs) return a.runs;
    return a.iteration < b.iteration;
  });
  TextTable table({"rank", "strategy", "model", "GPUs", "iteration ms", "compute ms", "comm ms",
                   "memory", "status"});
  auto optional_ms = [](double s) { return s < 0 ? std::string("-") : Ms(s); };
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    table.AddRow({absl::StrCat(i + 1), r.name, r.model, absl::StrCat(r.gpus), Ms(r.iteration),
                  optional_ms(r.compute), optional_ms(r.communication),
                  r.memory < 0 ? std::string("-") : GiB(r.memory), r.status});
  }
  return absl::StrCat(table.Render(), "\nParaDL breakdown:\n",
                      planner::FormatComparison(report.oracle));
}

}  // namespace wavepool::cli
