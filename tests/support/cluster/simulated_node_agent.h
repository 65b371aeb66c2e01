// Simulated node agents for integration tests: one per node, each publishing the node's GPUNode
// (wavepool.dev/v1alpha1, cluster-scoped, named after the node) as the real agent does, with
// heartbeats the test drives and agents it can make disappear.
//
//   ASSERT_OK(RegisterWavepoolCrds(*client));   // crds.h: the GPUNode CRD must exist first
//   ASSERT_OK_AND_ASSIGN(auto agents, SimulatedNodeAgents::Start(
//       *client, SimulatedNodeAgents::Uniform({"gpu-0", "gpu-1"}, 8), options));
//   clock.Advance(std::chrono::seconds(10));
//   ASSERT_OK(agents->Heartbeat());              // heartbeatTime moves 10 s on
//   ASSERT_OK(agents->StopHeartbeat("gpu-1"));   // gpu-1's GPUNode goes stale
//
// Start creates each GPUNode (spec.nodeName, label wavepool.dev/node, owned by the Node when one
// exists, e.g. from SimulatedKubelet) and writes its status through the status
// subresource: a Ready condition (True, reason GPUsReported), one GPU per index with uuid
// "GPU-<node>-<index>" (deterministic, so tests can name devices), model, memory, the agent version
// and heartbeatTime (RFC 3339 from options.wall_start, moving with options.clock). An existing
// GPUNode is taken over, as a restarted agent would. Every status write is a JSON merge patch of
// the whole status, so nothing else it publishes (tasks, occupancy) is lost; each write refreshes
// heartbeatTime, as an agent's does.
//
// Heartbeats: Heartbeat() on demand, and every options.heartbeat_period on the clock when that is
// positive (one thread). A stopped agent writes nothing until ResumeHeartbeat.
//
// Thread-safe; `client` and options.clock outlive it. The destructor (or Stop) ends the thread.
#ifndef WAVEPOOL_TESTS_SUPPORT_CLUSTER_SIMULATED_NODE_AGENT_H_
#define WAVEPOOL_TESTS_SUPPORT_CLUSTER_SIMULATED_NODE_AGENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "tests/support/cluster/wall_time.h"
#include "wavepool/api/gpu_node.h"
#include "wavepool/base/clock.h"
#include "wavepool/kube/client.h"

namespace wavepool::testing {

// The label every GPUNode carries: its node's name (as the real agent writes it).
inline constexpr char kGpuNodeNodeLabel[] = "wavepool.dev/node";

class SimulatedNodeAgents {
 public:
  // One node's GPUs.
  struct NodeSpec {
    std::string name;
    std::int64_t gpus = 8;
    std::string model = "NVIDIA H100 80GB HBM3";
    std::int64_t memory_bytes = std::int64_t{80} << 30;  // per GPU
  };

  struct Options {
    Clock* clock = &RealClock();
    // Wall time at start; heartbeatTime moves with `clock` from there. nullopt: the system clock.
    std::optional<std::chrono::system_clock::time_point> wall_start;
    // > 0: every node whose agent runs heartbeats this often on `clock`; 0: only on demand.
    std::chrono::nanoseconds heartbeat_period{0};
    std::string agent_version = "0.1.0-simulated";
  };

  // `names` with `gpus` GPUs of `model` and `memory_bytes` each.
  static std::vector<NodeSpec> Uniform(const std::vector<std::string>& names, std::int64_t gpus,
                                       std::string model = "NVIDIA H100 80GB HBM3",
                                       std::int64_t memory_bytes = std::int64_t{80} << 30);

  // "GPU-<node>-<index>".
  static std::string GpuUuid(std::string_view node, std::int64_t index);

  // Publishes every node's GPUNode. InvalidArgument for no nodes, an empty or repeated name, a
  // negative GPU count, memory or period; otherwise the client's errors (NotFound when the GPUNode
  // CRD is not registered).
  static absl::StatusOr<std::unique_ptr<SimulatedNodeAgents>> Start(kube::Client& client,
                                                                    std::vector<NodeSpec> nodes,
                                                                    Options options);
  ~SimulatedNodeAgents();

  SimulatedNodeAgents(const SimulatedNodeAgents&) = delete;
  SimulatedNodeAgents& operator=(const SimulatedNodeAgents&) = delete;

  // Ends the periodic heartbeat. Idempotent.
  void Stop();

  // Writes the status of every node whose agent runs (heartbeatTime = now); the first error.
  absl::Status Heartbeat();
  // One node's. NotFound for an unknown node; FailedPrecondition when its agent is stopped.
  absl::Status Heartbeat(std::string_view node);

  // The agent disappears: no writes for the node until ResumeHeartbeat (which writes at once).
  // NotFound for an unknown node.
  absl::Status StopHeartbeat(std::string_view node);
  absl::Status ResumeHeartbeat(std::string_view node);

  // Mirrors the pods on a GPU into status.gpus[gpu].tasks and publishes at once. NotFound for an
  // unknown node, InvalidArgument for a GPU index out of range, FailedPrecondition when the
  // node's agent is stopped.
  absl::Status SetTasks(std::string_view node, std::int64_t gpu, std::vector<api::GpuTask> tasks);
  // Any other change to one GPU's status (occupancy, memory wave), published at once. Errors as
  // SetTasks.
  absl::Status UpdateGpu(std::string_view node, std::int64_t gpu,
                         const std::function<void(api::GpuStatus&)>& change);

  // The status as last published (or about to be) for `node`. NotFound for an unknown node.
  absl::StatusOr<api::GpuNodeStatus> PublishedStatus(std::string_view node) const;

 private:
  struct Agent {
    NodeSpec spec;
    api::GpuNodeStatus status;
    bool running = true;
  };

  SimulatedNodeAgents(kube::Client& client, Options options);
  api::GpuNode NewObject(const std::string& node);
  absl::Status Publish(Agent& agent) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  absl::StatusOr<Agent*> FindLocked(std::string_view node) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  void HeartbeatLoop() ABSL_LOCKS_EXCLUDED(mu_, write_mu_);

  kube::Client& client_;
  const Options options_;
  Clock& clock_;
  const ClockWallTime wall_;

  // Serialises status writes, so that the API server sees them in the order they were made.
  mutable absl::Mutex write_mu_;
  std::map<std::string, Agent, std::less<>> agents_ ABSL_GUARDED_BY(write_mu_);
  std::vector<std::string> order_;  // node names in the order given

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread heartbeat_thread_;
};

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_CLUSTER_SIMULATED_NODE_AGENT_H_
