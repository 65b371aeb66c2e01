// The node agent's Prometheus metrics: every family the agent exports (prefix `wavepool_`, base
// units, `_total` counters), registered once at start-up, and typed update methods that the
// agent's threads call. docs/agent.md ("Metrics") lists the families, their labels and example
// queries.
//
// Every series carries `hostname`. Per-GPU series add `gpu` (the NVML index) and `UUID`, the label
// names dcgm-exporter uses, so that queries join the two exporters' series. Per-task series add
// `namespace`, `job`, `pod`, `role` and `gpu`; the scrape config must set `honor_labels: true`, or
// Prometheus renames the task's `job` label (and `namespace`/`pod` under Kubernetes service
// discovery) to `exported_*`.
//
// Series of ended tasks are removed (RemoveTask), so dead pods do not linger. Counters never go
// backwards: the gate's cumulative statistics are converted into increments per task, and a slot
// reused by a new task starts from that task's own zero.
#ifndef WAVEPOOL_AGENT_METRICS_H_
#define WAVEPOOL_AGENT_METRICS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "wavepool/agent/client/protocol.h"
#include "wavepool/base/clock.h"
#include "wavepool/base/seconds.h"

namespace wavepool::agent {

// One GPU of the node, as the telemetry found it.
struct GpuIdentity {
  std::uint32_t index = 0;  // the NVML index: the `gpu` label
  std::string uuid;         // "GPU-8c1b…": the `UUID` label
  // Whether the GPU reports SM occupancy through GPM; only then is
  // wavepool_gpu_sm_occupancy_ratio{role="all"} exported for it.
  bool has_gpm = false;
};

// What wavepool_agent_info reports (labels version, nvml, mps, gpm: "true"/"false").
struct AgentInfo {
  std::string version;
  bool nvml = false;  // NVML was loaded (false: simulated devices)
  bool mps = false;   // MPS control daemons run for the shared GPUs
  bool gpm = false;   // at least one GPU reports SM occupancy through GPM
};

struct MetricsOptions {
  std::string hostname;  // the node's name: the `hostname` label of every series
  AgentInfo info;
  std::vector<GpuIdentity> gpus;
  // Address the HTTP endpoint (`/metrics`) binds, e.g. "0.0.0.0", "127.0.0.1" or "::1".
  // Empty: no endpoint (ExpositionText() still renders the metrics).
  std::string bind_address;
  std::uint16_t port = 0;  // 0: the kernel picks a free port; read it back with port()
  // Each connection's time to send its request and receive the answer, and the connections open
  // at once (one more closes the oldest): the port is reachable from pods, and a client that
  // connects and stays silent must not hold off scrapes or the liveness probe.
  std::chrono::milliseconds http_request_deadline{5000};
  int http_max_connections = 32;
};

// The labels of one task: a worker process of one pod on one GPU.
struct TaskLabels {
  std::string namespace_name;
  std::string job;
  std::string pod;
  Role role = Role::kForeground;
  std::uint32_t gpu = 0;
};

// A GPU's memory wave: the usage that rises through a forward pass and falls through the backward
// pass; under tick-tock the two waves are offset so that their peaks interleave
// (wavelet-tick-tock §3.2.1).
struct MemoryWaveSummary {
  std::int64_t peak_bytes = 0;
  std::int64_t trough_bytes = 0;
  Seconds period{0};                // one iteration; 0 until a wave is detected
  Seconds phase_offset{0};          // between the tick and the tock wave's peaks; 0 with one wave
  std::int64_t headroom_bytes = 0;  // total memory minus the peak
  double phase_offset_ratio = 0;  // phase_offset over the waves' own period; tick-tock aims at 0.5
};

// One read of a task's gate slot. The three totals are cumulative since the slot was handed to
// the task's worker (the gate starts a new worker's statistics at zero).
struct GateReading {
  std::int32_t credit_limit = 0;
  std::int32_t credits_in_flight = 0;
  std::uint64_t launches_total = 0;   // credits acquired
  std::uint64_t wait_ns_total = 0;    // time spent waiting for a credit, pauses included
  std::uint64_t paused_ns_total = 0;  // of which waiting on a pause
};

// wavepool_agent_reports_total{type}: "ops", "memory", "iteration".
enum class ReportType { kOps, kMemory, kWaveMemory, kIteration };

// wavepool_agent_protocol_errors_total{kind}.
enum class ProtocolErrorKind {
  kMalformed,           // "malformed": bad magic, type or body
  kUnsupportedVersion,  // "unsupported_version"
  kOversized,           // "oversized": a length over its limit
  kOutOfOrder,          // "out_of_order": a wrong sequence, or a message the conversation forbids
  kPeerRejected,        // "peer_rejected": SO_PEERCRED or the socket's permissions refused it
};

// wavepool_agent_registrations_total{role, result}.
enum class RegistrationResult {
  kAccepted,    // "accepted"
  kNoFreeSlot,  // "no_free_slot": every slot of the GPU's gate is taken
  kRejected,    // "rejected": an invalid request
};

// The series of one GPU. Safe for concurrent use (every setter is one atomic store); owned by the
// AgentMetrics that created it and valid as long as it lives.
class GpuMetrics {
 public:
  ~GpuMetrics();
  GpuMetrics(const GpuMetrics&) = delete;
  GpuMetrics& operator=(const GpuMetrics&) = delete;

