// The wavepool-worker processes of one local job: started with the environment the controller
// gives a pod, rank 0's progress read line by line, every rank's stderr kept in a log file.
#ifndef WAVEPOOL_LOCAL_SRC_JOB_PROCESSES_H_
#define WAVEPOOL_LOCAL_SRC_JOB_PROCESSES_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "local_jobs.h"

namespace wavepool::local {

// What every worker of a run shares.
struct WorkerSettings {
  std::string binary;
  std::string agent_dir;
  std::string data;
  std::string checkpoint_root;
  std::string log_dir;
  int threads = 0;
  // The agent's GPUs are this machine's (NVML): each worker trains on its GPU. Otherwise they are
  // simulated and the workers train on the CPU.
  bool machine_gpus = false;
  // Called with each worker's pid and environment after its fork and before it runs (so that the
  // agent knows who it is before it can connect), and with its pid once it was reaped.
  std::function<void(pid_t, const std::map<std::string, std::string>&)> on_started;
  std::function<void(pid_t)> on_reaped;
};

// Where a worker of GPU `gpu` trains: the CPU under simulated GPUs; with the machine's own, that
// GPU, numbered as NVML numbers it (CUDA follows NVML's PCI bus order under
// CUDA_DEVICE_ORDER=PCI_BUS_ID). The worker's WAVEPOOL_DEVICE and what CUDA needs for it.
std::map<std::string, std::string> WorkerDeviceEnvironment(bool machine_gpus, std::uint32_t gpu);

// Thread-compatible: one thread starts, polls and signals.
class JobProcesses {
 public:
  JobProcesses(const LocalJob& job, std::string plan_path);
  ~JobProcesses();  // kills and reaps workers still running
  JobProcesses(const JobProcesses&) = delete;
  JobProcesses& operator=(const JobProcesses&) = delete;

  // Starts every rank; the ranks meet on a free loopback port. Internal when a fork fails.
  absl::Status Start(const WorkerSettings& settings);
  // Whether Start forked a worker; a job not started has no worker running and none exited.
  bool started() const { return !pids_.empty(); }
  // Every started worker's pid, by rank (the agent lists a registered worker by its pid).
  const std::vector<pid_t>& pids() const { return pids_; }

  // Complete lines rank 0 printed since the last call (without newlines); never blocks.
  std::vector<std::string> ReadLines();
  // rank 0's stdout, for poll(2); -1 once it is closed.
  int output_fd() const { return output_fd_; }

  // Reaps the workers that exited; true when every one has.
  bool Reap();
  bool running() const;
  // Every rank's exit status (128 + signal when killed), by rank, once reaped.
  const std::map<int, int>& exits() const { return exits_; }
  // The last line a failed rank wrote to stderr: "rank 1: wavepool-worker rank 1: error: ...".
  std::string FailureReason() const;

  void Signal(int signal);
  const LocalJob& job() const { return job_; }

 private:
  std::map<std::string, std::string> Environment(const WorkerSettings& settings, int rank,
                                                 int port) const;

  const LocalJob& job_;
  const std::string plan_path_;
  std::string log_dir_;
  std::vector<pid_t> pids_;  // by rank
  std::map<int, int> exits_;
  int output_fd_ = -1;
  std::string pending_;  // a partial line of rank 0's output
  std::function<void(pid_t)> on_reaped_;
};

}  // namespace wavepool::local

#endif  // WAVEPOOL_LOCAL_SRC_JOB_PROCESSES_H_
