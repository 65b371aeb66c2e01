// Publishes the node's GPUNode (wavepool.dev/v1alpha1, cluster-scoped; wavepool/api/gpu_node.h):
// the agent creates the object named after its node when it is absent and rewrites its status
// every publish interval from a snapshot of the agent (Agent::Status): the GPUs (index, UUID,
// model, memory), each GPU's memory wave and role occupancy, the tasks on each GPU with their
// role, the agent's version, a heartbeat, a Ready condition and a BackgroundCheating condition
// (with a Warning Event on each pod newly flagged). Tasks that ended are simply not
// in the next snapshot, so they leave the status at the next publish. A node without GPUs (NVML
// missing, or no usable GPU) is published too, with Ready False and the reason in the status.
//
// Kubernetes semantics (docs/agent.md, "The GPUNode"):
//   * Created with labels wavepool.dev/node=<node>, spec.nodeName=<node> and, when the Node
//     object can be read, an owner reference to it (kind Node, its uid), so that the garbage
//     collector removes the GPUNode with its Node. Without the Node (no RBAC, or a test cluster)
//     it is created unowned; the reference is not added later.
//   * Status goes through the status subresource, conditional on the resourceVersion last read
//     or written. A Conflict (someone else wrote the object) re-reads it and tries again; a
//     NotFound (it was deleted) creates it again.
//   * A failed publish is never fatal: Run retries after a doubling backoff
//     (initial_backoff .. max_backoff) and returns to the interval after the next success. No
//     exception leaves a publish (the JSON library's, on a value it cannot encode, becomes an
//     Internal error), and tasks the API server would refuse are left out and logged
//     (DropUnpublishableTasks), so one bad task never stops the node's heartbeat.
//
// Thread safety: Publish, State and Stop may be called from any thread; Start runs the loop on
// its own thread. The publisher borrows the client and the clock (both must outlive it).
#ifndef WAVEPOOL_AGENT_GPUNODE_PUBLISHER_H_
#define WAVEPOOL_AGENT_GPUNODE_PUBLISHER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "wavepool/agent/agent.h"
#include "wavepool/api/gpu_node.h"
#include "wavepool/api/gpu_node_conditions.h"
#include "wavepool/base/clock.h"
#include "wavepool/kube/client.h"
#include "wavepool/kube/event_recorder.h"

namespace wavepool::agent {

// The label every GPUNode carries: its node's name.
inline constexpr char kGpuNodeNodeLabel[] = "wavepool.dev/node";
// The Ready condition and its reasons.
inline constexpr char kGpuNodeReady[] = "Ready";
inline constexpr char kReasonGpusReported[] = "GPUsReported";
inline constexpr char kReasonNvmlUnavailable[] = "NVMLUnavailable";
inline constexpr char kReasonNoGpus[] = "NoGPUs";
// The BackgroundCheating condition (api/gpu_node_conditions.h): the controller preempts the
// jobs of the pods it names. Each pod, when it is first flagged, also gets a Warning Event with
// reason kReasonLaunchesOutsideGate.
using api::kGpuNodeBackgroundCheating;
using api::kReasonLaunchesOutsideGate;
using api::kReasonNoCheating;

// Why a node without GPUs has none, from the error OpenNvmlDevices returned:
// kReasonNvmlUnavailable when the library could not be loaded or initialised (dlopen, a missing
// symbol, nvmlInit), kReasonNoGpus when NVML works but lists no usable GPU.
std::string NoGpuReasonFor(const absl::Status& nvml_error);

// What goes into one status besides the agent's snapshot.
struct GpuNodeStatusInputs {
  std::string agent_version;
  std::string no_gpu_reason = kReasonNoGpus;  // used only when the snapshot has no GPU
  WallTime now;                               // the heartbeat; condition transitions
  // The conditions last published, so that lastTransitionTime moves only when Ready flips.
  std::vector<api::Condition> previous_conditions;
};

// Removes from `snapshot` the tasks the API server would refuse (a namespace, job or pod that is
// not a valid Kubernetes name or not UTF-8: one such value fails the whole status with 422) and
// returns why each was removed. The agent refuses such names at Register; this keeps the GPUNode
// publishing if one gets through anyway.
std::vector<std::string> DropUnpublishableTasks(AgentStatus* snapshot);

using api::CheatingPods;

// The GPUNode status for `snapshot` (pure). Memory-wave byte counts above INT64_MAX are clamped,
// a negative headroom (a peak above the GPU's memory) becomes 0 as the CRD requires, and
// non-finite numbers (JSON has none) become 0.
api::GpuNodeStatus MakeGpuNodeStatus(const AgentStatus& snapshot,
                                     const GpuNodeStatusInputs& inputs);

struct GpuNodePublisherOptions {
  std::string node_name;  // REQUIRES: a DNS-1123 subdomain (Kubernetes node names are)
  std::string agent_version;
  std::string no_gpu_reason = kReasonNoGpus;  // see NoGpuReasonFor
  std::chrono::nanoseconds interval = std::chrono::seconds(10);
  std::chrono::nanoseconds initial_backoff = std::chrono::seconds(1);
  std::chrono::nanoseconds max_backoff = std::chrono::seconds(60);
  int max_conflict_retries = 5;  // re-reads per publish before giving up until the next one
  // Where failures and recoveries are reported. nullptr: standard error.
  std::function<void(std::string_view)> log;
  // A Warning Event on each pod the cheat detector newly flags (needs create on core events).
  bool record_events = true;
};

// InvalidArgument naming the option.
absl::Status Validate(const GpuNodePublisherOptions& options);

struct GpuNodePublisherState {
  std::int64_t publishes = 0;             // successful status writes
  std::int64_t failures = 0;              // failed publishes
  std::int64_t consecutive_failures = 0;  // since the last success
  absl::Status last_error;                // of the last failed publish
  std::string resource_version;           // of the last status written
};

class GpuNodePublisher {
 public:
  using Snapshot = std::function<AgentStatus()>;

