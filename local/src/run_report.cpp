#include "run_report.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "wavepool/base/atomic_file.h"

namespace wavepool::local {
namespace {

using nlohmann::json;

template <typename T>
json Optional(const std::optional<T>& value) {
  return value.has_value() ? json(*value) : json(nullptr);
}

json StepJson(const ReportStep& s) {
  return {{"time", s.time},
          {"step", s.line.step},
          {"loss", s.line.loss},
          {"samplesPerSecond", s.line.samples_per_second},
          {"iterationSeconds", s.line.iteration_seconds},
          {"computeSeconds", s.line.compute_seconds},
          {"transferSeconds", s.line.transfer_seconds},
          {"allReduceSeconds", s.line.allreduce_seconds},
          {"dataSeconds", s.line.data_seconds},
          {"wave", s.line.wave}};
}

json JobJson(const JobReport& j) {
  json steps = json::array();
  for (const ReportStep& s : j.steps_trained) steps.push_back(StepJson(s));
  json exits = json::object();
  for (const auto& [rank, code] : j.exit_codes) exits[std::to_string(rank)] = code;
  return {{"name", j.name},
          {"manifest", j.manifest},
          {"role", j.role},
          {"model", j.model},
          {"strategy", j.strategy},
          {"gpus", j.gpus},
          {"steps", j.steps},
          {"maxForegroundSlowdown", j.max_foreground_slowdown},
          {"plan",
           {{"device", j.device},
            {"iterationSeconds", j.predicted_iteration_seconds},
            {"samplesPerSecond", j.predicted_samples_per_second},
            {"memoryPerGpuBytes", j.predicted_memory_per_gpu_bytes}}},
          {"state", j.state},
          {"exitCodes", exits},
          {"reason", j.reason},
          {"resumedFrom", j.resumed_from},
          {"stepsTrained", steps}};
}

json SnapshotJson(const AgentSnapshot& snapshot) {
  json gpus = json::array();
  for (const GpuSnapshot& g : snapshot.gpus) {
    json tasks = json::array();
    for (const TaskSnapshot& t : g.tasks) {
      tasks.push_back({{"job", t.job},
                       {"role", t.role},
                       {"pid", t.pid},
                       {"creditLimit", t.credit_limit},
                       {"foregroundSlowdown", t.foreground_slowdown},
                       {"sensitiveOpGroups", t.sensitive_op_groups},
                       {"recommendedBatchSize", t.recommended_batch_size},
                       {"launchWaitSeconds", t.launch_wait_seconds},
                       {"launchPausedSeconds", t.launch_paused_seconds}});
    }
    gpus.push_back({{"index", g.index},
                    {"backgroundHeld", g.background_held},
                    {"wavePeakBytes", Optional(g.wave_peak_bytes)},
                    {"waveTroughBytes", Optional(g.wave_trough_bytes)},
                    {"wavePeriodSeconds", Optional(g.wave_period_seconds)},
                    {"phaseOffsetSeconds", Optional(g.phase_offset_seconds)},
                    {"phaseOffsetRatio", Optional(g.phase_offset_ratio)},
                    {"tasks", tasks}});
  }
  return {{"time", snapshot.time}, {"gpus", gpus}};
}

// Columns rather than one object per reading: a series holds up to kMaxMemoryReadings.
json MemoryJson(const MemorySeries& m) {
  json time = json::array(), allocated = json::array(), reserved = json::array();
  for (const MemoryReading& r : m.readings) {
    time.push_back(r.time);
    allocated.push_back(r.allocated_bytes);
    reserved.push_back(r.reserved_bytes);
  }
  return {{"job", m.job},
          {"role", m.role},
          {"gpu", m.gpu},
          {"pid", m.pid},
          {"keptEvery", m.keep_every},
          {"time", time},
          {"allocatedBytes", allocated},
          {"reservedBytes", reserved}};
}

}  // namespace

void AddReading(MemorySeries& series, const MemoryReading& reading) {
  if (series.offered++ % series.keep_every != 0) return;
  series.readings.push_back(reading);
  if (series.readings.size() < kMaxMemoryReadings) return;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < series.readings.size(); i += 2) {
    series.readings[kept++] = series.readings[i];
  }
  series.readings.resize(kept);
  series.keep_every *= 2;
}

json ToJson(const RunReport& report) {
  json jobs = json::array();
  for (const JobReport& j : report.jobs) jobs.push_back(JobJson(j));
  json agent = json::array();
  for (const AgentSnapshot& s : report.agent) agent.push_back(SnapshotJson(s));
  json memory = json::array();
  for (const MemorySeries& m : report.memory) memory.push_back(MemoryJson(m));
  json notes = json::array();
  for (const Note& n : report.notes) notes.push_back({{"time", n.time}, {"text", n.text}});
  return {{"kind", "LocalRunReport"},
          {"version", kReportVersion},
          {"startedAt", report.started_at},
          {"elapsedSeconds", report.elapsed_seconds},
          {"interrupted", report.interrupted},
          {"gpus", report.gpus},
          {"devices", report.devices},
          {"data", report.data},
          {"jobs", jobs},
          {"agent", agent},
          {"memory", memory},
          {"notes", notes}};
}

absl::Status WriteReport(const RunReport& report, const std::string& path) {
  return WriteFileAtomically(path, ToJson(report).dump(1) + "\n");
}

}  // namespace wavepool::local
