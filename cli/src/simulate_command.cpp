#include "wavepool/cli/simulate_command.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "binary_file.h"
#include "text_table.h"
#include "wavepool/base/plural.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/simulate/report.h"

namespace wavepool::cli {
namespace {

using simulate::Percentiles;
using simulate::Policy;
using simulate::PolicyResult;
using simulate::SimulationReport;

absl::Status FlagError(const std::string& flag, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", problem));
}

// The comma-separated items of a list flag, trimmed; an error for an empty item.
absl::StatusOr<std::vector<std::string>> Items(const std::string& flag, const std::string& text) {
  std::vector<std::string> items;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    item = absl::StripAsciiWhitespace(item);
    if (item.empty()) {
      return FlagError(flag, absl::StrCat("empty item in \"", text, "\" (a comma-separated list)"));
    }
    items.emplace_back(item);
  }
  return items;
}

absl::StatusOr<std::int64_t> Positive(const std::string& flag, const std::string& item) {
  std::int64_t value = 0;
  if (!absl::SimpleAtoi(item, &value)) {
    return FlagError(flag, absl::StrCat("\"", item, "\" is not an integer"));
  }
  if (value < 1) return FlagError(flag, absl::StrCat("every value must be >= 1, got ", value));
  return value;
}

// "2,4,8" into `out`; `out` keeps its default when `text` is empty.
absl::Status ParseIntegers(const std::string& flag, const std::string& text,
                           std::vector<std::int64_t>* out) {
  if (text.empty()) return absl::OkStatus();
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<std::string> items, Items(flag, text));
  std::vector<std::int64_t> values;
  for (const std::string& item : items) {
    WAVEPOOL_ASSIGN_OR_RETURN(std::int64_t v, Positive(flag, item));
    values.push_back(v);
  }
  *out = std::move(values);
  return absl::OkStatus();
}

// "MIN:MAX" (or one number for both) into `min` and `max`.
absl::Status ParseRange(const std::string& flag, const std::string& text, std::int64_t* min,
                        std::int64_t* max) {
  if (text.empty()) return absl::OkStatus();
  const std::vector<std::string> parts = absl::StrSplit(text, ':');
  if (parts.size() > 2) {
    return FlagError(flag, absl::StrCat("must be MIN:MAX, got \"", text, "\""));
  }
  WAVEPOOL_ASSIGN_OR_RETURN(std::int64_t lo, Positive(flag, parts.front()));
  WAVEPOOL_ASSIGN_OR_RETURN(std::int64_t hi, Positive(flag, parts.back()));
  if (hi < lo) return FlagError(flag, absl::StrCat("MIN must be <= MAX, got \"", text, "\""));
  *min = lo;
  *max = hi;
  return absl::OkStatus();
}

// "vgg16,resnet50:2": a model and its weight (1 when not given). Unknown models are the
// generator's to report (trace.h's Validate lists the known ones).
absl::Status ParseModels(const std::string& text, std::vector<simulate::WeightedModel>* out) {
  if (text.empty()) return absl::OkStatus();
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<std::string> items, Items("models", text));
  std::vector<simulate::WeightedModel> models;
  for (const std::string& item : items) {
    const std::vector<std::string> parts = absl::StrSplit(item, ':');
    simulate::WeightedModel m{parts.front(), 1.0};
    if (parts.size() > 2 || (parts.size() == 2 && (!absl::SimpleAtod(parts[1], &m.weight) ||
                                                   !(m.weight > 0) || !std::isfinite(m.weight)))) {
      return FlagError("models", absl::StrCat("\"", item,
                                              "\" must be MODEL or MODEL:WEIGHT with a "
                                              "weight > 0"));
    }
    models.push_back(std::move(m));
  }
  *out = std::move(models);
  return absl::OkStatus();
}