  // REQUIRES: client, snapshot and clock are set; client and clock outlive the publisher.
  static absl::StatusOr<std::unique_ptr<GpuNodePublisher>> Create(GpuNodePublisherOptions options,
                                                                  kube::Client* client,
                                                                  Snapshot snapshot, Clock* clock);
  ~GpuNodePublisher();  // Stop()
  GpuNodePublisher(const GpuNodePublisher&) = delete;
  GpuNodePublisher& operator=(const GpuNodePublisher&) = delete;

  // One publish now: creates the GPUNode if needed and writes its status. Returns the written
  // object, or the error (the API server's, or Aborted after max_conflict_retries conflicts).
  absl::StatusOr<api::GpuNode> Publish();

  // Publishes at once, then every interval (after a failure: after the backoff) on the clock,
  // on a thread of its own, until Stop. Calling Start twice is a no-op.
  void Start();
  // Ends the loop and joins it. Idempotent. Does not delete the GPUNode: it says when the agent
  // was last alive, and its owner reference removes it with the Node.
  void Stop();

  GpuNodePublisherState State() const;

 private:
  GpuNodePublisher(GpuNodePublisherOptions options, kube::Client* client, Snapshot snapshot,
                   Clock* clock);
  absl::StatusOr<api::GpuNode> PublishOnce() ABSL_LOCKS_EXCLUDED(publish_mu_, mu_);
  void RecordFailure(const absl::Status& error) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<api::GpuNode> ReadOrCreate();
  api::GpuNode NewObject();
  void Loop();
  std::chrono::nanoseconds Backoff(std::int64_t failures) const;
  void Log(std::string_view line) const;
  // Warning Events for the tasks of `snapshot` flagged as cheating that were not flagged at the
  // previous publish.
  void RecordCheatEvents(const AgentStatus& snapshot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(publish_mu_);

  const GpuNodePublisherOptions options_;
  kube::Client* const client_;
  const Snapshot snapshot_;
  Clock* const clock_;

  absl::Mutex publish_mu_ ABSL_ACQUIRED_BEFORE(mu_);  // one publish at a time
  std::optional<api::GpuNode> current_ ABSL_GUARDED_BY(publish_mu_);
  // "<namespace>/<pod>" at the last publish.
  std::set<std::string> flagged_pods_ ABSL_GUARDED_BY(publish_mu_);
  std::unique_ptr<kube::EventRecorder> events_;  // nullptr without record_events

  mutable absl::Mutex mu_;
  GpuNodePublisherState state_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  std::thread loop_;
};

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_GPUNODE_PUBLISHER_H_
