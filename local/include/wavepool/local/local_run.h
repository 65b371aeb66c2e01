// Local mode (`wavepool run`): the manifests a user would `kubectl apply`, trained on this machine
// with no cluster. Every job is validated and planned as the controller would (api, JobPlanner),
// given GPUs of an in-process node agent (simulated GPUs by default), and run as wavepool-worker
// processes that meet over loopback; a foreground and a background job given together share
// their GPUs under the agent's gate, so pacing, pause and the slowdown feedback loop act for real.
// Progress is shown live; a report (report.json) records every step, the agent's view of every
// task and GPU, and the plan next to what was measured.
//
// Thread safety: RunLocally is called once per process (it installs SIGINT/SIGTERM handlers).
#ifndef WAVEPOOL_LOCAL_LOCAL_RUN_H_
#define WAVEPOOL_LOCAL_LOCAL_RUN_H_

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "wavepool/base/clock.h"

namespace wavepool::local {

struct RunOptions {
  std::vector<std::string> manifests;  // YAML or JSON files of TrainingJobs
  // Where report.json and the workers' logs go; empty: ./wavepool-run-<first job>-<time>.
  std::string out_dir;
  // Checkpoints live in <checkpoint_root>/<namespace>-<name>: running the same command again
  // resumes every job from its last checkpoint. `fresh` deletes them first.
  std::string checkpoint_root = "wavepool-checkpoints";
  bool fresh = false;
  // The agent's GPUs: "simulated", "simulated:N", "nvml" (this machine's, through NVML) or "auto"
  // (NVML when it finds a GPU, else simulated). Under simulated GPUs the workers train on the
  // CPU; under NVML's each worker trains on its GPU (a LibTorch with CUDA is needed).
  std::string devices = "simulated";
  // GPUs to use; 0: simulated, as many as the foreground jobs need (>= 1); NVML, all of them.
  std::uint32_t gpus = 0;
  std::string device = "a100";  // what the planner plans for (the predictions in the report)
  std::string data = "synthetic";
  std::string worker_binary;            // empty: wavepool-worker next to the running program
  int metrics_port = -1;                // the in-process agent's /metrics on 127.0.0.1; -1: none
  int threads = 0;                      // intra-op threads per worker; 0: LibTorch's default
  bool tty = false;                     // live bars instead of timestamped lines
  std::chrono::seconds stop_grace{60};  // after SIGINT/SIGTERM, before the workers are killed
  // What the run reads the time from: the in-process agent and its simulated GPUs, progress
  // pacing and timestamps, the report's times and the default --out name. Null: the real clock.
  // The workers are other processes and always read the real one. Borrowed: must outlive the run.
  Clock* clock = nullptr;
};

// Exit status of `wavepool run`: 0 every job succeeded; 1 a job failed (named on `err`); 2 bad
// options or manifests (named); 130 interrupted (the workers checkpointed; run again to resume).
int RunLocally(const RunOptions& options, std::ostream& out, std::ostream& err);

}  // namespace wavepool::local

#endif  // WAVEPOOL_LOCAL_LOCAL_RUN_H_
