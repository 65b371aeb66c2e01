// The node agent: one per GPU node. It owns a launch gate per GPU, serves the workers' socket,
// applies the launch policy and the slowdown feedback loop, samples the GPUs, finds their memory
// waves, and exports everything as Prometheus metrics. Status() is also what the node's GPUNode
// publishes (gpunode_publisher.h).
//
// An Agent is safe for concurrent use: the socket server's threads call the SessionHandler
// methods, its own control thread samples and applies policy, and Status() may be called from
// anywhere. It borrows the clock and the command runner (both must outlive it) and owns the rest.
#ifndef WAVEPOOL_AGENT_AGENT_H_
#define WAVEPOOL_AGENT_AGENT_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "wavepool/agent/cheat_detector.h"
#include "wavepool/agent/command_runner.h"
#include "wavepool/agent/gate_segment.h"
#include "wavepool/agent/gpu_device.h"
#include "wavepool/agent/launch_policy.h"
#include "wavepool/agent/memory_wave.h"
#include "wavepool/agent/metrics.h"
#include "wavepool/agent/mps_control.h"
#include "wavepool/agent/peer_identity.h"
#include "wavepool/agent/slowdown_feedback.h"
#include "wavepool/agent/socket_server.h"
#include "wavepool/base/clock.h"

namespace wavepool::agent {

struct AgentOptions {
  // socket (agent.sock), MPS pipes (mps/<i>/); the gates are sealed memfds passed over the
  // socket, named <directory>/gpu-<i>.gate in messages only.
  std::string directory;
  std::string hostname;
  std::string version;
  bool nvml_devices = false;        // the devices are NVML's (false: simulated)
  std::uint32_t slots_per_gpu = 8;  // workers per GPU, <= kMaxSlotsPerGpu
  mode_t mode = 0660;               // of the socket
  gid_t group = static_cast<gid_t>(-1);
  PacingConfig pacing;
  FeedbackConfig feedback;
  MpsControl::Options mps;  // directory filled in from `directory` when empty
  // GPU memory sampling (memory waves need 100 Hz or more), the full telemetry (utilisation,
  // per-process SM use, SM occupancy: one NVML process query costs milliseconds of CPU, measured
  // on an H100) and the policy's control period.
  std::chrono::milliseconds sample_period{10};
  std::chrono::milliseconds telemetry_period{1000};
  std::chrono::milliseconds control_period{100};
  std::chrono::seconds wave_window{30};      // of samples the wave analysis looks at
  std::chrono::seconds wave_interval{1};     // between analyses
  std::chrono::seconds advisor_interval{1};  // between background batch checks
  int advisor_patience = 5;
  std::string metrics_address;  // "" : no HTTP endpoint (the registry still works)
  std::uint16_t metrics_port = 0;
  // Who a connecting worker is, from its process (peer_identity.h); borrowed, must outlive the
  // agent. A Register that is not the peer's identity is refused. REQUIRES: set, unless
  // trust_register.
  PeerIdentity* identity = nullptr;
  // Believe the role, namespace, job, pod and GPU a worker sends in Register: only for a machine
  // whose every process is trusted (single-machine benchmarks). Strings are validated anyway.
  bool trust_register = false;
  // Flags background workers that use the GPU while the gate holds them (cheat_detector.h).
  CheatDetectorOptions cheat;
};

// InvalidArgument naming the option.
absl::Status Validate(const AgentOptions& options);

struct TaskStatus {
  std::string namespace_name, job, pod;
  Role role = Role::kForeground;
  std::int32_t pid = 0;
  std::uint32_t slot = 0;
  std::uint32_t credit_limit = 0;
  double foreground_slowdown = 1;  // foreground
  std::size_t sensitive_op_groups = 0;
  std::uint32_t recommended_batch_size = 0;  // background
  // The worker's last ReportIteration (step, seconds, samples); nullopt before its first.
  std::optional<ReportIteration> last_iteration;
  // The launch gate's totals for the task's slot: time spent waiting for a launch credit
  // (pacing), and the part of it spent waiting while the foreground held the pause.
  Seconds launch_wait{0};
  Seconds launch_paused{0};
  // Background: the cheat detector flags it now (cheat_detector.h), and why.
  bool cheating = false;
  std::string cheating_reason;
};

struct GpuStatus {
  GpuInfo info;
  std::string gate_path;
  std::string mps_pipe_directory;
  bool background_held = false;
  std::optional<MemoryWave> memory_wave;
  // Tick-tock: how far the second wave's peak trails the first's (wavelet-tick-tock §3.2.1), and
  // that as a fraction of the waves' period; nullopt until a foreground task's two waves (or two
  // foreground tasks of one job) on this GPU show waves.
  std::optional<Seconds> phase_offset;
  std::optional<double> phase_offset_ratio;
  // Shares of the GPU's SMs used by the foreground and the background tasks at the last full
  // sample, each in [0, 1]; nullopt when the device cannot attribute use to processes.
  std::optional<double> foreground_sm_occupancy;
  std::optional<double> background_sm_occupancy;
  std::vector<TaskStatus> tasks;
};

struct AgentStatus {
  std::string devices;  // GpuDevices::Describe()
  std::string mps;      // MpsControl::Status()
  std::uint64_t epoch = 0;
  std::vector<GpuStatus> gpus;
};

class Agent final : public SessionHandler {
 public:
  static absl::StatusOr<std::unique_ptr<Agent>> Start(AgentOptions options, GpuDevicesPtr devices,
                                                      Clock* clock, CommandRunner* runner);
  ~Agent() override;
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Closes every session, stops MPS and the loops, removes the socket and gates. Idempotent.
  void Stop();

