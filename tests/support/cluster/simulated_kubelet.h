// A simulated kubelet for integration tests: it registers Nodes and moves the pods bound to them
// (spec.nodeName) through their phases as a real kubelet would report them, with fault knobs.
//
//   ASSERT_OK_AND_ASSIGN(auto kubelet,
//                        SimulatedKubelet::Start(*client, {"gpu-0", "gpu-1"}, options));
//   // a pod bound to gpu-0 turns Running after options.start_delay on options.clock
//   ASSERT_OK(kubelet->FailPod("team-a", "w-0", 137, "OOMKilled"));
//   ASSERT_OK(kubelet->NodeDown("gpu-1"));
//
// What it writes (core/v1, as the kubelet's status manager does):
// - Nodes: labels kubernetes.io/hostname=<node> and wavepool.dev/managed=true, capacity and
//   allocatable nvidia.com/gpu, cpu, memory and pods, addresses, and a Ready condition
//   (True; Unknown with reason NodeStatusUnknown after NodeDown, as the node lifecycle controller
//   writes it when a kubelet stops posting status).
// - Pods: Pending -> Running after `start_delay` (startTime, hostIP, podIP, the PodScheduled,
//   Initialized, ContainersReady and Ready conditions, every container running and ready), then
//   Succeeded after `run_time` when one is set (containers terminated, exit code 0, "Completed").
//   FailPod makes a pod Failed with a terminated container state. Terminal pods are left alone.
// - Graceful deletion: a pod with a deletionTimestamp "stops" after `stop_delay` (at most its
//   grace period: the kubelet kills what ignores SIGTERM) and is then confirmed removed by a DELETE
//   with gracePeriodSeconds=0, the kubelet's own confirmation. Run the test API server with
//   ObjectStore::Options::finish_pod_deletion_after_grace = false so that this kubelet is the only
//   confirmer, as on a real cluster (pods on a downed node then stay Terminating, as they do behind
//   an unreachable kubelet); left true, whichever comes first removes the pod and the other's
//   NotFound is ignored.
// A downed node's pods get no updates until NodeUp: timers that fall due meanwhile are dropped,
// and NodeUp looks at its pods afresh.
//
// Timers run on options.clock (a SimulatedClock in tests: nothing happens until the test advances
// it past a delay; zero delays act at once). The pod informer's own retries use the real clock, so
// that a dropped watch never waits for simulated time.
//
// Thread-safe. Start starts an informer and one worker thread; the destructor (or Stop) ends them.
// `client` and options.clock outlive the kubelet.
#ifndef WAVEPOOL_TESTS_SUPPORT_CLUSTER_SIMULATED_KUBELET_H_
#define WAVEPOOL_TESTS_SUPPORT_CLUSTER_SIMULATED_KUBELET_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
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
#include "nlohmann/json.hpp"
#include "tests/support/cluster/wall_time.h"
#include "wavepool/base/clock.h"
#include "wavepool/kube/client.h"
#include "wavepool/kube/informer.h"

namespace wavepool::testing {

inline constexpr char kManagedNodeLabel[] = "wavepool.dev/managed";
inline constexpr char kHostnameLabel[] = "kubernetes.io/hostname";
inline constexpr char kGpuResource[] = "nvidia.com/gpu";

class SimulatedKubelet {
 public:
  struct Options {
    Clock* clock = &RealClock();
    // Wall time at start; timestamps move with `clock` from there. nullopt: the system clock now.
    std::optional<std::chrono::system_clock::time_point> wall_start;
    std::int64_t gpus_per_node = 8;                  // capacity and allocatable nvidia.com/gpu
    std::map<std::string, std::string> node_labels;  // added to the two every node gets
    std::chrono::nanoseconds start_delay{0};         // bound -> Running
    // Running -> Succeeded; nullopt: pods run until FailPod, SucceedPod or deletion.
    std::optional<std::chrono::nanoseconds> run_time;
    // Deletion requested -> containers stopped (then the DELETE with grace 0); capped by the pod's
    // grace period. nullopt: containers ignore SIGTERM and are killed when the grace period ends.
    std::optional<std::chrono::nanoseconds> stop_delay = std::chrono::nanoseconds(0);
    std::chrono::nanoseconds sync_timeout = std::chrono::seconds(30);  // the informer's first list
  };