absl::StatusOr<simulate::TraceOptions> TraceOptionsOf(const SimulateFlags& flags) {
  simulate::TraceOptions o = flags.generate;
  for (const absl::Status& s :
       {ParseModels(flags.models, &o.models),
        ParseIntegers("foreground-gpus", flags.foreground_gpus, &o.foreground_gpus),
        ParseIntegers("foreground-batches", flags.foreground_batches, &o.foreground_batches),
        ParseIntegers("background-batches", flags.background_batches, &o.background_batches),
        ParseRange("foreground-steps", flags.foreground_steps, &o.foreground_steps_min,
                   &o.foreground_steps_max),
        ParseRange("background-steps", flags.background_steps, &o.background_steps_min,
                   &o.background_steps_max)}) {
    WAVEPOOL_RETURN_IF_ERROR(s);
  }
  if (absl::Status s = simulate::Validate(o); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("generated trace: ", s.message()));
  }
  return o;
}

absl::StatusOr<simulate::Trace> LoadTrace(const SimulateFlags& flags) {
  if (flags.trace.empty()) {
    WAVEPOOL_ASSIGN_OR_RETURN(simulate::TraceOptions options, TraceOptionsOf(flags));
    return simulate::GenerateTrace(options);
  }
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, ReadBinaryFile(flags.trace));
  const std::string text(bytes.begin(), bytes.end());
  return simulate::ParseTraceCsv(flags.trace, text);
}

absl::StatusOr<std::vector<Policy>> ParsePolicies(const std::string& text) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<std::string> items, Items("policies", text));
  std::vector<Policy> policies;
  for (const std::string& item : items) {
    absl::StatusOr<Policy> p = simulate::ParsePolicy(item);
    if (!p.ok()) return FlagError("policies", std::string(p.status().message()));
    for (Policy seen : policies) {
      if (seen == *p) return FlagError("policies", absl::StrCat("\"", item, "\" is named twice"));
    }
    policies.push_back(*p);
  }
  return policies;
}

std::string Number(double v) { return absl::StrFormat("%.4g", v); }
std::string Percent(double share) { return absl::StrFormat("%.1f%%", 100 * share); }
std::string Spread(const Percentiles& p) {
  return absl::StrFormat("%s / %s / %s", Number(p.p50), Number(p.p90), Number(p.p99));
}

// One row of the policy table: a label and one cell per policy.
template <typename F>
std::vector<std::string> Row(const std::string& label, const SimulationReport& report, F cell) {
  std::vector<std::string> row = {label};
  for (const PolicyResult& r : report.results) row.push_back(cell(r));
  return row;
}

std::string FormatRatios(const SimulationReport& report) {
  std::string out;
  const auto ratio = [&](Policy num, Policy den, bool fg_only) {
    return simulate::ThroughputRatio(report, num, den, fg_only);
  };
  if (std::optional<double> r = ratio(Policy::kBurst, Policy::kExclusiveDataParallel, false)) {
    absl::StrAppendFormat(&out, "burst / exclusive-dp cluster samples/s: %.2fx\n", *r);
  }
  if (std::optional<double> r = ratio(Policy::kWavepool, Policy::kExclusiveDataParallel, false)) {
    absl::StrAppendFormat(&out, "wavepool / exclusive-dp cluster samples/s: %.2fx\n", *r);
  }
  if (std::optional<double> r = ratio(Policy::kWavepool, Policy::kExclusiveDataParallel, true)) {
    absl::StrAppendFormat(&out,
                          "wavepool / exclusive-dp foreground samples/s (DeepPool's basis): "
                          "%.2fx\n",
                          *r);
  }
  return out;
}