  std::uint32_t index() const { return index_; }

  void SetMemory(std::int64_t used_bytes, std::int64_t total_bytes);
  void SetUtilization(double ratio);
  // SM occupancy by role, from NVML's per-process utilisation summed over each role's processes.
  void SetRoleSmOccupancy(double foreground_ratio, double background_ratio);
  // SM occupancy of the whole GPU, from GPM. Ignored unless the GPU has_gpm.
  void SetSmOccupancy(double ratio);
  void SetMemoryWave(const MemoryWaveSummary& wave);
  // Whether a foreground worker holds the pause (background workers wait meanwhile).
  void SetBackgroundHold(bool raised);

 private:
  friend class AgentMetrics;
  struct Series;
  GpuMetrics(std::uint32_t index, std::unique_ptr<Series> series);

  const std::uint32_t index_;
  const std::unique_ptr<Series> series_;
};

// The series of one task. Safe for concurrent use. Owned by the AgentMetrics that created it;
// valid until RemoveTask. Two live tasks with identical labels (a pod's restarted worker whose
// predecessor is not yet reclaimed) share their series: counters add both tasks' increments,
// gauges show the latest update.
class TaskMetrics {
 public:
  ~TaskMetrics();
  TaskMetrics(const TaskMetrics&) = delete;
  TaskMetrics& operator=(const TaskMetrics&) = delete;

  const TaskLabels& labels() const { return labels_; }

  // One finished iteration. InvalidArgument (and nothing recorded) for a negative or non-finite
  // duration, or one over kMaxIterationSeconds: a worker's bad report must not corrupt the
  // histogram's sum.
  absl::Status ObserveIteration(Seconds duration, std::uint64_t samples);
  // Sets the credit gauges and adds what the totals grew by since the previous reading. A total
  // below the previous reading means the slot's statistics restarted: all of it is new.
  void ObserveGate(const GateReading& reading);
  // Foreground tasks only (ignored for background ones).
  void SetForegroundSlowdown(double ratio);
  // The slowdown limit the agent holds the task under (its job's maxForegroundSlowdown).
  void SetForegroundSlowdownSlo(double max_slowdown);
  void SetSensitiveOpGroups(std::uint32_t count);
  // Background tasks only (ignored for foreground ones).
  void SetRecommendedBatchSize(std::uint32_t batch_size);
  // Whether the cheat detector flags the task now (cheat_detector.h). Background tasks only.
  void SetCheating(bool cheating);

 private:
  friend class AgentMetrics;
  struct Series;
  TaskMetrics(TaskLabels labels, Series* series);

  const TaskLabels labels_;
  Series* const series_;  // shared by the tasks with these labels; owned by AgentMetrics
  absl::Mutex mu_;
  GateReading last_gate_ ABSL_GUARDED_BY(mu_);
};

// Owns the registry, every family and the optional HTTP endpoint. Safe for concurrent use by any
// number of threads. GpuMetrics and TaskMetrics pointers it hands out stay valid until it is
// destroyed (or, for a task, until RemoveTask).
class AgentMetrics {
 public:
  // Registers every family and the series of `options.gpus`, then starts the endpoint.
  // InvalidArgument for an empty hostname, a GPU without UUID, a GPU index listed twice, an
  // http limit that is not positive or a bind_address that is not an IP address; Unavailable
  // when the endpoint cannot bind; Internal when registering fails.
  static absl::StatusOr<std::unique_ptr<AgentMetrics>> Create(const MetricsOptions& options);
  ~AgentMetrics();
  AgentMetrics(const AgentMetrics&) = delete;
  AgentMetrics& operator=(const AgentMetrics&) = delete;

  // The endpoint's port (the one picked when options.port was 0); 0 without an endpoint.
  std::uint16_t port() const;

  // nullptr for an index that is not one of options.gpus.
  GpuMetrics* gpu(std::uint32_t index);

  // Creates the task's series (or joins those of a live task with identical labels) and counts it
  // in wavepool_gpu_tasks. InvalidArgument for an empty job or pod or an unknown role; NotFound
  // for a GPU that is not one of options.gpus.
  absl::StatusOr<TaskMetrics*> AddTask(const TaskLabels& labels);
  // Removes the task's series (unless another live task shares them) and destroys `task`.
  // REQUIRES: `task` came from this AgentMetrics' AddTask and was not removed, and no other thread
  // uses it any more; nullptr is a no-op.
  void RemoveTask(TaskMetrics* task);

  // Replaces the wavepool_agent_info series (MPS may degrade at run time). Internal if
  // prometheus-cpp refuses the series (the previous one stays).
  absl::Status SetInfo(const AgentInfo& info);
  void CountReport(ReportType type);
  void CountProtocolError(ProtocolErrorKind kind);
  void CountReclaimedSlot();
  // wavepool_agent_cheating_detections_total: a background task was flagged.
  void CountCheatingDetection();
  void CountRegistration(Role role, RegistrationResult result);
  void SetHeartbeat(WallTime now);

  // Every series in the Prometheus text format (what a scrape of `/metrics` returns).
  std::string ExpositionText() const;

 private:
  struct Impl;
  explicit AgentMetrics(std::unique_ptr<Impl> impl);

  const std::unique_ptr<Impl> impl_;
};

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_METRICS_H_
