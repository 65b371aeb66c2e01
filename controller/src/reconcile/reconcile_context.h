// What the steps of one reconcile share (reconciler.h walks through the steps): the job as read
// and as it will be written, the cluster access, the clock and the Events to record once the
// status is stored. Internal to the reconciler; one ReconcileContext lives for one Reconcile call
// on one worker thread.
#ifndef WAVEPOOL_CONTROLLER_SRC_RECONCILE_RECONCILE_CONTEXT_H_
#define WAVEPOOL_CONTROLLER_SRC_RECONCILE_RECONCILE_CONTEXT_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "reconcile/heartbeat_observations.h"
#include "reconcile/node_quarantine.h"
#include "reconcile/placed_gangs.h"
#include "wavepool/api/gpu_node_conditions.h"
#include "wavepool/api/training_job.h"
#include "wavepool/controller/cluster.h"
#include "wavepool/controller/gpu_claims.h"
#include "wavepool/controller/job_planner.h"
#include "wavepool/controller/live_inventory.h"
#include "wavepool/controller/metrics.h"
#include "wavepool/controller/reconciler_options.h"
#include "wavepool/kube/core_types.h"

namespace wavepool::controller::internal {

// A GPUNode list as ClusterReader::GpuNodes hands it out, or screened (ScreenedGpuNodes).
using GpuNodeList = std::shared_ptr<const std::vector<api::GpuNode>>;

// Reasons of the conditions the reconciler sets (reasons are CamelCase, metav1.Condition).
inline constexpr std::string_view kReasonInvalidSpec = "InvalidSpec";
inline constexpr std::string_view kReasonSuspended = "Suspended";
inline constexpr std::string_view kReasonGangRestart = "GangRestart";
inline constexpr std::string_view kReasonRestartBackoff = "RestartBackoff";
inline constexpr std::string_view kReasonBackoffLimitExceeded = "BackoffLimitExceeded";
inline constexpr std::string_view kReasonPreempting = "Preempting";
inline constexpr std::string_view kReasonSlowdownAboveSlo = "SlowdownAboveSLO";
inline constexpr std::string_view kReasonNameClash = "NameClash";
inline constexpr std::string_view kReasonGpuConflict = "GpuConflict";
inline constexpr std::string_view kReasonLaunchesOutsideGate = api::kReasonLaunchesOutsideGate;

struct PendingEvent {
  bool warning = false;
  std::string reason;
  std::string message;
};

// Placement state shared by every worker: decisions are made one at a time (under `mu`), and
// what they claim that the cache does not show yet lives in `claims` (gpu_claims.h states the
// rules):
//
// The GPUs of a placement recorded but whose pods are not all created yet stay reserved, so that
// another job's decision counts them even before the cache shows the pods or the status. A
// reservation also outlives a failed intent write: a write whose response was lost (the API
// server restarting, a connection cut) may have been applied, and the cache may show the job as
// it was for a while yet. The write carries the job's latest resourceVersion, so once the cache
// shows the job at a version this controller did not know before the write, the outcome is there
// to see (status.placement recorded, or not) and the reservation has served; until then it holds
// its GPUs, and the job's own next look writes the same placement again rather than deciding
// anew.
//
// A fg gang that preempts nominates the GPUs it chose (the pods it will create there): while its
// victims checkpoint and exit, every other decision (bg or fg) counts those GPUs as taken, or the
// victim's job would be placed right back onto them and preempted again, forever. A nomination
// ends when the gang is placed, when its job goes or changes (uid, generation) or at `expires`;
// it lives in memory only: a restarted controller re-derives the same decision (placement.h
// breaks ties deterministically) and nominates again.
//
// Preempted pods are remembered as well: the victim's reconcile may run only after its pod is
// gone (the annotation gone with it), and must still report Preempted rather than a lost pod.

// A nomination outlives the victims' grace period (time to checkpoint) by this much; a gang that
// still preempts then nominates again.
inline constexpr std::chrono::seconds kNominationSlack{60};
// How long a gang whose nominated GPUs are not usable yet (the victims gone, but the agent's last
// report still shows their memory in use) keeps waiting for them before it is placed elsewhere,
// on more nodes: about a few of the agents' heartbeat periods.
inline constexpr std::chrono::seconds kNominationHold{10};
// How long a preempted pod is remembered for its job's reconcile.
inline constexpr std::chrono::minutes kPreemptedPodMemory{30};

struct PlacementLedger {
  // Held for a whole placement decision (inventory, decision, preemption, intent write); the
  // functions that expect it held say so with ABSL_EXCLUSIVE_LOCKS_REQUIRED(ctx.ledger.mu).
  absl::Mutex mu;
  // Reservations, nominations and preempted pods (keyed "ns/job" and "ns/pod"); the pods
  // themselves are counted by the ClusterReader (Assignments()).
  GpuClaims claims{RealClock(), std::chrono::seconds(30), kPreemptedPodMemory};
  // Every pod's GPUs, kept between decisions and brought up to date by each (live_inventory.h).
  LiveInventory inventory ABSL_GUARDED_BY(mu);
  // The gangs being created with pods still missing, kept likewise (placed_gangs.h).
  PlacedGangs placed_gangs ABSL_GUARDED_BY(mu);
  // Not a claim on GPUs, but shared by every worker like the rest: when each GPUNode's
  // heartbeat was last seen to change (NodeStatesWithHeartbeats). Its own lock, not mu.
  HeartbeatObservations heartbeats;
  // The last NodeStatesWithHeartbeats and what it came from, kept so that a heartbeat costs a
  // look at its own GPUNode: the states are worked out again only when the GPUNode list or the
  // Node states are other ones, a verdict changes, or a heartbeat found fresh may have gone
  // stale. Its own lock, not mu.
  struct NodeStatesMemo {
    GpuNodeList nodes;                     // Held: no later list has its address.
    NodeStateMap from;                     // The reader's, likewise.
    std::uint64_t heartbeats_version = 0;  // For GpuNodeHeartbeatsSince.
    WallTime computed_at;                  // The states are valid from here ...
    WallTime fresh_until;  // ... to here, inclusive: no verdict of fresh ends sooner.
    NodeStateMap states;   // The result; null before the first.
  };
  absl::Mutex node_states_mu;
  NodeStatesMemo node_states ABSL_GUARDED_BY(node_states_mu);
  // The nodes each background job is kept off after cheating there. Its own lock, not mu.
  NodeQuarantine quarantine;
  // The fg jobs ("ns/name") an inventory found sharing a GPU with another job's fg pod
  // (AddClashingPod), until their own reconcile sees the clash gone (ForegroundGpuClash). Its own
  // lock, taken after mu: every fg gang's reconcile reads it, not only a decision.
  absl::Mutex clash_mu ABSL_ACQUIRED_AFTER(mu);
  std::set<std::string> gpu_clash_jobs ABSL_GUARDED_BY(clash_mu);
  // The last GPUNode list screened for placement (ScreenedGpuNodes) and the result, reused while
  // the reader hands out the same list. Its own lock, not mu.
  absl::Mutex screened_mu;
  std::shared_ptr<const std::vector<api::GpuNode>> screened_from ABSL_GUARDED_BY(screened_mu);
  std::shared_ptr<const std::vector<api::GpuNode>> screened ABSL_GUARDED_BY(screened_mu);
};

struct ReconcileContext {
  const ClusterReader& reader;
  ClusterWriter& writer;
  const ReconcilerOptions& options;
  ControllerMetrics* metrics = nullptr;
  PlacementLedger& ledger;