std::string FormatReport(const SimulationReport& report) {
  const simulate::SimulationOptions& o = report.options;
  std::string out = absl::StrFormat(
      "cluster: %s x %d %s GPUs; trace: %d jobs (%d foreground, %d background); %d plans\n"
      "foreground slowdown SLO %.3g, amplification limit %.3g, preemption %.3g s\n",
      Plural(o.nodes, "node"), o.gpus_per_node, o.device, report.jobs, report.foreground_jobs,
      report.background_jobs, report.plans, o.max_foreground_slowdown, o.amplification_limit,
      o.preemption_seconds);
  if (report.offered_foreground_load) {
    absl::StrAppendFormat(&out,
                          "offered foreground load %.2f (GPU-time of exclusive-dp plans over the "
                          "cluster's, 0 to the last arrival)\n",
                          *report.offered_foreground_load);
  }
  absl::StrAppend(&out,
                  "throughput and utilisation: 0 to the last arrival (or the whole run when "
                  "every job arrives at 0)\n\n");
  std::vector<std::string> header = {"policy"};
  for (const PolicyResult& r : report.results) header.emplace_back(PolicyName(r.policy));
  TextTable table(std::move(header));
  table.AddRow(Row("cluster samples/s", report,
                   [](const PolicyResult& r) { return Number(r.cluster_samples_per_second); }));
  table.AddRow(Row("  foreground samples/s", report,
                   [](const PolicyResult& r) { return Number(r.foreground_samples_per_second); }));
  table.AddRow(Row("  background samples/s", report,
                   [](const PolicyResult& r) { return Number(r.background_samples_per_second); }));
  table.AddRow(Row("GPU utilisation (busy)", report,
                   [](const PolicyResult& r) { return Percent(r.gpu_busy); }));
  table.AddRow(Row("GPUs held", report, [](const PolicyResult& r) { return Percent(r.gpu_held); }));
  table.AddRow(Row("fg GPUs per job (mean)", report,
                   [](const PolicyResult& r) { return Number(r.foreground_gpus_mean); }));
  table.AddRow(Row("fg completion s p50/p90/p99", report,
                   [](const PolicyResult& r) { return Spread(r.foreground_completion_seconds); }));
  table.AddRow(Row("fg wait s p50/p90/p99", report,
                   [](const PolicyResult& r) { return Spread(r.foreground_wait_seconds); }));
  table.AddRow(Row("fg slowdown p50/p90/p99", report,
                   [](const PolicyResult& r) { return Spread(r.foreground_slowdown); }));
  table.AddRow(Row("fg slowdown max", report,
                   [](const PolicyResult& r) { return Number(r.foreground_slowdown.max); }));
  table.AddRow(Row("fg jobs over the SLO", report,
                   [](const PolicyResult& r) { return absl::StrCat(r.foreground_over_slo); }));
  table.AddRow(Row("bg progress (steps)", report,
                   [](const PolicyResult& r) { return Percent(r.background_progress); }));
  table.AddRow(Row("bg jobs completed", report, [](const PolicyResult& r) {
    return absl::StrCat(r.background_completed, " / ", r.background_jobs);
  }));
  table.AddRow(Row("bg placements / preemptions", report, [](const PolicyResult& r) {
    return absl::StrCat(r.background_placements, " / ", r.preemptions);
  }));
  table.AddRow(Row("window s / run s", report, [](const PolicyResult& r) {
    return absl::StrCat(Number(r.window_seconds), " / ", Number(r.horizon_seconds));
  }));
  absl::StrAppend(&out, table.Render());
  const std::string ratios = FormatRatios(report);
  if (!ratios.empty()) absl::StrAppend(&out, "\n", ratios);
  return out;
}

absl::StatusOr<std::string> Simulate(const SimulateFlags& flags) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<Policy> policies, ParsePolicies(flags.policies));
  WAVEPOOL_ASSIGN_OR_RETURN(simulate::Trace trace, LoadTrace(flags));
  if (!flags.write_trace.empty()) {
    const std::string csv = simulate::FormatTraceCsv(trace);
    WAVEPOOL_RETURN_IF_ERROR(WriteFileAtomically(
        flags.write_trace,
        absl::MakeConstSpan(reinterpret_cast<const std::uint8_t*>(csv.data()), csv.size())));
  }
  WAVEPOOL_ASSIGN_OR_RETURN(SimulationReport report,
                            simulate::Simulate(trace, policies, flags.options));
  if (flags.json) return simulate::ToJson(report).dump(2) + "\n";
  return FormatReport(report);
}

}  // namespace