  AgentStatus Status() const;
  // The allocator samples (ReportMemory) of the task of process `pid` on `gpu` with time_ns >
  // `after_ns` (CLOCK_MONOTONIC nanoseconds, as the protocol carries them), oldest first, of the
  // most recent the agent keeps (65536 per task): a caller that passes the newest time it read gets
  // every sample once. Empty when no such task is registered.
  std::vector<MemorySample> TaskMemorySamples(GpuIndex gpu, std::int32_t pid,
                                              std::int64_t after_ns) const;
  const std::string& socket_path() const { return socket_path_; }
  std::uint16_t metrics_port() const { return metrics_->port(); }
  AgentMetrics& metrics() { return *metrics_; }

  // SessionHandler. IdentifyPeer runs on the socket server's identity threads (it may wait for
  // the identity source), the others on its event-loop thread.
  absl::StatusOr<std::optional<WorkerIdentity>> IdentifyPeer(
      const PeerCredentials& peer, const RegisterRequest& request) override;
  absl::StatusOr<Registered> OnIdentifiedRegister(
      SessionId session, const PeerCredentials& peer, const RegisterRequest& request,
      const absl::StatusOr<std::optional<WorkerIdentity>>& identity) override;
  // Both steps of a registration at once, on the caller's thread (so it may block as
  // IdentifyPeer does): for callers outside the socket server.
  absl::StatusOr<Registered> OnRegister(SessionId session, const PeerCredentials& peer,
                                        const RegisterRequest& request) override;
  absl::Status OnReport(SessionId session, const Message& report) override;
  void OnClosed(SessionId session, bool said_goodbye) override;
  void OnProtocolError(const PeerCredentials& peer, const absl::Status& error) override;

 private:
  struct Task;
  struct Gpu;

  Agent(AgentOptions options, GpuDevicesPtr devices, Clock* clock, CommandRunner* runner);
  absl::Status Init();
  void Loop();
  void Sample(MonotonicTime now, bool full);
  void RecordUtilization(Gpu& gpu, const GpuSample& sample) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void JudgeBackground(Gpu& gpu, const GpuSample& sample) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Control(MonotonicTime now);
  void AnalyzeWaves(Gpu& gpu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The wave in the allocator reports of the foreground on `gpu` holding the most memory, for a
  // device whose used memory shows none; the headroom under the device's used memory.
  absl::StatusOr<MemoryWave> AnalyzeForegroundAllocatorWave(const Gpu& gpu,
                                                            const std::vector<GpuSample>& samples,
                                                            const MemoryWaveOptions& options)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AdviseBackground(Gpu& gpu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Re-derives the background tasks' credit limits of a GPU after a foreground came or went.
  void RepaceBackground(Gpu& gpu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SendPolicy(const Task& task) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool HasRole(const Gpu& gpu, Role role) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The pod of `identity` may take a slot on `gpu` (one per GPU it was assigned).
  absl::Status CheckPodSlots(const WorkerIdentity& identity, const GpuInfo& gpu) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const AgentOptions options_;
  const GpuDevicesPtr devices_;
  Clock* const clock_;
  const std::string socket_path_;
  const std::uint64_t epoch_;
  MpsControl mps_;
  std::unique_ptr<AgentMetrics> metrics_;
  std::unique_ptr<SocketServer> server_;  // started last, stopped first

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Gpu>> gpus_ ABSL_GUARDED_BY(mu_);
  std::map<SessionId, std::unique_ptr<Task>> tasks_ ABSL_GUARDED_BY(mu_);
  CheatDetector cheats_ ABSL_GUARDED_BY(mu_);

  absl::Notification stopping_;
  std::thread loop_;
};

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_AGENT_H_