  std::string key;                   // "ns/name".
  api::TrainingJob job;              // Defaulted spec; status as it will be written.
  nlohmann::json stored_status;      // The status as the API server holds it (read or written).
  WallTime now;                      // Wall time of this reconcile (ReconcilerOptions::clock).
  std::vector<PendingEvent> events;  // Recorded after the status is stored.
  bool status_written = false;       // This reconcile wrote the status already.
  // The job's resourceVersions in this reconcile: as read, then as each status write left it.
  std::vector<std::string> versions;

  const std::string& ns() const { return job.metadata.namespace_; }
  const std::string& name() const { return job.metadata.name; }
  bool foreground() const { return job.spec.role != api::Role::kBackground; }
};

// --- Status (reconcile_status.cpp) ---

// status.<...> as JSON ({} when empty), for comparing what was read with what will be written.
nlohmann::json StatusJson(const api::TrainingJob& job);

// Sets the condition with observedGeneration = metadata.generation (lastTransitionTime moves
// only when its status changes). A condition of an event type (Planned, Placed, Running,
// Succeeded, Failed, Preempted) turning True queues the Event of that name.
void SetCondition(ReconcileContext& ctx, std::string_view type, api::ConditionStatus status,
                  std::string_view reason, std::string_view message);
bool ConditionIs(const ReconcileContext& ctx, std::string_view type, api::ConditionStatus status,
                 std::string_view reason = {});
void QueueEvent(ReconcileContext& ctx, bool warning, std::string_view reason,
                std::string_view message);

// Writes the status when it differs from the stored one (with the read resourceVersion), then
// records the queued Events. The API server's error (Conflict on a stale read) is returned.
absl::Status WriteStatus(ReconcileContext& ctx);

// Before creating an object for the job: writes the status even when unchanged, unless this
// reconcile wrote it already. The write carries the read resourceVersion, so a job deleted (or
// changed) since the cache showed it gets NotFound (or Conflict) instead of new orphans; the
// API server treats an unchanged write as a no-op.
absl::Status FenceOnJob(ReconcileContext& ctx);

// restart_backoff_base x 2^(restarts-1), capped at restart_backoff_max; 0 for restarts <= 0.
std::chrono::seconds RestartBackoff(const ReconcilerOptions& options, std::int64_t restarts);

// A short delay for waits that resolve by themselves soon (terminating pods).
std::chrono::nanoseconds SoonRequeue(const ReconcilerOptions& options);

// --- Pods (reconcile_gang.cpp) ---

const std::string& PodNameOf(const kube::Pod& pod);
const std::string& PodPhaseOf(const kube::Pod& pod);
bool IsTerminating(const kube::Pod& pod);
std::optional<std::string> PodAnnotation(const kube::Pod& pod, std::string_view key);
// The gang generation label (of a pod or a gang's Service); -1 when absent or malformed.
std::int64_t GangGenerationOf(const api::ObjectMeta& metadata);
std::int64_t GangGenerationOf(const kube::Pod& pod);

// Deletes every pod of `pods` not terminating yet (and, with keep_finished, not Succeeded or
// Failed: their logs stay), with the pods' own grace period. NotFound counts as done.
absl::Status DeletePods(ReconcileContext& ctx, const std::vector<kube::Pod>& pods,
                        bool keep_finished);

// Node readiness with the heartbeat verdict: fresh while the controller has seen the GPUNode's
// heartbeat value change within options.heartbeat_timeout of ctx.now, on its own clock
// (heartbeat_observations.h); the node's clock never enters. Worked out once per GPUNode list and
// Node states (ledger.node_states) until a fresh heartbeat would go stale.
NodeStateMap NodeStatesWithHeartbeats(const ReconcileContext& ctx, const GpuNodeList& nodes)
    ABSL_LOCKS_EXCLUDED(ctx.ledger.node_states_mu);

// Looks at the current gang (status.placement non-empty): Succeeded, Preempted, a failed pod or
// a lost one. Returns the result to return when this step decided the reconcile; nullopt to go
// on (create missing pods, report progress). May clear status.placement (a preempted pod gone:
// place again).
absl::StatusOr<std::optional<ReconcileResult>> ObserveGang(ReconcileContext& ctx,
                                                           const std::vector<kube::Pod>& pods,
                                                           const GpuNodeList& nodes);

// --- Ownership (reconcile_ownership.cpp) ---

// The pods the job owns (IsControlledBy its uid) among those labelled as its, and the others:
// a re-created job's predecessor's pods, orphans, or pods someone else labelled. Only owned
// pods are observed, reported, created or deleted; the others only keep their names taken.
struct JobPods {
  std::vector<kube::Pod> owned;
  std::vector<kube::Pod> foreign;
};
JobPods SplitJobPods(const ReconcileContext& ctx, std::vector<kube::Pod> labelled);

// Before a new gang is placed: moves status.gangGeneration on while one of the gang's pod or
// Service names is held by an object the job does not own (labelled as the job's, see
// JobPods), so that the gang's pods and Service never clash with them.
void SkipForeignGenerations(ReconcileContext& ctx);

// An object of the job's name that the job does not own: Placed=False (or Planned=False for the
// Plan ConfigMap) with reason NameClash naming it, a Warning Event the first time. Returns the
// wait; the object is never adopted, updated or deleted.
ReconcileResult ReportNameClash(ReconcileContext& ctx, std::string_view condition,
                                std::string_view object);

// --- GPUNodes (reconcile_gpu_nodes.cpp) ---

// The reader's GPUNodes with what placement must not use withheld: a GPUNode without
// spec.nodeName is left out whole; a GPU with an empty or duplicated UUID (within the node or
// across nodes: both copies) or a negative memory figure is removed from its node. Every GPUNode
// with a problem gets (once, on a change) a controller-owned condition `Invalid` naming the GPUs
// and the other nodes involved, and a Warning Event; a GPUNode that is valid again gets
// Invalid=False. Best effort: a failed write is retried by the next reconcile. Never fails the
// reconcile. Screened once per GPUNode list (ClusterReader::GpuNodes) whose writes all
// succeeded: the reconciles in between share the result.
GpuNodeList ScreenedGpuNodes(ReconcileContext& ctx) ABSL_LOCKS_EXCLUDED(ctx.ledger.screened_mu);

// --- The gang's rendezvous Service (reconcile_service.cpp) ---

// Creates the headless Service of the current gang (BuildGangService) unless the cache shows it:
// before the gang's first pod, and again should someone delete it while the gang runs. Fenced
// on the job like every creation; AlreadyExists (the cache behind a create) counts as done.
// A Service of that name the job does not own is never adopted: FailedPrecondition naming it
// (the caller reports the clash, ReportNameClash).
absl::Status EnsureGangService(ReconcileContext& ctx);

// Deletes the job's Services of every gang generation but `keep` (all of them when nullopt):
// those of gangs that were restarted, preempted or suspended. Only Services whose controller
// ownerReference is this job's uid are touched; NotFound counts as done.
absl::Status DeleteGangServices(ReconcileContext& ctx, std::optional<std::int64_t> keep);

// --- Plan (reconcile_plan.cpp) ---

class PlanCache {
 public:
  std::optional<JobPlan> Find(const std::string& key) const;
  void Store(const std::string& key, const JobPlan& plan);
  // Forgets every plan of the job uid (the job was deleted or re-planned at a new generation).
  void ForgetJob(std::string_view uid);
  // PlanningDevice(*nodes, fallback), worked out once per GPUNode list: every plan asks, and
  // counting the models reads every GPU.
  std::string PlanningDeviceOf(const GpuNodeList& nodes, std::string_view fallback);

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, JobPlan> plans_ ABSL_GUARDED_BY(mu_);
  GpuNodeList device_from_ ABSL_GUARDED_BY(mu_);  // Held: no later list has its address.
  std::string device_fallback_ ABSL_GUARDED_BY(mu_);
  std::string device_ ABSL_GUARDED_BY(mu_);
};

// Plans the job (cached by uid, generation and inputs) and stores the Plan ConfigMap. A result
// when the job must wait (Planned=False); the plan otherwise.
struct PlanOutcome {
  std::optional<JobPlan> plan;
  std::optional<ReconcileResult> wait;
};
absl::StatusOr<PlanOutcome> PlanAndStore(ReconcileContext& ctx, PlanCache& cache,
                                         const GpuNodeList& nodes);

// --- Placement (reconcile_placement.cpp) ---

// Places the job (status.placement empty), under the ledger's mutex: writes status.placement
// (the intent record) before returning. A result when the job waits (NotPlaceable, victims still
// terminating, restart backoff); nullopt once the placement is recorded.
absl::StatusOr<std::optional<ReconcileResult>> PlaceJob(ReconcileContext& ctx, const JobPlan& plan,
                                                        const GpuNodeList& nodes);

// Whether every missing pod of the recorded placement can still go where it was recorded (its
// GPU exists, is schedulable and not taken by someone else); the reason when not.
std::optional<std::string> RecordedPlacementConflict(ReconcileContext& ctx, const JobPlan& plan,
                                                     const std::vector<kube::Pod>& pods,
                                                     const GpuNodeList& nodes);

// Why this fg gang must be placed afresh: one of its pods (of `pods`, the job's) shares a GPU
// with another job's fg pod, and is the younger of the two (created later; on a tie, the later
// name), so that of two clashing gangs exactly one yields. nullopt when there is no clash.
// Placement never makes a clash, so only a job in ledger.gpu_clash_jobs looks; it is dropped
// from there once it yields or its pods share no GPU with another fg pod any more.
std::optional<std::string> ForegroundGpuClash(const ReconcileContext& ctx,
                                              const std::vector<kube::Pod>& pods)
    ABSL_LOCKS_EXCLUDED(ctx.ledger.clash_mu);

// Whether one of the fg pod `a`'s GPUs already runs another fg pod in `inventory`.
bool ClashesWithForeground(const Inventory& inventory, const GpuAssignment& a);

// Counts a fg pod that shares a GPU with another fg pod (ClashesWithForeground): a broken rule,
// but both run, so both hold their GPUs. Refusing the inventory instead would stop every
// placement in the cluster; the pair's own reconciles repair it (ForegroundGpuClash). Returns
// the jobs of the clash ("ns/name"): a's and those of the fg pods on its GPUs.
std::set<std::string> AddClashingPod(Inventory& inventory, const GpuAssignment& a);

// Drops `key` from ledger.gpu_clash_jobs (ForegroundGpuClash).
void ForgetGpuClash(PlacementLedger& ledger, const std::string& key)
    ABSL_LOCKS_EXCLUDED(ledger.clash_mu);

// A pod of the recorded placement that the API server refused as invalid (422 Invalid): the pod
// as the job's template builds it breaks a rule of the server's that the template policy does not
// check (an env var name, a container port name, ...), so creating it again cannot succeed.
struct RejectedPod {
  std::string pod;      // Its name.
  std::string message;  // What the server said (its metav1.Status message).
};

// Creates the pods of the recorded placement that do not exist (create-if-absent), then drops
// the job's reservation. The first pod the API server refuses as invalid when there is one
// (nothing more is created, the reservation stays for the caller to end with the gang:
// FailRejectedPod); nullopt when every pod exists. Any other error of the server's is returned,
// to be retried.
absl::StatusOr<std::optional<RejectedPod>> CreateMissingPods(
    ReconcileContext& ctx, const JobPlan& plan, const std::vector<kube::Pod>& pods,
    const std::vector<api::GpuNode>& nodes);

// Places, on `inventory`, every bg job waiting for a GPU (Planned=True, Placed=False with
// NotPlaceable, no placement) that was first queued before ctx.job (creation time, then
// namespace/name), oldest first, so that ctx.job gets only what they leave: a preempted bg job is
// placed again before newer ones, whichever reconciles first, and a newer one still takes what
// the older ones cannot use. Returns how many were placed ahead (reconcile_queueing.cpp).
int PlaceQueuedEarlier(const ReconcileContext& ctx, Inventory& inventory)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(ctx.ledger.mu);

// Drops the job's reservation (its pods exist, or it has no placement any more). Takes
// ctx.ledger.mu: a claim never ends in the middle of another worker's decision.
void ReleaseReservation(ReconcileContext& ctx) ABSL_LOCKS_EXCLUDED(ctx.ledger.mu);

// Drops the job's reservation, nomination, GPU clash and what is remembered of its preempted pods
// (it is gone, or suspended). Takes ledger.mu, as ReleaseReservation.
void ForgetJob(PlacementLedger& ledger, const std::string& key) ABSL_LOCKS_EXCLUDED(ledger.mu);

// Who preempted the pod `pod` of this job ("ns/job"), as remembered when it was deleted; nullopt
// when this controller did not preempt it (or forgot).
std::optional<std::string> RememberedPreemptor(ReconcileContext& ctx, const std::string& pod);

}  // namespace wavepool::controller::internal

#endif  // WAVEPOOL_CONTROLLER_SRC_RECONCILE_RECONCILE_CONTEXT_H_
