// report.json of a local run (docs/local-mode.md, "The report"): every job with its plan and every
// step it trained, and the node agent's view of every GPU and task, sampled a few times a second.
// Plain values; ToJson writes every field.
#ifndef WAVEPOOL_LOCAL_SRC_RUN_REPORT_H_
#define WAVEPOOL_LOCAL_SRC_RUN_REPORT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "progress.h"

namespace wavepool::local {

inline constexpr int kReportVersion = 1;

struct ReportStep {
  double time = 0;  // seconds since the run started, when rank 0 printed the step
  StepLine line;
};

struct JobReport {
  std::string name;  // namespace/name
  std::string manifest;
  std::string role;  // Foreground, Background
  std::string model;
  std::string strategy;
  std::vector<std::uint32_t> gpus;  // by rank
  std::int64_t steps = 0;
  double max_foreground_slowdown = 0;  // foreground: the SLO
  double predicted_iteration_seconds = 0;
  double predicted_samples_per_second = 0;
  std::int64_t predicted_memory_per_gpu_bytes = 0;
  std::string device;              // what the plan predicts for
  std::string state = "Pending";   // Succeeded, Failed, Interrupted
  std::map<int, int> exit_codes;   // by rank
  std::string reason;              // why it failed or stopped
  std::int64_t resumed_from = -1;  // the checkpoint's step when it resumed
  std::vector<ReportStep> steps_trained;
};

struct TaskSnapshot {
  std::string job;  // namespace/name
  std::string role;
  std::int32_t pid = 0;  // the worker process
  std::uint32_t credit_limit = 0;
  double foreground_slowdown = 0;  // foreground
  std::size_t sensitive_op_groups = 0;
  std::uint32_t recommended_batch_size = 0;  // background
  // The launch gate's totals since the task registered, in seconds: waiting for a launch credit
  // (pacing), and the part of it waiting while the foreground held the pause.
  double launch_wait_seconds = 0;
  double launch_paused_seconds = 0;
};

struct GpuSnapshot {
  std::uint32_t index = 0;
  bool background_held = false;  // the foreground holds the pause
  std::optional<std::uint64_t> wave_peak_bytes, wave_trough_bytes;
  std::optional<double> wave_period_seconds;
  std::optional<double> phase_offset_seconds;  // tick-tock
  std::optional<double> phase_offset_ratio;    // that over the waves' period (0.5 is Wavelet's aim)
  std::vector<TaskSnapshot> tasks;
};

struct AgentSnapshot {
  double time = 0;
  std::vector<GpuSnapshot> gpus;
};

// One allocator sample a worker reported to the agent (the memory it holds on its GPU).
struct MemoryReading {
  double time = 0;  // seconds since the run started
  std::uint64_t allocated_bytes = 0;
  std::uint64_t reserved_bytes = 0;
};

// The allocator samples of one worker (one task of the agent), as often as the worker reports
// them (up to 200 a second): enough to draw its memory waves.
struct MemorySeries {
  std::string job;  // namespace/name
  std::string role;
  std::uint32_t gpu = 0;
  std::int32_t pid = 0;
  std::vector<MemoryReading> readings;  // time ascending
  // A long run keeps every keep_every-th reading, so that a series stays under
  // kMaxMemoryReadings: each time it would pass it, every other reading is dropped and
  // keep_every doubles.
  std::uint32_t keep_every = 1;
  std::uint64_t offered = 0;  // readings passed to AddReading
};

inline constexpr std::size_t kMaxMemoryReadings = 50000;

// Appends `reading` to `series`, thinning as described above.
void AddReading(MemorySeries& series, const MemoryReading& reading);

struct Note {
  double time = 0;
  std::string text;
};

struct RunReport {
  std::string started_at;  // RFC 3339, UTC
  double elapsed_seconds = 0;
  bool interrupted = false;
  std::uint32_t gpus = 0;
  std::string devices;  // the agent's description of them
  std::string data;
  std::vector<JobReport> jobs;
  std::vector<AgentSnapshot> agent;
  std::vector<MemorySeries> memory;  // every worker's, in the order they registered
  std::vector<Note> notes;           // warnings and what the run printed besides progress
};

nlohmann::json ToJson(const RunReport& report);

// Writes `report` to `path` through a temporary file and a rename.
absl::Status WriteReport(const RunReport& report, const std::string& path);

}  // namespace wavepool::local

#endif  // WAVEPOOL_LOCAL_SRC_RUN_REPORT_H_