  // Creates (or takes over) the Nodes and starts watching pods. InvalidArgument for no nodes, an
  // empty or repeated name, or a negative delay; otherwise the client's errors.
  static absl::StatusOr<std::unique_ptr<SimulatedKubelet>> Start(kube::Client& client,
                                                                 std::vector<std::string> nodes,
                                                                 Options options);
  ~SimulatedKubelet();

  SimulatedKubelet(const SimulatedKubelet&) = delete;
  SimulatedKubelet& operator=(const SimulatedKubelet&) = delete;

  // Ends the worker and the informer; pods stop moving. Idempotent.
  void Stop();

  const std::vector<std::string>& nodes() const { return nodes_; }

  // Fails the pod: phase Failed, every container terminated with `exit_code` and `reason`
  // ("Error", "OOMKilled"), whatever its restartPolicy (as if it allowed no restart). NotFound for
  // an unknown pod; FailedPrecondition for a pod not bound to these nodes, on a downed node, or
  // already Succeeded/Failed.
  absl::Status FailPod(std::string_view ns, std::string_view name, std::int64_t exit_code,
                       std::string_view reason);
  // Completes the pod now: phase Succeeded, exit code 0. Errors as FailPod.
  absl::Status SucceedPod(std::string_view ns, std::string_view name);

  // The node's Ready condition becomes Unknown and its pods stop being updated. NotFound for a
  // node this kubelet does not run.
  absl::Status NodeDown(std::string_view node);
  // Ready=True again; its pods are looked at afresh (delays start again from now).
  absl::Status NodeUp(std::string_view node);

 private:
  enum class PodStage { kPending, kStarting, kRunning, kTerminal, kDeleting };
  struct PodRecord {
    std::string uid;
    std::string node;
    PodStage stage = PodStage::kPending;
    std::uint64_t epoch = 0;  // a timer set for an earlier epoch is dropped
  };
  enum class TimerKind { kStart, kComplete, kConfirmDeletion };
  struct Timer {
    TimerKind kind;
    std::string key;  // ns/name
    std::string uid;
    std::uint64_t epoch;
  };

  SimulatedKubelet(kube::Client& client, std::vector<std::string> nodes, Options options);

  absl::Status RegisterNode(std::size_t index);
  absl::Status PatchNodeReady(std::string_view node, bool ready);

  // The worker thread: pod keys from the informer, timers from the clock.
  void Enqueue(const nlohmann::json& pod);
  void WorkerLoop();
  void Reconcile(const std::string& key);
  void Fire(const Timer& timer);
  void AddTimerLocked(std::chrono::nanoseconds delay, TimerKind kind, const std::string& key,
                      const PodRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  PodRecord& RecordLocked(const std::string& key, const nlohmann::json& pod)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool NodeActiveLocked(const std::string& node) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Status writes (simulated_kubelet.cpp).
  nlohmann::json RunningStatus(const nlohmann::json& pod);
  nlohmann::json TerminatedStatus(const nlohmann::json& pod, std::string_view phase,
                                  std::int64_t exit_code, std::string_view reason);
  absl::Status PatchPodStatus(const nlohmann::json& pod, const nlohmann::json& status);
  absl::Status FinishPod(std::string_view ns, std::string_view name, std::string_view phase,
                         std::int64_t exit_code, std::string_view reason);
  std::string NextPodIp(const std::string& node);

  kube::Client& client_;
  const std::vector<std::string> nodes_;
  const Options options_;
  Clock& clock_;
  const ClockWallTime wall_;
  std::unique_ptr<kube::SharedInformer> informer_;

  // Held across a pod's check and its status write, so that a timer and FailPod cannot both
  // write; taken before mu_.
  absl::Mutex write_mu_ ABSL_ACQUIRED_BEFORE(mu_);

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::set<std::string> down_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, PodRecord> pods_ ABSL_GUARDED_BY(mu_);  // by ns/name
  std::deque<std::string> keys_ ABSL_GUARDED_BY(mu_);           // pods to look at
  std::multimap<MonotonicTime, Timer> timers_ ABSL_GUARDED_BY(mu_);
  // The last podIP octet per node.
  std::map<std::string, std::int64_t> next_host_ ABSL_GUARDED_BY(mu_);
  std::uint64_t epochs_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread worker_;
};

}  // namespace wavepool::testing

#endif  // WAVEPOOL_TESTS_SUPPORT_CLUSTER_SIMULATED_KUBELET_H_
