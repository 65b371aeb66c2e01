#include "report_agent_charts.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "report_charts.h"
#include "svg_chart.h"

namespace wavepool::local {
namespace {

Axis TimeAxis() { return {"seconds since the run started", Unit::kPlain, false, false}; }

// One worker as the agent saw it over the run: its task in every snapshot that has it.
struct TaskTrack {
  std::string job;
  std::string role;
  std::uint32_t gpu = 0;
  std::vector<std::pair<double, const TaskSnapshot*>> points;  // snapshot time, task

  std::string Name() const { return absl::StrCat(job, " on GPU ", gpu); }
};

// Every task of the snapshots, in the order they first appear, keyed by worker (GPU, pid).
std::vector<TaskTrack> Tracks(const RunReport& report) {
  std::vector<TaskTrack> tracks;
  std::map<std::pair<std::uint32_t, std::int32_t>, std::size_t> index;
  for (const AgentSnapshot& snapshot : report.agent) {
    for (const GpuSnapshot& g : snapshot.gpus) {
      for (const TaskSnapshot& t : g.tasks) {
        auto [it, added] = index.try_emplace({g.index, t.pid}, tracks.size());
        if (added) tracks.push_back({t.job, t.role, g.index, {}});
        tracks[it->second].points.push_back({snapshot.time, &t});
      }
    }
  }
  return tracks;
}

template <typename Field>
std::vector<std::pair<double, double>> Points(const TaskTrack& track, Field field) {
  std::vector<std::pair<double, double>> points;
  for (const auto& [time, task] : track.points) points.push_back({time, field(*task)});
  return points;
}

const JobReport* FindJob(const RunReport& report, const std::string& name) {
  for (const JobReport& job : report.jobs) {
    if (job.name == name) return &job;
  }
  return nullptr;
}

std::string SlowdownChart(const RunReport& report, const std::vector<TaskTrack>& tracks) {
  LineChart c;
  c.id = "slowdown";
  c.title = "Foreground slowdown measured by the agent";
  c.note =
      "How much slower each foreground worker's op groups ran than alone, as the agent's "
      "feedback loop measures it (agent[].gpus[].tasks[].foregroundSlowdown); dashed: the job's "
      "SLO (spec.collocation.maxForegroundSlowdown).";
  c.x = TimeAxis();
  c.y = {"slowdown", Unit::kRatio, false, false};
  std::map<std::string, bool> slo_drawn;
  int color = 0;
  for (const TaskTrack& track : tracks) {
    if (track.role != "Foreground" || track.points.empty()) continue;
    c.series.push_back({track.Name(),
                        Points(track, [](const TaskSnapshot& t) { return t.foreground_slowdown; }),
                        Mark::kLine, color});
    const JobReport* job = FindJob(report, track.job);
    if (job != nullptr && job->max_foreground_slowdown > 0 &&
        slo_drawn.emplace(track.job, true).second) {
      const double slo = job->max_foreground_slowdown;
      c.series.push_back({absl::StrFormat("%s SLO (%.2fx)", track.job, slo),
                          {{report.agent.front().time, slo}, {report.agent.back().time, slo}},
                          Mark::kDashed,
                          color});
    }
    ++color;
  }
  c.empty = "The agent watched no foreground worker.";
  return RenderLineChart(c);
}

// When the foreground held the background on each GPU (DeepPool §5: background launches stop
// while the foreground runs op groups they slow): runs of snapshots that say so.
std::vector<Band> HeldBands(const RunReport& report) {
  std::vector<Band> bands;
  std::map<std::uint32_t, double> held_since;
  for (const AgentSnapshot& snapshot : report.agent) {
    for (const GpuSnapshot& g : snapshot.gpus) {
      auto it = held_since.find(g.index);
      if (g.background_held && it == held_since.end()) held_since[g.index] = snapshot.time;
      if (!g.background_held && it != held_since.end()) {
        bands.push_back({it->second, snapshot.time, static_cast<int>(g.index) + 5,
                         absl::StrCat("GPU ", g.index, ": background held")});
        held_since.erase(it);
      }
    }
  }
  for (const auto& [gpu, since] : held_since) {
    bands.push_back({since, report.agent.back().time, static_cast<int>(gpu) + 5,
                     absl::StrCat("GPU ", gpu, ": background held")});
  }
  return bands;
}

std::string PacingChart(const RunReport& report, const std::vector<TaskTrack>& tracks) {
  LineChart c;
  c.id = "pacing";
  c.title = "Pause and pacing";
  c.note =
      "The time each worker has waited for a launch credit since it started (the agent's "
      "pacing: a background worker gets one credit, a foreground worker a few) and, dashed, the "
      "part a background worker spent paused while the foreground ran op groups it slows. "
      "Shaded: the snapshots in which the foreground held the background on a GPU.";
  c.x = TimeAxis();
  c.y = {"seconds waited (cumulative)", Unit::kSeconds, false, true};
  int color = 0;
  for (const TaskTrack& track : tracks) {
    c.series.push_back({absl::StrCat(track.Name(), ": waiting for credits"),
                        Points(track, [](const TaskSnapshot& t) { return t.launch_wait_seconds; }),
                        Mark::kLine, color});
    if (track.role == "Background") {
      c.series.push_back(
          {absl::StrCat(track.Name(), ": of which paused"),
           Points(track, [](const TaskSnapshot& t) { return t.launch_paused_seconds; }),
           Mark::kDashed, color});
    }
    ++color;
  }
  if (!report.agent.empty()) c.bands = HeldBands(report);
  c.empty = "The agent had no worker registered.";
  return RenderLineChart(c);
}

std::string DecisionsChart(const std::vector<TaskTrack>& tracks) {
  LineChart c;
  c.id = "decisions";
  c.title = "The agent's decisions";
  c.note =
      "Launch credits the agent allows each worker, the op groups it marked sensitive for each "
      "foreground worker (dashed; the foreground pauses the background while it runs them) and "
      "the batch size it recommends to each background worker (right axis; 0: keep).";
  c.x = TimeAxis();
  c.y = {"credits, op groups", Unit::kPlain, false, true};
  c.right = {"recommended batch size", Unit::kPlain, false, true};
  int color = 0;
  for (const TaskTrack& track : tracks) {
    c.series.push_back(
        {absl::StrCat(track.Name(), ": credit limit"),
         Points(track, [](const TaskSnapshot& t) { return static_cast<double>(t.credit_limit); }),
         Mark::kStep, color});
    if (track.role == "Foreground") {
      c.series.push_back(
          {absl::StrCat(track.Name(), ": sensitive op groups"),
           Points(track,
                  [](const TaskSnapshot& t) { return static_cast<double>(t.sensitive_op_groups); }),
           Mark::kDashed, color});
    } else {
      c.series.push_back({absl::StrCat(track.Name(), ": recommended batch size"),
                          Points(track,
                                 [](const TaskSnapshot& t) {
                                   return static_cast<double>(t.recommended_batch_size);
                                 }),
                          Mark::kStep, color, true});
    }
    ++color;
  }
  c.empty = "The agent had no worker registered.";
  return RenderLineChart(c);
}

std::string PlanChart(const RunReport& report) {
  BarChart c;
  c.id = "plan";
  c.title = "The plan next to what was measured: iteration time";
  c.measures = {"predicted by the plan", "measured (median step)"};
  double lo = INFINITY, hi = 0;
  std::string devices;
  for (const JobReport& job : report.jobs) {
    const double measured = MedianIterationSeconds(job).value_or(NAN);
    c.groups.push_back({job.name, {job.predicted_iteration_seconds, measured}});
    for (double v : {job.predicted_iteration_seconds, measured}) {
      if (!std::isfinite(v) || v <= 0) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    if (devices.find(job.device) == std::string::npos) {
      absl::StrAppend(&devices, devices.empty() ? "" : ", ", job.device);
    }
  }
  // Predictions are for the plan's device and local mode computes on this machine's CPU: the
  // two can be orders of magnitude apart, which a linear axis would hide.
  const bool log = hi > 0 && hi / lo > 20;
  c.value = {log ? "iteration time (log scale)" : "iteration time", Unit::kSeconds, log, !log};
  c.note = absl::StrCat(
      "Each job's predicted iteration time (its plan, for ", devices.empty() ? "-" : devices,
      ") and the median of the iteration times its steps took here. Local mode computes on this "
      "machine's CPU, so the two differ by the speed of the CPU against that device.");
  c.empty = "No job had a prediction or a step.";
  return RenderBarChart(c);
}

}  // namespace

std::vector<std::string> RenderAgentCharts(const RunReport& report) {
  const std::vector<TaskTrack> tracks = Tracks(report);
  return {SlowdownChart(report, tracks), PacingChart(report, tracks), DecisionsChart(tracks),
          PlanChart(report)};
}

}  // namespace wavepool::local