CLI::App* AddSimulateCommand(CLI::App* app, SimulateFlags* flags) {
  const simulate::TraceOptions defaults;
  CLI::App* sim = app->add_subcommand(
      "simulate", "Simulate a GPU cluster running a job trace under each policy and compare them");
  sim->add_option("--trace", flags->trace, "A CSV trace (docs/simulate.md); default: generate one");
  sim->add_option("--write-trace", flags->write_trace, "Write the simulated trace as CSV");
  sim->add_option("--jobs", flags->generate.jobs, "Jobs of the generated trace")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{10'000'000}));
  sim->add_option("--seed", flags->generate.seed, "Seed of the generated trace")
      ->capture_default_str();
  sim->add_option("--arrival-rate", flags->generate.arrival_rate, "Jobs per second (Poisson)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sim->add_option("--foreground-share", flags->generate.foreground_share,
                  "Probability that a job is foreground")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  std::vector<std::string> models;
  for (const simulate::WeightedModel& m : defaults.models) models.push_back(m.model);
  sim->add_option(
      "--models", flags->models,
      absl::StrCat("Model mix, MODEL[:WEIGHT],... (default ", absl::StrJoin(models, ","), ")"));
  sim->add_option("--foreground-gpus", flags->foreground_gpus,
                  absl::StrCat("GPU counts of foreground jobs (default ",
                               absl::StrJoin(defaults.foreground_gpus, ","), ")"));
  sim->add_option("--foreground-batches", flags->foreground_batches,
                  absl::StrCat("Global batches of foreground jobs (default ",
                               absl::StrJoin(defaults.foreground_batches, ","), ")"));
  sim->add_option(
      "--foreground-steps", flags->foreground_steps,
      absl::StrCat("Foreground steps MIN:MAX, log-uniform (default ", defaults.foreground_steps_min,
                   ":", defaults.foreground_steps_max, ")"));
  sim->add_option("--background-batches", flags->background_batches,
                  absl::StrCat("Batches of background jobs (default ",
                               absl::StrJoin(defaults.background_batches, ","), ")"));
  sim->add_option(
      "--background-steps", flags->background_steps,
      absl::StrCat("Background steps MIN:MAX, log-uniform (default ", defaults.background_steps_min,
                   ":", defaults.background_steps_max, ")"));
  sim->add_option("--nodes", flags->options.nodes, "Nodes of the cluster")
      ->capture_default_str()
      ->check(CLI::Range(1, 99999));
  sim->add_option("--gpus-per-node", flags->options.gpus_per_node, "GPUs per node")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  sim->add_option("--device", flags->options.device, "GPU and cost model: v100, a100, h100, h200")
      ->capture_default_str();
  sim->add_option("--max-slowdown", flags->options.max_foreground_slowdown,
                  "Foreground slowdown SLO under collocation (>= 1)")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 100.0));
  sim->add_option("--amp-limit", flags->options.amplification_limit,
                  "GPU-time amplification limit of burst-parallel plans (>= 1)")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 1000.0));
  sim->add_option("--preemption-seconds", flags->options.preemption_seconds,
                  "Time a preempted background job takes to checkpoint and exit")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  sim->add_option("--policies", flags->policies, "Policies to compare, in order")
      ->capture_default_str();
  sim->add_flag("--verify-placement", flags->options.verify_placement,
                "Check every placement against the whole cluster's (slow)");
  sim->add_flag("--json", flags->json, "Print every figure as JSON");
  return sim;
}

int RunSimulate(const SimulateFlags& flags, std::ostream& out, std::ostream& err) {
  absl::StatusOr<std::string> text = Simulate(flags);
  if (!text.ok()) {
    err << "wavepool simulate: " << text.status().message() << "\n";
    return 1;
  }
  out << *text;
  return 0;
}

}  // namespace wavepool::cli
