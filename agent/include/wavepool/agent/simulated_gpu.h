// A deterministic model of a node's GPUs running foreground and background op groups, for tests
// and local mode. Time comes from a Clock (tests advance a SimulatedClock); the model answers
// when each submitted op group completes, how much memory each GPU uses over time, and each
// role's utilisation and SM occupancy over a window. It also is a GpuDevices, so the agent's
// telemetry runs on it unchanged.
//
// Execution model. Each task (one worker process) has one FIFO stream on its GPU: its op groups
// run one after another, each starting when it is submitted or when the task's previous group
// completes. A group has a solo duration (how long it takes alone on the GPU), an intensity
// (the share of the SMs its kernels occupy, 0..1) and a kernel duration (how long one of its
// kernels holds its SMs; the group's blocks are not preemptible). While groups overlap each
// progresses at rate 1 / (crowding * (1 + slowdown)):
//   crowding  = max(1, sum of the intensities of running groups of the same role)
//               (same-role groups time-share the SMs they jointly oversubscribe);
//   fg slowdown S_f = B * (alpha * p + beta * k_b / (k_f + k_b)), where B = min(1, sum of
//               running background intensities), k_f this group's kernel duration, k_b the
//               longest running background kernel, and p = priority_factor when the foreground
//               task's stream has high priority, else 1;
//   bg slowdown S_b = gamma * F, F = min(1, sum of running foreground intensities).
// alpha is SM sharing that stream priorities mostly remove; beta is the wait for background
// blocks already resident on the SMs, which priorities cannot remove because the device
// scheduler is non-preemptive, and which matters when short foreground kernels meet long
// background ones (deeppool-burst-parallel §5, §7.3 and Figure 12). A foreground group alone
// (B = 0) runs at solo speed, and a larger B or k_b never speeds it up.
#ifndef WAVEPOOL_AGENT_SIMULATED_GPU_H_
#define WAVEPOOL_AGENT_SIMULATED_GPU_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "wavepool/agent/client/protocol.h"
#include "wavepool/agent/gpu_device.h"
#include "wavepool/base/clock.h"

namespace wavepool::agent {

// The parameters of the slowdown model above (all >= 0; priority_factor in [0, 1]).
struct InterferenceModel {
  double foreground_sharing = 0.5;   // alpha
  double foreground_blocking = 1.0;  // beta
  double priority_factor = 0.2;      // p for a high-priority foreground stream
  double background_sharing = 1.0;   // gamma
};

// S_f and S_b of the model, exposed for the policy's tests and docs.
// REQUIRES: shares in [0, 1], kernel durations > 0.
double ForegroundSlowdown(const InterferenceModel& model, double background_share,
                          std::chrono::nanoseconds foreground_kernel,
                          std::chrono::nanoseconds longest_background_kernel, bool high_priority);
double BackgroundSlowdown(const InterferenceModel& model, double foreground_share);

struct SimulatedGpuOptions {
  std::uint32_t gpus = 1;  // 1..64
  std::string name = "Simulated GPU 80GB";
  std::uint64_t memory_bytes = 80ull << 30;
  InterferenceModel interference;
  std::uint64_t seed = 1;  // UUIDs and duration jitter
  // The node the devices are on (the agent's --node-name, else its hostname). The UUIDs are
  // derived from it, the seed and the index: agents on two nodes never report the same UUID
  // (the controller withholds duplicated GPUs), and one node's UUIDs stay the same across
  // restarts.
  std::string node_name;
  // Each group's solo duration is multiplied by (1 + duration_jitter * u), u uniform in [-1, 1)
  // drawn from the seed in submission order. In [0, 1).
  double duration_jitter = 0;
  // The window over which Sample() reports utilisation, occupancy and processes.
  std::chrono::nanoseconds sample_window = std::chrono::milliseconds(100);
  // How far back Window() and MemoryUsedAt() can look.
  std::chrono::nanoseconds history = std::chrono::seconds(60);
};

struct SimulatedTask {
  Role role = Role::kForeground;
  std::int32_t pid = 0;  // reported in GpuSample::processes
  StreamPriority priority = StreamPriority::kDefault;
};

struct OpGroupSpec {
  std::chrono::nanoseconds solo_duration{0};  // >= 0
  double intensity = 1;                       // (0, 1]
  // How long one kernel holds its SMs, (0, solo_duration]; 0: the group is one kernel.
  std::chrono::nanoseconds kernel_duration{0};
};

// Ids are unique per SimulatedGpus and carry their GPU in the low 6 bits.
using SimulatedTaskId = std::uint64_t;
using OpGroupId = std::uint64_t;

// Times of one group; `start` and `completion` are projections (assuming nothing more is
// submitted) until `started` / `complete`.
struct GroupTiming {
  MonotonicTime submitted;
  MonotonicTime start;
  MonotonicTime completion;
  bool started = false;
  bool complete = false;
};

struct RoleShares {
  double foreground = 0;
  double background = 0;
};

// A GPU's activity over [from, to), time-averaged.
struct WindowStats {
  double utilization = 0;  // share of the window with at least one group running
  RoleShares busy;         // share of the window with a group of the role running
  // Share of the SMs held by each role: a running group holds its intensity, scaled down when
  // the running groups together ask for more than all SMs.
  RoleShares sm_occupancy;
  std::vector<ProcessUtilization> processes;  // each task's SM share, pid ascending, > 0 only
};

class SimulatedGpuEngine;  // one GPU's state (src/gpu/simulated_gpu_engine.h)

// Safe for concurrent use. Borrows the clock, which must outlive it. Every call first brings the
// model up to clock.Now(); calls never move the clock.
class SimulatedGpus final : public GpuDevices {
 public:
  // InvalidArgument naming the option when `options` is out of range.
  static absl::StatusOr<std::unique_ptr<SimulatedGpus>> Create(Clock& clock,
                                                               const SimulatedGpuOptions& options);
  ~SimulatedGpus() override;
  SimulatedGpus(const SimulatedGpus&) = delete;
  SimulatedGpus& operator=(const SimulatedGpus&) = delete;

