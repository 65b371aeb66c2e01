#include "plan_report.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "report_text.h"
#include "text_table.h"
#include "wavepool/api/enums.h"
#include "wavepool/planner/oracle.h"

namespace wavepool::cli {
namespace {


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

// "300 GB/s", "12.5 GB/s": a link's bandwidth from its seconds per byte.
std::string Bandwidth(const planner::Link& link) {
  return absl::StrFormat("%.4g GB/s", 1e-9 / link.beta_s_per_byte);
}

std::string NetworkLine(const planner::NetworkModel& n) {
  std::string line = absl::StrFormat(
      "network: %s: %d GPUs per node at %.4g us and %s each; %d NICs per node at %.4g us and %s "
      "each",
      n.name, n.gpus_per_node, 1e6 * n.intra_node.alpha.count(), Bandwidth(n.intra_node),
      n.nics_per_node, 1e6 * n.inter_node.alpha.count(), Bandwidth(n.inter_node));
  if (n.contention > 1) absl::StrAppendFormat(&line, ", contention %.2fx", n.contention);
  return line + "\n";
}

// What the input copy costs and whether the iteration pays it.
std::string InputLine(const planner::PlanReport& report) {
  const auto& m = report.plan.data_movement;
  const double copy = report.input_copy.count();
  const double exposed = report.input_exposed.count();
  std::string how = m.cpu_split ? "every GPU copying its own samples"
                                : "GPU 0 copying the batch "
                                  "and scattering it";
  if (exposed <= 0) {
    return absl::StrFormat(
        "  input copy %s ms per iteration (%s), hidden behind compute by "
        "preload\n",
        Ms(copy), how);
  }
  return absl::StrFormat(
      "  input copy %s ms per iteration (%s), %s ms of it on the critical "
      "path%s\n",
      Ms(copy), how, Ms(exposed),
      m.preload ? " (longer than the compute preload hides it behind)" : " (preload off)");
}

std::string Summary(const planner::PlanReport& report, const planner::ModelGraph& model,
                    const planner::DeviceSpec& device, const planner::NetworkModel& network,
                    int gpus_allowed) {
  const api::Plan& plan = report.plan;
  const api::PlanPredictions& p = plan.predictions;
  std::string out = absl::StrFormat("%s on %d x %s (%s)", model.name(), plan.gpus, device.name,
                                    device.display_name);
  if (plan.gpus < gpus_allowed) absl::StrAppendFormat(&out, " of %d allowed", gpus_allowed);
  absl::StrAppendFormat(&out, ", global batch %d, amplification limit %.2f, GPU counts %s\n",
                        plan.global_batch_size, plan.amplification_limit,
                        api::ToString(plan.gpu_counts));
  absl::StrAppend(&out, "compute cost: ", report.compute_source, "\n", NetworkLine(network));
  absl::StrAppend(&out, "strategy: ", std::string(api::ToString(plan.strategy)));
  if (plan.waves > 1) {
    absl::StrAppendFormat(&out, ", %d waves offset by %.2f of an iteration", plan.waves,
                          plan.wave_offset_fraction);
  }
  // One figure, and what it counts: the parts below add up to it.
  absl::StrAppendFormat(&out, "\niteration: %s ms (%.1f samples/s)\n", Ms(p.iteration_seconds),
                        p.samples_per_second);
  const double input = report.input_exposed.count();
  absl::StrAppendFormat(&out,
                        "  = compute %s ms + communication %s ms + input copy %s ms on the "
                        "critical path\n",
                        Ms(p.compute_seconds), Ms(p.communication_seconds - input), Ms(input));
  absl::StrAppend(&out, InputLine(report));
  absl::StrAppendFormat(&out, "  data-parallel on %d GPUs: %s ms, counted the same way\n",
                        report.data_parallel_figures.gpus,
                        Ms(report.data_parallel_figures.iteration.count()));
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
                       const planner::DeviceSpec& device, const planner::NetworkModel& network,
                       int gpus_allowed, bool per_layer) {
  std::string out = Summary(report, model, device, network, gpus_allowed);
  absl::StrAppend(&out, "\n", Stages(report.plan), Transfers(report.plan), SyncGroups(report.plan));
  if (per_layer) absl::StrAppend(&out, PerLayer(report, model));
  absl::StrAppend(&out, "\nwhy:\n");
  for (const std::string& decision : report.decisions)
    absl::StrAppend(&out, "  - ", decision, "\n");
  return out;
}

}  // namespace wavepool::cli
