#include "report_charts.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "report_agent_charts.h"
#include "svg_chart.h"

namespace wavepool::local {
namespace {

Axis TimeAxis() { return {"seconds since the run started", Unit::kPlain, false, false}; }

// Palette slots of the shaded steps, apart from the first jobs' colours.
constexpr int kTickColor = 5;
constexpr int kTockColor = 4;
// The zoomed memory chart shows about this many iterations.
constexpr double kWaveIterations = 12;
constexpr double kWaveSamples = 60;  // at least, in the window

bool IsForeground(const JobReport& job) { return job.role == "Foreground"; }

std::optional<double> Median(std::vector<double> values) {
  values.erase(
      std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }),
      values.end());
  if (values.empty()) return std::nullopt;
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

bool SharesGpu(const JobReport& a, const JobReport& b) {
  for (std::uint32_t g : a.gpus) {
    if (std::find(b.gpus.begin(), b.gpus.end(), g) != b.gpus.end()) return true;
  }
  return false;
}

bool OnGpu(const JobReport& job, std::uint32_t gpu) {
  return std::find(job.gpus.begin(), job.gpus.end(), gpu) != job.gpus.end();
}

template <typename Field>
Series StepSeries(const JobReport& job, int color, Field field) {
  Series s;
  s.name = job.name;
  s.color = color;
  for (const ReportStep& step : job.steps_trained) s.points.push_back({step.time, field(step)});
  return s;
}

std::string LossChart(const RunReport& report) {
  LineChart c;
  c.id = "loss";
  c.title = "Loss";
  c.note = "The training loss of every job at each step, over the run.";
  c.x = TimeAxis();
  c.y = {"loss", Unit::kPlain, false, false};
  for (std::size_t i = 0; i < report.jobs.size(); ++i) {
    c.series.push_back(StepSeries(report.jobs[i], static_cast<int>(i),
                                  [](const ReportStep& s) { return s.line.loss; }));
  }
  c.empty = "No job trained a step.";
  return RenderLineChart(c);
}

std::string ThroughputChart(const RunReport& report) {
  LineChart c;
  c.id = "throughput";
  c.title = "Throughput";
  c.note = "Samples per second of every job at each step (rank 0's step time), over the run.";
  c.x = TimeAxis();
  c.y = {"samples/s", Unit::kPlain, false, true};
  for (std::size_t i = 0; i < report.jobs.size(); ++i) {
    c.series.push_back(StepSeries(report.jobs[i], static_cast<int>(i),
                                  [](const ReportStep& s) { return s.line.samples_per_second; }));
  }
  c.empty = "No job trained a step.";
  return RenderLineChart(c);
}

int JobColor(const RunReport& report, const std::string& name) {
  for (std::size_t i = 0; i < report.jobs.size(); ++i) {
    if (report.jobs[i].name == name) return static_cast<int>(i);
  }
  return static_cast<int>(report.jobs.size());
}

std::string WorkerName(const MemorySeries& m) {
  return absl::StrCat(m.job, " (", m.role, ", pid ", m.pid, ")");
}

std::string MemoryChart(const RunReport& report, std::uint32_t gpu) {
  LineChart c;
  c.id = absl::StrCat("memory-gpu-", gpu);
  c.title = absl::StrCat("Memory, GPU ", gpu);
  c.note = absl::StrCat(
      "The memory each worker's allocator held on GPU ", gpu,
      " as it reported it to the agent, over the run; dashed: the memory wave the agent found "
      "(peak and trough), when it found one.");
  c.x = TimeAxis();
  c.y = {"allocated", Unit::kBytes, false, true};
  double first = INFINITY, last = -INFINITY;
  for (const MemorySeries& m : report.memory) {
    if (m.gpu != gpu) continue;
    Series s;
    s.name = WorkerName(m);
    s.color = JobColor(report, m.job);
    for (const MemoryReading& r : m.readings) {
      s.points.push_back({r.time, static_cast<double>(r.allocated_bytes)});
      first = std::min(first, r.time);
      last = std::max(last, r.time);
    }
    c.series.push_back(std::move(s));
  }
  for (auto it = report.agent.rbegin(); it != report.agent.rend() && first <= last; ++it) {
    const GpuSnapshot* g = nullptr;
    for (const GpuSnapshot& candidate : it->gpus) g = candidate.index == gpu ? &candidate : g;
    if (g == nullptr || !g->wave_peak_bytes.has_value() || !g->wave_trough_bytes.has_value()) {
      continue;
    }
    const double peak = static_cast<double>(*g->wave_peak_bytes);
    const double trough = static_cast<double>(*g->wave_trough_bytes);
    c.series.push_back({"agent: wave peak", {{first, peak}, {last, peak}}, Mark::kDashed, 6});
    c.series.push_back({"agent: wave trough", {{first, trough}, {last, trough}}, Mark::kDashed, 7});
    break;
  }
  c.empty = absl::StrCat("No worker on GPU ", gpu, " reported its memory.");
  return RenderLineChart(c);
}

// Tick-tock steps as bands: each from the previous step's end to its own, coloured by wave.
// The two waves' memory peaks should interleave (wavelet-tick-tock §3.2.1); step times are when
// local mode read rank 0's progress line, so a band's edges are that precise.
void AddWaveBands(const JobReport& job, double from, double to, LineChart& c) {
  for (std::size_t i = 1; i < job.steps_trained.size(); ++i) {
    const ReportStep& previous = job.steps_trained[i - 1];
    const ReportStep& step = job.steps_trained[i];
    if (step.line.wave.empty() || step.time < from || previous.time > to) continue;
    const bool tick = step.line.wave == "tick";
    c.bands.push_back({previous.time, step.time, tick ? kTickColor : kTockColor,
                       absl::StrCat(tick ? "tick" : "tock", " steps of ", job.name)});
  }
}

struct Window {
  double from = 0, to = 0;
  double period = 0;  // the slowest job's median iteration time, seconds
};

// A window in the middle of the GPU's foreground workers' samples (of all its workers' when it
// has none), about kWaveIterations iterations wide; nullopt without two samples.
std::optional<Window> WaveWindow(const RunReport& report, std::uint32_t gpu) {
  const bool foreground =
      std::any_of(report.memory.begin(), report.memory.end(), [&](const MemorySeries& m) {
        return m.gpu == gpu && m.role == "Foreground" && m.readings.size() >= 2;
      });
  double first = INFINITY, last = -INFINITY;
  for (const MemorySeries& m : report.memory) {
    if (m.gpu != gpu || m.readings.empty() || (foreground && m.role != "Foreground")) continue;
    first = std::min(first, m.readings.front().time);
    last = std::max(last, m.readings.back().time);
  }
  if (!(first < last)) return std::nullopt;
  Window w;
  w.period = (last - first) / kWaveIterations;
  double slowest = 0;  // the jobs' median iterations: the slowest job's waves are the widest
  for (const JobReport& job : report.jobs) {
    std::optional<double> median = MedianIterationSeconds(job);
    if (OnGpu(job, gpu) && median.has_value()) slowest = std::max(slowest, *median);
  }
  if (slowest > 0) w.period = std::min(w.period, slowest);
  // Workers report at most every 5 ms: faster iterations get a window wide enough for
  // kWaveSamples samples, which show their shape (aliased) rather than a handful of dots.
  const double width =
      std::min(last - first, std::max(kWaveIterations * w.period, kWaveSamples * 0.005));
  w.from = (first + last - width) / 2;
  w.to = w.from + width;
  return w;
}

std::string MemoryWaveChart(const RunReport& report, std::uint32_t gpu) {
  LineChart c;
  c.id = absl::StrCat("memory-wave-gpu-", gpu);
  c.title = absl::StrCat("Memory waves, GPU ", gpu);
  c.empty = absl::StrCat("No worker on GPU ", gpu, " reported its memory.");
  const std::optional<Window> w = WaveWindow(report, gpu);
  if (!w.has_value()) return RenderLineChart(c);
  c.x = TimeAxis();
  c.y = {"allocated", Unit::kBytes, false, false};
  for (const MemorySeries& m : report.memory) {
    if (m.gpu != gpu) continue;
    Series s{WorkerName(m), {}, Mark::kLineDots, JobColor(report, m.job)};
    for (const MemoryReading& r : m.readings) {
      if (r.time >= w->from && r.time <= w->to) {
        s.points.push_back({r.time, static_cast<double>(r.allocated_bytes)});
      }
    }
    c.series.push_back(std::move(s));
  }
  bool tick_tock = false;
  for (const JobReport& job : report.jobs) {
    if (!OnGpu(job, gpu) || job.strategy != "TickTock") continue;
    tick_tock = true;
    AddWaveBands(job, w->from, w->to, c);
  }
  c.note = absl::StrFormat(
      "%s from the middle of the foreground's run (about %.0f iterations): each dot is a "
      "sample; a wave rises through a forward pass and falls through the backward pass.%s",
      FormatValue(w->to - w->from, Unit::kSeconds), (w->to - w->from) / w->period,
      tick_tock ? " Shaded: each tick-tock step, from the previous step's end to its own, by "
                  "wave (tick or tock)."
                : "");
  return RenderLineChart(c);
}

// The snapshot in force at `time` (the latest at or before it); nullptr before the first.
const AgentSnapshot* SnapshotAt(const RunReport& report, double time) {
  auto it = std::upper_bound(report.agent.begin(), report.agent.end(), time,
                             [](double t, const AgentSnapshot& s) { return t < s.time; });
  return it == report.agent.begin() ? nullptr : &*std::prev(it);
}

struct SoloEstimate {
  double seconds = 0;
  std::string how;
};

// The foreground's iteration time alone on its GPUs: the median over the steps the agent saw
// no background task beside it; else the median of iteration time / the agent's measured
// slowdown; else the median iteration time.
std::optional<SoloEstimate> SoloIteration(const RunReport& report, const JobReport& job) {
  std::vector<double> alone, corrected;
  for (const ReportStep& step : job.steps_trained) {
    const AgentSnapshot* snapshot = SnapshotAt(report, step.time);
    if (snapshot == nullptr) continue;
    bool background = false;
    double slowdown = 0;
    for (const GpuSnapshot& g : snapshot->gpus) {
      if (!OnGpu(job, g.index)) continue;
      for (const TaskSnapshot& t : g.tasks) {
        background = background || t.role == "Background";
        if (t.job == job.name) slowdown = std::max(slowdown, t.foreground_slowdown);
      }
    }
    if (!background) alone.push_back(step.line.iteration_seconds);
    if (slowdown > 0) corrected.push_back(step.line.iteration_seconds / slowdown);
  }
  if (alone.size() >= 5) {
    return SoloEstimate{*Median(alone), "the median of the steps with no background beside it"};
  }
  if (std::optional<double> m = Median(corrected)) {
    return SoloEstimate{*m, "the median of iteration time / the agent's measured slowdown"};
  }
  if (std::optional<double> m = MedianIterationSeconds(job)) {
    return SoloEstimate{*m, "the median iteration time (the agent measured no slowdown)"};
  }
  return std::nullopt;
}

std::string SloChart(const RunReport& report, std::size_t index, std::string id) {
  const JobReport& job = report.jobs[index];
  LineChart c;
  c.id = std::move(id);
  c.title = absl::StrCat("Foreground ", job.name, ": iteration time against its SLO");
  c.x = TimeAxis();
  c.y = {"iteration time", Unit::kSeconds, false, true};
  c.right = {"background samples/s", Unit::kPlain, false, true};
  Series steps = StepSeries(job, static_cast<int>(index),
                            [](const ReportStep& s) { return s.line.iteration_seconds; });
  steps.name = absl::StrCat(job.name, " iteration time");
  steps.mark = Mark::kDots;
  std::string bound = "It has no SLO (spec.collocation.maxForegroundSlowdown).";
  const std::optional<SoloEstimate> solo = SoloIteration(report, job);
  if (job.max_foreground_slowdown > 0 && solo.has_value() && !job.steps_trained.empty()) {
    const double limit = job.max_foreground_slowdown * solo->seconds;
    c.series.push_back(
        {absl::StrFormat("SLO bound: %.2fx solo %s", job.max_foreground_slowdown,
                         FormatValue(solo->seconds, Unit::kSeconds)),
         {{job.steps_trained.front().time, limit}, {job.steps_trained.back().time, limit}},
         Mark::kDashed,
         3});
    bound = absl::StrCat("The dashed line is the iteration time its SLO allows: ",
                         absl::StrFormat("%.2f", job.max_foreground_slowdown),
                         " times its solo iteration time, estimated as ", solo->how, ".");
  }
  c.series.insert(c.series.begin(), std::move(steps));
  bool background = false;
  for (std::size_t i = 0; i < report.jobs.size(); ++i) {
    const JobReport& other = report.jobs[i];
    if (IsForeground(other) || !SharesGpu(job, other)) continue;
    background = true;
    Series bg = StepSeries(other, static_cast<int>(i),
                           [](const ReportStep& s) { return s.line.samples_per_second; });
    bg.name = absl::StrCat(other.name, " samples/s");
    bg.right = true;
    c.series.push_back(std::move(bg));
  }
  c.note =
      absl::StrCat("Each dot is a step of ", job.name, ". ", bound,
                   background ? " Right axis: the samples/s of the background jobs on its GPUs."
                              : " No background job shared its GPUs.");
  c.empty = absl::StrCat(job.name, " trained no step.");
  return RenderLineChart(c);
}

}  // namespace

