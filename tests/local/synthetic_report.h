// A RunReport built by hand, with known numbers, for the tests of report.html: a tick-tock
// foreground job and a background job sharing GPU 0, a foreground job with no SLO alone on GPU 1.
#ifndef WAVEPOOL_TESTS_LOCAL_SYNTHETIC_REPORT_H_
#define WAVEPOOL_TESTS_LOCAL_SYNTHETIC_REPORT_H_

#include <cmath>
#include <string>

#include "run_report.h"

namespace wavepool::local {

inline constexpr double kSoloIterationSeconds = 0.020;  // the foreground's steps alone
inline constexpr double kSharedIterationSeconds = 0.023;
inline constexpr double kBackgroundStart = 2.0;  // the background registers (seconds)
inline constexpr std::uint64_t kMiB = 1 << 20;

inline JobReport SyntheticJob(std::string name, std::string role, std::string strategy,
                              std::uint32_t gpu, double slo) {
  JobReport j;
  j.name = std::move(name);
  j.manifest = "jobs.yaml";
  j.role = std::move(role);
  j.model = "cnn_tiny";
  j.strategy = std::move(strategy);
  j.gpus = {gpu};
  j.steps = 200;
  j.max_foreground_slowdown = slo;
  j.predicted_iteration_seconds = 0.001;
  j.predicted_samples_per_second = 64000;
  j.predicted_memory_per_gpu_bytes = 8 * kMiB;
  j.device = "a100-40gb";
  j.state = "Succeeded";
  return j;
}

// Steps every 20 ms from t = 1 s; the foreground is alone (and at its solo speed) until the
// background registers at kBackgroundStart.
inline void AddSteps(JobReport& j, int count, double start) {
  for (int k = 0; k < count; ++k) {
    ReportStep s;
    s.time = start + 0.02 * k;
    s.line.step = k + 1;
    s.line.steps = j.steps;
    s.line.loss = 2.3 * std::exp(-0.01 * k);
    const bool alone = j.role == "Foreground" && s.time < kBackgroundStart;
    s.line.iteration_seconds = j.role == "Background" ? 0.005
                               : alone                ? kSoloIterationSeconds
                                                      : kSharedIterationSeconds;
    s.line.samples_per_second = 32 / s.line.iteration_seconds;
    s.line.compute_seconds = s.line.iteration_seconds;
    if (j.strategy == "TickTock") s.line.wave = k % 2 == 0 ? "tick" : "tock";
    j.steps_trained.push_back(s);
  }
}

inline TaskSnapshot SyntheticTask(const std::string& job, const std::string& role, int pid,
                                  double t) {
  TaskSnapshot task;
  task.job = job;
  task.role = role;
  task.pid = pid;
  task.credit_limit = role == "Foreground" ? 2 : 1;
  task.foreground_slowdown = role == "Foreground" ? 1.0 + 0.05 * (t > kBackgroundStart) : 1;
  task.sensitive_op_groups = role == "Foreground" ? static_cast<std::size_t>(t) : 0;
  task.recommended_batch_size = role == "Background" && t > 4 ? 32 : 0;
  task.launch_wait_seconds = role == "Background" ? 0.1 * (t - kBackgroundStart) : 0.001 * t;
  task.launch_paused_seconds = role == "Background" ? 0.05 * (t - kBackgroundStart) : 0;
  return task;
}

inline AgentSnapshot SyntheticSnapshot(const RunReport& r, double t) {
  AgentSnapshot snapshot;
  snapshot.time = t;
  GpuSnapshot shared;
  shared.index = 0;
  shared.background_held = t >= 3 && t < 4;
  if (t >= 4) {
    shared.wave_peak_bytes = 9 * kMiB;
    shared.wave_trough_bytes = 1 * kMiB;
    shared.wave_period_seconds = 0.04;
  }
  shared.tasks.push_back(SyntheticTask(r.jobs[0].name, "Foreground", 100, t));
  if (t >= kBackgroundStart)
    shared.tasks.push_back(SyntheticTask(r.jobs[1].name, "Background", 101, t));
  GpuSnapshot alone;
  alone.index = 1;
  alone.tasks.push_back(SyntheticTask(r.jobs[2].name, "Foreground", 102, t));
  snapshot.gpus = {shared, alone};
  return snapshot;
}

// A worker's allocator: a saw-tooth wave of `period` between `low` and `high` bytes, sampled
// every 5 ms from `start` to `end`.
inline MemorySeries SyntheticMemory(const JobReport& j, int pid, double start, double end,
                                    double period, std::uint64_t low, std::uint64_t high) {
  MemorySeries m;
  m.job = j.name;
  m.role = j.role;
  m.gpu = j.gpus.front();
  m.pid = pid;
  for (double t = start; t < end; t += 0.005) {
    const double phase = std::fmod(t - start, period) / period;
    const double rising = phase < 0.5 ? 2 * phase : 2 * (1 - phase);
    const auto bytes = static_cast<std::uint64_t>(static_cast<double>(low) +
                                                  rising * static_cast<double>(high - low));
    AddReading(m, {t, bytes, bytes + kMiB});
  }
  return m;
}

inline RunReport SyntheticReport() {
  RunReport r;
  r.started_at = "2026-01-02T03:04:05Z";
  r.elapsed_seconds = 8;
  r.gpus = 2;
  r.devices = "simulated, 2 GPUs (seed 1)";
  r.data = "synthetic";
  r.jobs = {SyntheticJob("team-a/train", "Foreground", "TickTock", 0, 1.2),
            SyntheticJob("team-a/sweep", "Background", "DataParallel", 0, 0),
            SyntheticJob("team-b/solo", "Foreground", "DataParallel", 1, 0)};
  AddSteps(r.jobs[0], 200, 1.0);
  AddSteps(r.jobs[1], 200, kBackgroundStart);
  AddSteps(r.jobs[2], 100, 1.0);
  for (double t = 1.0; t <= 6.0; t += 0.25) r.agent.push_back(SyntheticSnapshot(r, t));
  r.memory = {SyntheticMemory(r.jobs[0], 100, 1.0, 5.0, 0.04, 1 * kMiB, 9 * kMiB),
              SyntheticMemory(r.jobs[1], 101, kBackgroundStart, 6.0, 0.01, 256 << 10, 320 << 10),
              SyntheticMemory(r.jobs[2], 102, 1.0, 3.0, 0.02, 2 * kMiB, 4 * kMiB)};
  r.notes = {{2.5, "team-a/sweep: resumed from /ckpt at step 3"}};
  return r;
}

// The same report with markup, quotes and ampersands in every string a manifest or a worker
// could have put there.
inline RunReport HostileReport() {
  RunReport r = SyntheticReport();
  const std::string evil = "team-a/x<script>window.pwned=1</script>";
  for (AgentSnapshot& s : r.agent) {
    for (GpuSnapshot& g : s.gpus) {
      for (TaskSnapshot& t : g.tasks) {
        if (t.job == r.jobs[0].name) t.job = evil;
      }
    }
  }
  for (MemorySeries& m : r.memory) {
    if (m.job == r.jobs[0].name) m.job = evil;
  }
  r.jobs[0].name = evil;
  r.jobs[0].manifest = "a&b'\"<x>.yaml";
  r.jobs[0].model = "m\"><img id=\"pwned\" src=\"x\">";
  r.jobs[1].reason = "</table><b id=\"pwned\">boom</b>";
  r.jobs[1].state = "Failed";
  r.devices = "<svg onload=\"window.pwned=1\">";
  r.data = "cifar10:/d&<i>";
  r.notes.push_back({3, "<img id=\"pwned\" src=\"https://example.com/x.png\">"});
  return r;
}

}  // namespace wavepool::local

#endif  // WAVEPOOL_TESTS_LOCAL_SYNTHETIC_REPORT_H_
