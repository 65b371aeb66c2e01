// Placing a job inside a reconcile: the inventory, the decision under the ledger's mutex,
// preemption, the intent record and the pods (reconcile_context.h).
#include <algorithm>
#include <chrono>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "reconcile/reconcile_context.h"
#include "wavepool/api/defaults.h"
#include "wavepool/api/object_key.h"
#include "wavepool/base/seconds.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/controller/owned_objects.h"
#include "wavepool/kube/api_error.h"

namespace wavepool::controller::internal {
namespace {

using api::ConditionStatus;
using nlohmann::json;

// The GpuAssignment of one pod of `job`'s recorded placement.
GpuAssignment AssignmentOf(const api::TrainingJob& job, const api::PodPlacement& p, Bytes memory,
                           double idle_fraction) {
  GpuAssignment a;
  a.job = api::NamespacedName(job.metadata);
  a.pod = api::ObjectKey{job.metadata.namespace_, p.pod}.ToString();
  a.role = job.spec.role.value_or(api::Role::kForeground);
  a.node = p.node;
  a.gpu_uuids = p.gpu_uuids;
  a.memory_per_gpu_bytes = memory;
  if (a.role == api::Role::kForeground) {
    a.idle_fraction = idle_fraction;
    a.allow_background =
        job.spec.collocation.allow_background.value_or(api::kDefaultAllowBackground);
    a.max_foreground_slowdown =
        job.spec.collocation.max_foreground_slowdown.value_or(api::kDefaultMaxForegroundSlowdown);
  }
  return a;
}

// The job of `key` as the cache shows it, for GpuClaims::StandingIntents.
std::optional<ClaimantJob> LookUpClaimant(const ReconcileContext& ctx, const std::string& key) {
  const absl::StatusOr<api::ObjectKey> job_key = api::ObjectKey::Parse(key);
  if (!job_key.ok()) return std::nullopt;
  const std::optional<api::TrainingJob> job = ctx.reader.GetJob(job_key->namespace_, job_key->name);
  if (!job.has_value()) return std::nullopt;
  return ClaimantJob{job->metadata.uid, job->metadata.generation, job->metadata.resource_version,
                     !job->metadata.deletion_timestamp.empty(), job->spec.suspend.value_or(false)};
}

bool KnownBefore(const Reservation& r, const std::string& resource_version) {
  return std::find(r.resource_versions.begin(), r.resource_versions.end(), resource_version) !=
         r.resource_versions.end();
}

// The pods of the reservations and nominations that stand (GpuClaims::StandingIntents), read
// before the gangs being created are: see PrepareInventory. REQUIRES: ctx.ledger.mu held.
std::vector<GpuAssignment> StandingClaims(const ReconcileContext& ctx)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(ctx.ledger.mu) {
  std::set<std::string> seen;
  return ctx.ledger.claims.StandingIntents(
      ctx.key, ctx.now, [&ctx](const std::string& key) { return LookUpClaimant(ctx, key); }, seen);
}

// Pods other jobs recorded in status.placement (or this controller reserved or nominated) that
// hold no pod yet: a controller stopped between its status write and its pod creations left
// them; they count as taken so that the job re-creating them later finds its GPUs free. Pods
// `counted` holds, and those in `seen`, are left out. REQUIRES: ctx.ledger.mu held.
std::vector<GpuAssignment> Intents(const ReconcileContext& ctx, const Inventory& counted,
                                   std::vector<GpuAssignment> standing, std::set<std::string> seen)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(ctx.ledger.mu) {
  std::vector<GpuAssignment> intents;
  // A reservation whose write's outcome the cache shows is counted by the loop over the jobs.
  for (GpuAssignment& a : standing) {
    if (!counted.Holds(a.pod) && seen.insert(a.pod).second) intents.push_back(std::move(a));
  }
  // Only a gang being created (phase Placed) holds GPUs without pods; a Running gang's missing
  // pod was lost, a Preempted one's is gone, and both are placed afresh. Kept between decisions
  // (PlacedGangs): only the gangs with pods missing from the kept inventory are visited.
  for (const auto& [key, gang] : ctx.ledger.placed_gangs.missing()) {
    if (key == ctx.key) continue;
    const api::TrainingJob& job = *gang.job;
    const Bytes memory = job.status.plan ? job.status.plan->memory_per_gpu_bytes : 0;
    for (const std::size_t i : gang.missing) {
      const api::PodPlacement& p = job.status.placement[i];
      std::string pod = api::ObjectKey{job.metadata.namespace_, p.pod}.ToString();
      if (!counted.Holds(pod) && seen.insert(std::move(pod)).second) {
        intents.push_back(AssignmentOf(job, p, memory, 0));
      }
    }
  }
  return intents;
}

// Adds `a`, refused by the kept inventory, to the decision's: a fg pod on a GPU another fg pod
// holds is counted GPU by GPU under other names (AddClashingPod) and both jobs are told; any
// other refusal is the decision's error. REQUIRES: ctx.ledger.mu held.
absl::Status AddKeptOut(const ReconcileContext& ctx, Inventory& inventory,
                        const std::shared_ptr<const GpuAssignment>& a,
                        std::set<std::string>& clashing)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(ctx.ledger.mu) {
  absl::Status s = inventory.Add(a);
  if (s.ok()) return s;
  if (!ClashesWithForeground(inventory, *a)) return s;
  clashing.insert(a->pod);
  const std::set<std::string> jobs = AddClashingPod(inventory, *a);
  absl::MutexLock clash_lock(&ctx.ledger.clash_mu);
  ctx.ledger.gpu_clash_jobs.insert(jobs.begin(), jobs.end());
  return absl::OkStatus();
}

// The inventory as every other pod holds it, for one decision: the ledger's kept inventory
// brought up to date, and in `trial` (undone when it ends) the job's own pods taken out, the
// pods it keeps out and the intents put in. REQUIRES: ctx.ledger.mu held.
absl::Status PrepareInventory(const ReconcileContext& ctx, const GpuNodeList& nodes,
                              std::optional<LiveInventory::Trial>& trial)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(ctx.ledger.mu) {
  WAVEPOOL_RETURN_IF_ERROR(ctx.ledger.inventory.Sync(
      ctx.reader, nodes, NodeStatesWithHeartbeats(ctx, nodes), ctx.options.placement));
  // The reservations first, then the gangs being created: both read the job cache, and a job
  // whose intent write the cache shows between the two reads is then counted by both (its pods
  // once) rather than by neither (its reservation dropped for the newer version while the list
  // of gangs, read before, lacks it). Several workers make that window real.
  std::vector<GpuAssignment> standing = StandingClaims(ctx);
  ctx.ledger.placed_gangs.Sync(ctx.reader, ctx.ledger.inventory);
  trial.emplace(ctx.ledger.inventory);
  Inventory& inventory = trial->inventory();
  std::set<std::string> own_current;
  const std::int64_t ranks = std::max<std::int64_t>(
      ctx.job.spec.gpus.value_or(1), static_cast<std::int64_t>(ctx.job.status.placement.size()));
  for (std::int64_t r = 0; r < ranks; ++r) {
    std::string pod =
        api::ObjectKey{ctx.ns(), PodName(ctx.name(), ctx.job.status.gang_generation, r)}.ToString();
    inventory.Remove(pod).IgnoreError();  // NotFound: the pod holds nothing yet.
    own_current.insert(std::move(pod));
  }
  std::set<std::string> clashing;  // Counted GPU by GPU, under other names (AddClashingPod).
  for (const auto& [key, a] : ctx.ledger.inventory.kept_out()) {
    if (own_current.count(a->pod) > 0) continue;
    WAVEPOOL_RETURN_IF_ERROR(AddKeptOut(ctx, inventory, a, clashing));
  }
  for (GpuAssignment& intent : Intents(ctx, inventory, std::move(standing), std::move(clashing))) {
    // An intent that clashes with a real pod lost its GPU: its job re-places when it looks.
    inventory.Add(std::make_shared<const GpuAssignment>(std::move(intent))).IgnoreError();
  }
  return absl::OkStatus();
}

// Annotates and deletes the victims still running; the gang waits until they are gone.
// REQUIRES: ctx.ledger.mu held.
absl::Status Preempt(ReconcileContext& ctx, const std::vector<Preemption>& victims)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(ctx.ledger.mu) {
  for (const Preemption& v : victims) {
    const absl::StatusOr<api::ObjectKey> job = api::ObjectKey::Parse(v.job);
    const absl::StatusOr<api::ObjectKey> pod = api::ObjectKey::Parse(v.pod);
    if (!job.ok() || !pod.ok()) continue;  // No such pod to stop.
    std::optional<kube::Pod> found;
    for (kube::Pod& p : ctx.reader.PodsOfJob(job->namespace_, job->name)) {
      if (PodNameOf(p) == pod->name) found = std::move(p);
    }
    if (!found.has_value() || IsTerminating(*found)) continue;
    // The annotation first: the victim's own reconcile reads it to report Preempted rather than
    // a lost pod.
    absl::Status s = ctx.writer.AnnotatePod(pod->namespace_, pod->name,
                                            {{std::string(kAnnotationPreemptedBy), ctx.key}});
    if (s.ok()) {
      // Remembered before the deletion: the victim's reconcile may see the pod gone at once.
      ctx.ledger.claims.RememberPreempted(v.pod, v.job, ctx.key, ctx.now);
      s = ctx.writer.DeletePod(pod->namespace_, pod->name, found->metadata.uid,
                               std::nullopt);  // Its grace: checkpoint time.
    }
    if (!s.ok() && s.code() != absl::StatusCode::kNotFound) return s;
    if (s.ok() && ctx.metrics != nullptr) ctx.metrics->CountPreemption();
  }
  return absl::OkStatus();
}

struct Decision {
  std::vector<RankPlacement> ranks;
  std::vector<Preemption> preemptions;
};

// A background job's decision places the jobs queued ahead of it in `inventory` first.
absl::StatusOr<Decision> Decide(const ReconcileContext& ctx, const JobPlan& plan,
                                Inventory& inventory) ABSL_EXCLUSIVE_LOCKS_REQUIRED(ctx.ledger.mu) {
  if (ctx.foreground()) {
    ForegroundRequest request;
    request.job = ctx.key;
    request.gpus = plan.plan.gpus;
    request.memory_per_gpu_bytes = plan.memory_per_gpu_bytes;
    request.exclusive =
        !ctx.job.spec.collocation.allow_background.value_or(api::kDefaultAllowBackground);
    WAVEPOOL_ASSIGN_OR_RETURN(ForegroundPlacement placed, PlaceForeground(request, inventory));
    return Decision{placed.ranks, placed.preemptions};
  }
  const int ahead = PlaceQueuedEarlier(ctx, inventory);
  absl::StatusOr<BackgroundPlacement> placed =
      PlaceBackground({ctx.key, plan.memory_per_gpu_bytes,
                       ctx.ledger.quarantine.NodesFor(ctx.key, ctx.job.metadata.uid, ctx.now)},
                      inventory);
  if (!placed.ok() && ahead > 0 && IsNotPlaceable(placed.status())) {
    return absl::ResourceExhaustedError(
        absl::StrCat(placed.status().message(), "; ", ahead,
                     " background job(s) queued earlier are placed first"));
  }
  if (!placed.ok()) return placed.status();
  return Decision{{RankPlacement{0, placed->node, placed->gpu_index, placed->gpu_uuid}}, {}};
}

ReconcileResult Waiting(ReconcileContext& ctx, std::string_view reason, std::string_view message) {
  SetCondition(ctx, api::kConditionPlaced, ConditionStatus::kFalse, reason, message);
  // A preempted job stays Preempted until its new pods exist.
  const bool preempted = ConditionIs(ctx, api::kConditionPreempted, ConditionStatus::kTrue);
  ctx.job.status.phase = preempted ? api::JobPhase::kPreempted : api::JobPhase::kPlanned;
  ReconcileResult result;
  result.requeue_after = ctx.options.waiting_requeue;
  result.waiting_for_gpus = true;
  return result;
}

void ObserveLatency(const ReconcileContext& ctx) {
  // Creation to first placement only: a restarted gang would measure the job's age instead.
  if (ctx.metrics == nullptr || ctx.job.status.gang_generation != 0) return;
  const auto created = api::ParseRfc3339(ctx.job.metadata.creation_timestamp);
  if (!created.ok()) return;
  ctx.metrics->ObservePlacementLatency(ctx.job.spec.role.value_or(api::Role::kForeground),
                                       Seconds(ctx.now - *created));
}

// A gang that nominated GPUs (its victims stopping) may find them not quite usable the moment
// the victims are gone: the agent's last report still shows their memory in use until its next
// heartbeat. Placed elsewhere at once, it would spread over more nodes than it chose; instead
// it keeps its nomination and waits kNominationHold from the first decision that strayed, then
// takes what it can get. `decision` is nullptr when nothing fits now: the nomination is kept for
// the same while (or a victim's job would be placed right back onto those GPUs). The wait when
// holding, nullopt otherwise. REQUIRES: ctx.ledger.mu held.
std::optional<ReconcileResult> HoldNomination(ReconcileContext& ctx, const Decision* decision)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(ctx.ledger.mu) {
  std::optional<Nomination> nomination = ctx.ledger.claims.NominationOf(ctx.key);
  if (!nomination.has_value() || ctx.now > nomination->expires ||
      nomination->uid != ctx.job.metadata.uid ||
      nomination->generation != ctx.job.metadata.generation) {
    return std::nullopt;
  }
  std::set<std::string> nominated_nodes;
  for (const GpuAssignment& a : nomination->pods) nominated_nodes.insert(a.node);
  std::set<std::string> decided_nodes;
  if (decision != nullptr) {
    for (const RankPlacement& r : decision->ranks) decided_nodes.insert(r.node);
    if (decided_nodes.size() <= nominated_nodes.size()) return std::nullopt;
  }
  if (!nomination->strayed_since.has_value()) {
    nomination->strayed_since = ctx.now;
    ctx.ledger.claims.Nominate(ctx.key, *nomination);
  }
  const auto held = ctx.now - *nomination->strayed_since;
  if (held >= kNominationHold) return std::nullopt;
  ReconcileResult result = Waiting(
      ctx, kReasonPreempting,
      absl::StrCat("waiting up to ", kNominationHold.count(), "s for the GPUs nominated on ",
                   absl::StrJoin(nominated_nodes, ", "),
                   decision == nullptr ? " to free (nothing else fits)"
                                       : absl::StrCat(" to free rather than spreading over ",
                                                      absl::StrJoin(decided_nodes, ", "))));
  result.requeue_after = std::min<std::chrono::nanoseconds>(
      SoonRequeue(ctx.options),
      std::chrono::duration_cast<std::chrono::nanoseconds>(kNominationHold - held));
  return result;
}

// What placing decided: a wait (nothing placeable, victims to stop first) or a reservation.
struct PlaceOutcome {
  std::optional<ReconcileResult> wait;
  Reservation reservation;
};

// Decides where the job goes. REQUIRES: ctx.ledger.mu held.
absl::StatusOr<PlaceOutcome> DecideReservation(ReconcileContext& ctx, const JobPlan& plan,
                                               const GpuNodeList& nodes)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(ctx.ledger.mu) {
  const api::Role role = ctx.job.spec.role.value_or(api::Role::kForeground);
  absl::StatusOr<Decision> decision;
  {
    std::optional<LiveInventory::Trial> trial;
    WAVEPOOL_RETURN_IF_ERROR(PrepareInventory(ctx, nodes, trial));
    const auto start = ctx.options.clock->Now();
    decision = Decide(ctx, plan, trial->inventory());
    if (ctx.metrics != nullptr) {
      ctx.metrics->ObservePlacementDecision(
          role, std::chrono::nanoseconds(ctx.options.clock->Now() - start));
    }
  }
  if (!decision.ok()) {
    const bool waits = IsNotPlaceable(decision.status());
    if (ctx.metrics != nullptr) {
      ctx.metrics->CountPlacementFailure(role, waits ? "not_placeable" : "error");
    }
    if (!waits) return decision.status();
    if (ctx.foreground()) {
      if (std::optional<ReconcileResult> hold = HoldNomination(ctx, nullptr)) {
        return PlaceOutcome{hold, {}};
      }
    }
    ctx.ledger.claims.DropNomination(ctx.key);  // Nothing to wait for any more.
    return PlaceOutcome{Waiting(ctx, kNotPlaceableReason, std::string(decision.status().message())),
                        {}};
  }
  if (ctx.foreground()) {
    if (std::optional<ReconcileResult> hold = HoldNomination(ctx, &*decision)) {
      return PlaceOutcome{hold, {}};
    }
  }
  Reservation reservation;
  for (const RankPlacement& r : decision->ranks) {
    api::PodPlacement p{
        PodName(ctx.name(), ctx.job.status.gang_generation, r.rank), r.node, {r.gpu_uuid}};
    reservation.pods.push_back(
        AssignmentOf(ctx.job, p, plan.memory_per_gpu_bytes, plan.idle_fraction));
    reservation.placement.push_back(std::move(p));
  }
  if (decision->preemptions.empty()) return PlaceOutcome{std::nullopt, std::move(reservation)};
  // Nominated first: no other decision takes these GPUs while the victims stop.
  std::set<std::string> node_names;
  for (const api::PodPlacement& p : reservation.placement) node_names.insert(p.node);
  ctx.ledger.claims.Nominate(
      ctx.key,
      Nomination{
          ctx.job.metadata.uid, ctx.job.metadata.generation, std::move(reservation.pods),
          ctx.now + std::chrono::seconds(ctx.options.objects.background_termination_grace_seconds) +
              kNominationSlack,
          std::nullopt});
  WAVEPOOL_RETURN_IF_ERROR(Preempt(ctx, decision->preemptions));
  std::vector<std::string> pods;
  for (const Preemption& p : decision->preemptions) pods.push_back(p.pod);
  ReconcileResult result = Waiting(
      ctx, kReasonPreempting,
      absl::StrCat("waiting for ", pods.size(),
                   " background pod(s) to stop (checkpoint, exit): ", absl::StrJoin(pods, ", "),
                   "; GPUs nominated on ", absl::StrJoin(node_names, ", ")));
  // Also retried as soon as GPUs are freed (the victims gone).
  result.requeue_after = SoonRequeue(ctx.options);
  return PlaceOutcome{result, {}};
}

// The pod that keeps this job's pod off `gpu`, if any, by the rules placement.h decides with:
// one fg pod per GPU, no bg pod beside a fg job that wants its GPUs alone, at most
// max_background_per_gpu bg pods. REQUIRES: ctx.ledger.mu held.
std::optional<std::string> TakenBy(const ReconcileContext& ctx, const Inventory& inventory,
                                   const Inventory::Gpu& gpu)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(ctx.ledger.mu) {
  const bool exclusive = ctx.foreground() && !ctx.job.spec.collocation.allow_background.value_or(
                                                 api::kDefaultAllowBackground);
  int background = 0;
  for (const std::size_t h : gpu.holders) {
    const GpuAssignment& holder = inventory.assignment(h);
    const bool holder_fg = holder.role == api::Role::kForeground;
    background += holder_fg ? 0 : 1;
    const bool clash =
        ctx.foreground() ? holder_fg || exclusive : holder_fg && !AdmitsBackground(holder);
    const bool full = !ctx.foreground() && background >= inventory.options().max_background_per_gpu;
    if (clash || full) return holder.pod;
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<std::optional<ReconcileResult>> PlaceJob(ReconcileContext& ctx, const JobPlan& plan,
                                                        const GpuNodeList& nodes) {
  absl::MutexLock lock(&ctx.ledger.mu);
  Reservation reservation;
  const std::optional<Reservation> earlier = ctx.ledger.claims.ReservationOf(ctx.key);
  if (earlier.has_value() && KnownBefore(*earlier, ctx.job.metadata.resource_version)) {
    // The last intent write failed, perhaps only on the way back, and the cache shows the job as
    // it was then: the same placement again. Fenced on the same version, this write fails if the
    // first one was applied, and the cache brings that placement soon.
    reservation = *earlier;
    ctx.job.status.gang_generation = reservation.gang_generation;
  } else {
    SkipForeignGenerations(ctx);
    WAVEPOOL_ASSIGN_OR_RETURN(PlaceOutcome outcome, DecideReservation(ctx, plan, nodes));
    if (outcome.wait.has_value()) return std::optional<ReconcileResult>(outcome.wait);
    reservation = std::move(outcome.reservation);
    reservation.gang_generation = ctx.job.status.gang_generation;
  }
  reservation.resource_versions.insert(reservation.resource_versions.end(), ctx.versions.begin(),
                                       ctx.versions.end());
  std::set<std::string> node_names;
  for (const api::PodPlacement& p : reservation.placement) node_names.insert(p.node);
  ctx.job.status.placement = reservation.placement;
  ctx.ledger.claims.Reserve(ctx.key, std::move(reservation));
  ctx.job.status.phase = api::JobPhase::kPlaced;
  SetCondition(
      ctx, api::kConditionPlaced, ConditionStatus::kTrue, "GangPlaced",
      absl::StrCat(ctx.job.status.placement.size(), " pod(s) on ", absl::StrJoin(node_names, ", "),
                   ", gang generation ", ctx.job.status.gang_generation));
  // The intent record: written before any pod exists, so that a controller stopped between
  // pod creations re-creates exactly the missing ones. The reservation stays when it fails.
  WAVEPOOL_RETURN_IF_ERROR(WriteStatus(ctx));
  ctx.ledger.claims.DropNomination(ctx.key);  // The reservation holds the GPUs from now on.
  ObserveLatency(ctx);
  return std::optional<ReconcileResult>();
}

std::optional<std::string> RecordedPlacementConflict(ReconcileContext& ctx, const JobPlan& plan,
                                                     const std::vector<kube::Pod>& pods,
                                                     const GpuNodeList& nodes) {
  std::set<std::string> existing;
  for (const kube::Pod& pod : pods) existing.insert(PodNameOf(pod));
  bool missing = false;
  for (const api::PodPlacement& p : ctx.job.status.placement) missing |= existing.count(p.pod) == 0;
  if (!missing) return std::nullopt;
  const std::string service = GangServiceName(ctx.name(), ctx.job.status.gang_generation);
  for (const kube::Service& s : ctx.reader.ServicesOfJob(ctx.ns(), ctx.name())) {
    if (s.metadata.name == service && !IsControlledBy(s.metadata, ctx.job.metadata.uid)) {
      const std::string message =
          absl::StrCat("Service ", ctx.ns(), "/", service,
                       " exists but is not owned by this job: left alone, the gang moves to a "
                       "new generation");
      QueueEvent(ctx, /*warning=*/true, kReasonNameClash, message);
      return message;
    }
  }
  absl::MutexLock lock(&ctx.ledger.mu);
  std::optional<LiveInventory::Trial> trial;
  // An error is decided when placing; nothing to compare with.
  if (!PrepareInventory(ctx, nodes, trial).ok()) return std::nullopt;
  const Inventory& inventory = trial->inventory();
  for (const api::PodPlacement& p : ctx.job.status.placement) {
    if (existing.count(p.pod) > 0) continue;
    const std::string& uuid = p.gpu_uuids.empty() ? std::string() : p.gpu_uuids.front();
    const Inventory::Gpu* gpu = inventory.FindGpu(uuid);
    if (gpu == nullptr) return absl::StrCat("GPU ", uuid, " of pod ", p.pod, " is gone");
    if (!gpu->schedulable) {
      return absl::StrCat("node ", gpu->node, " of pod ", p.pod, " takes no new pods");
    }
    if (std::optional<std::string> taken_by = TakenBy(ctx, inventory, *gpu)) {
      return absl::StrCat("GPU ", uuid, " of pod ", p.pod, " is taken by ", *taken_by);
    }
    if (inventory.HeadroomBytes(*gpu) < plan.memory_per_gpu_bytes) {
      return absl::StrCat("GPU ", uuid, " of pod ", p.pod, " has no room left");
    }
  }
  return std::nullopt;
}

absl::StatusOr<std::optional<RejectedPod>> CreateMissingPods(
    ReconcileContext& ctx, const JobPlan& plan, const std::vector<kube::Pod>& pods,
    const std::vector<api::GpuNode>& nodes) {
  std::set<std::string> existing;
  for (const kube::Pod& pod : pods) existing.insert(PodNameOf(pod));
  // The index of each GPU a missing pod takes, looked up on the nodes of those pods alone.
  std::map<std::string, std::int64_t> index_of;
  std::set<std::string_view> on_nodes;
  for (const api::PodPlacement& p : ctx.job.status.placement) {
    if (existing.count(p.pod) > 0) continue;
    on_nodes.insert(p.node);
    for (const std::string& uuid : p.gpu_uuids) index_of.emplace(uuid, 0);
  }
  for (const api::GpuNode& node : nodes) {
    if (on_nodes.count(node.spec.node_name) == 0) continue;
    for (const api::GpuStatus& gpu : node.status.gpus) {
      if (const auto it = index_of.find(gpu.uuid); it != index_of.end()) it->second = gpu.index;
    }
  }
  // The gang's Service first: a rank that starts must find rank 0's store by name.
  WAVEPOOL_RETURN_IF_ERROR(EnsureGangService(ctx));
  const auto& placement = ctx.job.status.placement;
  for (std::size_t rank = 0; rank < placement.size(); ++rank) {
    const api::PodPlacement& p = placement[rank];
    if (existing.count(p.pod) > 0) continue;
    WAVEPOOL_RETURN_IF_ERROR(FenceOnJob(ctx));
    PodAssignment assignment;
    assignment.rank = static_cast<std::int64_t>(rank);
    assignment.node_name = p.node;
    assignment.gpu_uuids = p.gpu_uuids;
    for (const std::string& uuid : p.gpu_uuids) assignment.gpu_indices.push_back(index_of[uuid]);
    WAVEPOOL_ASSIGN_OR_RETURN(
        json pod, BuildPod(ctx.job, plan.plan, assignment, ctx.job.status.gang_generation,
                           ctx.options.objects));
    absl::StatusOr<json> created = ctx.writer.CreatePod(pod);
    if (!created.ok() && kube::IsInvalid(created.status())) {
      // The same template builds the same pod on every retry: retrying would hold the gang's
      // GPUs for pods that are never created.
      const std::optional<kube::ApiStatus> api = kube::ApiStatusOf(created.status());
      return std::optional<RejectedPod>(
          RejectedPod{p.pod, api.has_value() && !api->message.empty()
                                 ? api->message
                                 : std::string(created.status().message())});
    }
    if (!created.ok() && created.status().code() != absl::StatusCode::kAlreadyExists) {
      return created.status();
    }
  }
  ReleaseReservation(ctx);
  return std::optional<RejectedPod>();
}

// Under the ledger's mutex, like every decision: a decision reads the pods (the kept inventory's
// sync) before the reservations (PrepareInventory), so a reservation dropped between those reads,
// its pods created just after the first, would be counted by neither while the job cache still
// shows the job without its placement. Serialised, a decision sees the reservation or, the release
// being after the pods' creation, the pods.
void ReleaseReservation(ReconcileContext& ctx) {
  absl::MutexLock lock(&ctx.ledger.mu);
  ctx.ledger.claims.Release(ctx.key);
}

void ForgetJob(PlacementLedger& ledger, const std::string& key) {
  absl::MutexLock lock(&ledger.mu);  // As ReleaseReservation: no claim ends mid-decision.
  ledger.claims.ForgetJob(key);
  ForgetGpuClash(ledger, key);
}

std::optional<std::string> RememberedPreemptor(ReconcileContext& ctx, const std::string& pod) {
  return ctx.ledger.claims.PreemptorOf(absl::StrCat(ctx.ns(), "/", pod), ctx.key);
}

}  // namespace wavepool::controller::internal