std::string ChartId(std::string_view name) {
  std::string id;
  for (char ch : name) {
    const bool keep = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
    if (ch >= 'A' && ch <= 'Z') {
      id += static_cast<char>(ch - 'A' + 'a');
    } else if (keep) {
      id += ch;
    } else if (!id.empty() && id.back() != '-') {
      id += '-';
    }
  }
  while (!id.empty() && id.back() == '-') id.pop_back();
  return id.empty() ? "job" : id;
}

std::optional<double> MedianIterationSeconds(const JobReport& job) {
  std::vector<double> values;
  for (const ReportStep& s : job.steps_trained) values.push_back(s.line.iteration_seconds);
  return Median(std::move(values));
}

std::optional<double> MedianSamplesPerSecond(const JobReport& job) {
  std::vector<double> values;
  for (const ReportStep& s : job.steps_trained) values.push_back(s.line.samples_per_second);
  return Median(std::move(values));
}

std::optional<std::uint64_t> PeakAllocatedBytes(const RunReport& report, const JobReport& job) {
  std::optional<std::uint64_t> peak;
  for (const MemorySeries& m : report.memory) {
    if (m.job != job.name) continue;
    for (const MemoryReading& r : m.readings) peak = std::max(peak.value_or(0), r.allocated_bytes);
  }
  return peak;
}

std::vector<std::string> RenderReportCharts(const RunReport& report) {
  std::vector<std::string> charts = {LossChart(report), ThroughputChart(report)};
  // The GPUs the jobs were given (a machine's other GPUs have nothing to show).
  std::set<std::uint32_t> gpus;
  for (const JobReport& job : report.jobs) gpus.insert(job.gpus.begin(), job.gpus.end());
  for (const MemorySeries& m : report.memory) gpus.insert(m.gpu);
  for (std::uint32_t g : gpus) {
    charts.push_back(MemoryChart(report, g));
    charts.push_back(MemoryWaveChart(report, g));
  }
  std::set<std::string> ids;
  for (std::size_t i = 0; i < report.jobs.size(); ++i) {
    if (!IsForeground(report.jobs[i])) continue;
    std::string id = absl::StrCat("slo-", ChartId(report.jobs[i].name));
    if (!ids.insert(id).second) id = absl::StrCat(id, "-", i);  // names that differ in symbols
    charts.push_back(SloChart(report, i, id));
  }
  for (std::string& chart : RenderAgentCharts(report)) charts.push_back(std::move(chart));
  return charts;
}

}  // namespace wavepool::local
