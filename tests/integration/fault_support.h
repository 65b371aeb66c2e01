// What the controller's fault tests share: TrainingJobs to create, a snapshot of the cluster read
// straight from the API server, the invariants every placement must keep whatever fault happened
// (one gang per job, unique pod names, no GPU given to two foreground pods), a log of every pod
// ever created, and the `wavepool-controller` binary run as a child process that can be killed.
//
// Everything here reads and writes through the API server (or its store), never through the
// controller under test, so that a bug in the controller's caches cannot hide itself.
//
// Not thread-safe unless a class comment says so.
#ifndef WAVEPOOL_TESTS_INTEGRATION_FAULT_SUPPORT_H_
#define WAVEPOOL_TESTS_INTEGRATION_FAULT_SUPPORT_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
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
#include "tests/support/apiserver/test_server.h"
#include "tests/support/cluster/test_cluster.h"
#include "wavepool/api/training_job.h"
#include "wavepool/controller/manager.h"
#include "wavepool/kube/client.h"
#include "wavepool/kube/transport.h"

namespace wavepool::controller::fault {

inline constexpr char kNamespace[] = "faults";

// A Foreground TrainingJob of the tiny MLP (plans in microseconds, fits any GPU), DataParallel on
// the largest power of two <= `gpus` GPUs; a Background one on one GPU with a checkpoint path. Both
// run "forever" (a million steps) and carry an image, so the controller needs no default image.
nlohmann::json ForegroundJob(std::string_view name, std::int64_t gpus);
nlohmann::json BackgroundJob(std::string_view name);

// The random generator of a randomised test, seeded with WAVEPOOL_FAULT_SEED when set, else a
// random seed. The seed is printed and recorded as the test's "seed" property, so a failure
// reproduces with WAVEPOOL_FAULT_SEED=<seed>.
std::mt19937 SeededRng();

// `foreground` Foreground jobs of 1, 2, 4 or 8 GPUs (at most max_gang; drawn from `rng`, never more
// than `gpu_budget` GPUs in all, so that every gang fits at once) and `background` Background jobs,
// interleaved; names "fg-<i>" and "bg-<i>".
std::vector<nlohmann::json> MixedJobs(std::mt19937& rng, int foreground, int background,
                                      std::int64_t max_gang, std::int64_t gpu_budget);

// Creates the namespace kNamespace (an existing one is fine).
absl::Status CreateNamespace(kube::Client& client);
// Creates every job; the first error. Retries Unavailable for up to 20 s (an API server that is
// restarting).
absl::Status CreateJobs(kube::Client& client, const std::vector<nlohmann::json>& jobs);

// How often waits poll the API server (each poll lists every job and pod).
inline constexpr std::chrono::milliseconds kSnapshotPoll{50};

// The jobs and pods of kNamespace as the API server has them now.
struct Snapshot {
  std::vector<api::TrainingJob> jobs;
  std::vector<nlohmann::json> pods;
};
absl::StatusOr<Snapshot> TakeSnapshot(kube::Client& client);

// Jobs with status.placement set; with phase Running; and both.
int CountPlaced(const Snapshot& snapshot);
int CountRunning(const Snapshot& snapshot);

// Waits (up to `timeout`, a safety net) until exactly `jobs` jobs exist, every one Running with
// its placement, and `also` holds (empty: nothing more); a test failure if that never happens.
// The last snapshot taken.
Snapshot WaitAllRunning(kube::Client& client, std::size_t jobs, std::chrono::nanoseconds timeout,
                        const std::function<bool(const Snapshot&)>& also = {});

struct InvariantOptions {
  // Every job must be placed (status.placement not empty) with its pods created.
  bool all_placed = true;
  // Every job must still be on its first gang (gangGeneration 0): nothing forced a re-placement.
  bool first_generation = true;
  // Nodes whose GPUs must hold no pod of the current gangs (an agent that vanished).
  std::set<std::string> avoided_nodes;
};

// Everything wrong with the snapshot, one line each (empty: all good):
//  - a placed job's live pods (not terminating, not finished) are exactly the pods of
//    status.placement, named `<job>-g<gangGeneration>-<rank>`, bound to the recorded node with
//    the recorded GPU UUIDs (wavepool.dev/gpu-uuids);
//  - a job has no live pods of any other generation, and no two live pods share a rank;
//  - no GPU UUID is held by two live Foreground pods, nor by more than one live Background pod;
//  - the options' requirements.
std::vector<std::string> CheckInvariants(const Snapshot& snapshot, const InvariantOptions& options);

// Every pod the store ever created, from a watch on the store itself started before the test
// creates anything (so a pod created and deleted between two lists is still counted). Thread-safe.
class PodCreationLog {
 public:
  // REQUIRES: `store` outlives the log (stop the log before restarting the server).
  static absl::StatusOr<std::unique_ptr<PodCreationLog>> Start(
      testing::apiserver::ObjectStore& store);
  ~PodCreationLog();
  void Stop();

  // Pod name -> how many times a pod of that name was created (each incarnation has a new uid).
  std::map<std::string, int> Creations() const;
  // One line for every pod name created more than once (a second incarnation of a pod).
  std::vector<std::string> Duplicates() const;

 private:
  PodCreationLog() = default;
  void Loop();

  std::unique_ptr<testing::apiserver::StoreWatch> watch_;
  std::atomic<bool> stopping_{false};
  mutable absl::Mutex mu_;
  std::map<std::string, std::set<std::string>> uids_by_pod_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

// A Transport that forwards to another and counts the writes (POST, PUT, PATCH, DELETE) by
// resource ("pods", "configmaps", "trainingjobs", "leases", ...), and can be cut: a cut transport
// answers every request with Unavailable, as a process that has died (or been partitioned away)
// would never reach the server again. Thread-safe.
class CountingTransport : public kube::Transport {
 public:
  explicit CountingTransport(std::unique_ptr<kube::Transport> inner);

  absl::StatusOr<kube::HttpResponse> Send(const kube::HttpRequest& request) override;
  absl::StatusOr<std::unique_ptr<kube::LineReader>> Stream(
      const kube::HttpRequest& request) override;

  // Writes that reached the server, by resource plural (subresources count as their resource).
  std::map<std::string, int> Writes() const;
  void Cut() { cut_ = true; }

 private:
  std::unique_ptr<kube::Transport> inner_;
  std::atomic<bool> cut_{false};
  mutable absl::Mutex mu_;
  std::map<std::string, int> writes_ ABSL_GUARDED_BY(mu_);
};

// A client of `server` over HTTP; with a CountingTransport when `counting` is not null (which
// then receives a pointer to it, owned by the client).
absl::StatusOr<std::unique_ptr<kube::Client>> ConnectTo(
    const testing::apiserver::TestApiServer& server, CountingTransport** counting = nullptr,
    std::chrono::milliseconds timeout = std::chrono::seconds(10));

// The cluster fixture's options for `nodes` x `gpus_per_node` GPUs.
testing::TestCluster::Options FixtureOptions(int nodes, std::int64_t gpus_per_node,
                                             bool start_controller);

// Manager options for tests: no HTTP server, no leader election, short informer backoffs and
// requeues, a 1 s resync, logs dropped (set `log` to see them).
ManagerOptions FastManagerOptions();

}  // namespace wavepool::controller::fault

#endif  // WAVEPOOL_TESTS_INTEGRATION_FAULT_SUPPORT_H_