  // A task on `gpu`, with no groups and no memory. NotFound for an unknown GPU.
  absl::StatusOr<SimulatedTaskId> AddTask(GpuIndex gpu, const SimulatedTask& task);
  // The task's pending groups are dropped and its memory freed (a process that exited).
  absl::Status RemoveTask(SimulatedTaskId task);

  // Queues `group` on the task's stream now. InvalidArgument for out-of-range fields.
  absl::StatusOr<OpGroupId> Submit(SimulatedTaskId task, const OpGroupSpec& group);
  // NotFound for an unknown group or one older than the history.
  absl::StatusOr<GroupTiming> Timing(OpGroupId group);
  // Sleeps on the clock until the group completes (its projection may move while others are
  // submitted, so this re-checks after each sleep).
  absl::Status WaitForCompletion(OpGroupId group);

  // The task's allocator now holds `bytes`. ResourceExhausted (state unchanged) when the GPU's
  // memory would exceed memory_bytes.
  absl::Status SetAllocatedBytes(SimulatedTaskId task, std::uint64_t bytes);
  // Memory in use on `gpu` at `time` (<= now, within the history).
  absl::StatusOr<std::uint64_t> MemoryUsedAt(GpuIndex gpu, MonotonicTime time);
  // Activity over [from, to). InvalidArgument unless from < to <= now; FailedPrecondition when
  // `from` is older than the history.
  absl::StatusOr<WindowStats> Window(GpuIndex gpu, MonotonicTime from, MonotonicTime to);

  // GpuDevices.
  const std::vector<GpuInfo>& gpus() const override { return gpus_; }
  absl::StatusOr<GpuSample> Sample(GpuIndex index) override;
  std::string Describe() const override;

 private:
  SimulatedGpus(Clock& clock, const SimulatedGpuOptions& options);
  // Brings every GPU up to clock_.Now() and returns that time.
  MonotonicTime AdvanceLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The engine of the GPU an id names (its low 6 bits); NotFound for an impossible GPU.
  absl::StatusOr<SimulatedGpuEngine*> EngineForIdLocked(std::uint64_t id, const char* what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  double NextJitterLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  Clock& clock_;
  const SimulatedGpuOptions options_;
  const MonotonicTime created_;
  std::vector<GpuInfo> gpus_;

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<SimulatedGpuEngine>> engines_ ABSL_GUARDED_BY(mu_);
  std::uint64_t next_serial_ ABSL_GUARDED_BY(mu_) = 1;  // of task and group ids
  std::uint64_t rng_state_ ABSL_GUARDED_BY(mu_);
};

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_SIMULATED_GPU_H_
