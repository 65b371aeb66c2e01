// Observing a job's current gang: succeeded, preempted, failed or lost pods, and the restarts
// they lead to (reconcile_context.h; docs/controller.md "Failures").
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "reconcile/reconcile_context.h"
#include "wavepool/api/object_key.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/controller/owned_objects.h"

namespace wavepool::controller::internal {
namespace {

using api::ConditionStatus;

// What the look at the gang found, most decisive first.
struct Finding {
  enum Kind {
    kNothing,
    kSucceeded,
    kPreempted,
    kPreemptedGone,
    kCheating,
    kFailed,
    kLost
  } kind = kNothing;
  std::string pod;
  std::string detail;  // For conditions, Events.
  // kPreempted: "<ns>/<job>" of the preempting gang; kCheating: the node it was caught on.
  std::string by;
  std::string metric;  // kCheating, kFailed, kLost: the gang restart reason label.
};

// The pods of this namespace that a GPUNode's BackgroundCheating condition names, with the node
// of that GPUNode. Foreground jobs are never judged (the agent flags only background tasks).
std::map<std::string, std::string> CheatingPodsOf(const ReconcileContext& ctx,
                                                  const std::vector<api::GpuNode>& nodes) {
  std::map<std::string, std::string> flagged;
  if (ctx.foreground()) return flagged;
  for (const api::GpuNode& node : nodes) {
    for (const std::string& key : api::CheatingPods(node.status)) {
      const absl::StatusOr<api::ObjectKey> pod = api::ObjectKey::Parse(key);
      if (pod.ok() && !pod->namespace_.empty() && pod->namespace_ == ctx.ns()) {
        flagged[pod->name] = node.spec.node_name;
      }
    }
  }
  return flagged;
}

// "exit code 137 (OOMKilled)" or the pod's own reason ("Evicted: ...").
std::string FailureOf(const kube::Pod& pod) {
  for (const kube::ContainerStatus& c : pod.status.container_statuses) {
    const kube::ContainerState& state = c.state;
    if (state.phase == kube::ContainerState::Phase::kTerminated && state.exit_code != 0) {
      std::string text = absl::StrCat("container ", c.name, " exit code ", state.exit_code);
      if (!state.reason.empty()) absl::StrAppend(&text, " (", state.reason, ")");
      return text;
    }
  }
  std::string text = pod.status.reason;
  if (!pod.status.message.empty()) absl::StrAppend(&text, ": ", pod.status.message);
  return text.empty() ? "phase Failed" : text;
}

// Why a running pod is lost to the infrastructure, or nullopt.
std::optional<Finding> LostPod(const ReconcileContext& ctx, const kube::Pod& pod,
                               const std::map<std::string, NodeState>& states) {
  const std::string& name = PodNameOf(pod);
  const std::string& node = pod.spec.node_name;
  const auto state = states.find(node);
  if (state == states.end() || !state->second.ready) {
    return Finding{Finding::kLost, name, absl::StrCat("node ", node, " is not Ready"), "",
                   "node_lost"};
  }
  if (!state->second.heartbeat_fresh) {
    return Finding{Finding::kLost, name,
                   absl::StrCat("the agent on node ", node, " stopped sending heartbeats"), "",
                   "heartbeat_lost"};
  }
  if (IsTerminating(pod)) {
    return Finding{Finding::kLost, name, "deleted while the job ran", "", "pod_deleted"};
  }
  const std::chrono::seconds timeout = ctx.options.start_timeout;
  if (timeout.count() > 0 && PodPhaseOf(pod) != "Running") {
    const auto created = api::ParseRfc3339(pod.metadata.creation_timestamp);
    if (created.ok() && ctx.now - *created > timeout) {
      return Finding{Finding::kLost, name,
                     absl::StrCat("not Running ", timeout.count(), " s after its creation"), "",
                     "start_timeout"};
    }
  }
  return std::nullopt;
}

// A running pod of the gang that its node's agent caught using the GPU outside its launch gate
// on the node the pod runs on.
std::optional<Finding> CheatingPod(const ReconcileContext& ctx,
                                   const std::map<std::string, const kube::Pod*>& current,
                                   const std::map<std::string, std::string>& cheating) {
  for (const api::PodPlacement& p : ctx.job.status.placement) {
    const auto it = current.find(p.pod);
    const auto flagged = cheating.find(p.pod);
    if (it == current.end() || flagged == cheating.end() || IsTerminating(*it->second) ||
        PodPhaseOf(*it->second) != "Running" || it->second->spec.node_name != flagged->second) {
      continue;
    }
    return Finding{Finding::kCheating, p.pod,
                   absl::StrCat("used the GPU beyond what its launch gate allowed on node ",
                                flagged->second, " (GPUNode condition BackgroundCheating)"),
                   flagged->second, "cheating"};
  }
  return std::nullopt;
}

Finding Look(ReconcileContext& ctx, const std::map<std::string, const kube::Pod*>& current,
             const std::map<std::string, NodeState>& states,
             const std::map<std::string, std::string>& cheating) {
  const auto& placement = ctx.job.status.placement;
  std::size_t succeeded = 0;
  for (const api::PodPlacement& p : placement) {
    const auto it = current.find(p.pod);
    // The annotation, or what the preemptor remembered: the pod may be gone (and its
    // annotation with it) before this job's reconcile looks.
    std::optional<std::string> by = RememberedPreemptor(ctx, p.pod);
    if (it == current.end()) {
      if (by.has_value()) return {Finding::kPreemptedGone, p.pod, "", *by, ""};
      continue;
    }
    if (std::optional<std::string> annotated = PodAnnotation(*it->second, kAnnotationPreemptedBy)) {
      by = std::move(annotated);
    }
    if (by.has_value()) {
      const std::string phase = PodPhaseOf(*it->second);
      if (phase == "Succeeded" || phase == "Failed") {
        return {Finding::kPreemptedGone, p.pod, "", *by, ""};
      }
      return {Finding::kPreempted, p.pod, "", *by, ""};
    }
    if (PodPhaseOf(*it->second) == "Succeeded") ++succeeded;
  }
  if (succeeded == placement.size()) return {Finding::kSucceeded, "", "", "", ""};
  if (std::optional<Finding> cheater = CheatingPod(ctx, current, cheating)) return *cheater;
  for (const api::PodPlacement& p : placement) {
    const auto it = current.find(p.pod);
    if (it != current.end() && PodPhaseOf(*it->second) == "Failed") {
      return {Finding::kFailed, p.pod, FailureOf(*it->second), "", "pod_failed"};
    }
  }
  // Phase Preempted: the gang was seen preempted (a gang placed again after a preemption keeps
  // Preempted=True until its pods exist, and its missing pods are created below).
  const bool preempted_before =
      ConditionIs(ctx, api::kConditionPreempted, ConditionStatus::kTrue) &&
      ctx.job.status.phase == api::JobPhase::kPreempted;
  for (const api::PodPlacement& p : placement) {
    const auto it = current.find(p.pod);
    if (it == current.end()) {
      // Gone after a preemption we saw: place again. Gone while the gang ran: someone deleted
      // it. Gone before: not created yet (a reconcile stopped half-way), created below.
      if (preempted_before) return {Finding::kPreemptedGone, p.pod, "", "", ""};
      if (ctx.job.status.phase == api::JobPhase::kRunning) {
        return {Finding::kLost, p.pod, "deleted while the job ran", "", "pod_deleted"};
      }
      continue;
    }
    if (PodPhaseOf(*it->second) == "Succeeded") continue;
    if (std::optional<Finding> lost = LostPod(ctx, *it->second, states)) return *lost;
  }
  return {};
}

// What happened to the pod of a counted restart: "failed (exit code 1)", or what it did.
std::string WhatHappened(const Finding& f) {
  return f.kind == Finding::kCheating ? f.detail : absl::StrCat("failed (", f.detail, ")");
}

// The job fails: past spec.backoffLimit. Failed pods stay for their logs.
absl::StatusOr<ReconcileResult> FailJob(ReconcileContext& ctx, const Finding& f,
                                        const std::vector<kube::Pod>& gang) {
  const std::string message = absl::StrCat(
      "pod ", f.pod, " ", WhatHappened(f), "; ", ctx.job.status.restarts,
      " restarts reached spec.backoffLimit (", ctx.job.spec.backoff_limit.value_or(0), ")");
  ctx.job.status.phase = api::JobPhase::kFailed;
  SetCondition(ctx, api::kConditionFailed, ConditionStatus::kTrue, kReasonBackoffLimitExceeded,
               message);
  SetCondition(ctx, api::kConditionRunning, ConditionStatus::kFalse, kReasonBackoffLimitExceeded,
               message);
  WAVEPOOL_RETURN_IF_ERROR(WriteStatus(ctx));
  WAVEPOOL_RETURN_IF_ERROR(DeletePods(ctx, gang, /*keep_finished=*/true));
  return ReconcileResult{};
}

// Status first (the next gang's generation and the restart count), then the old gang goes: a
// controller stopped in between finds the old pods at an old generation and deletes them.
absl::StatusOr<ReconcileResult> RestartGang(ReconcileContext& ctx, const Finding& f,
                                            const std::vector<kube::Pod>& gang) {
  const bool counted = f.kind == Finding::kFailed || f.kind == Finding::kCheating;
  if (counted && ctx.job.status.restarts + 1 > ctx.job.spec.backoff_limit.value_or(0)) {
    return FailJob(ctx, f, gang);
  }
  if (counted) ++ctx.job.status.restarts;
  ++ctx.job.status.gang_generation;
  ctx.job.status.placement.clear();
  ctx.job.status.phase = api::JobPhase::kPending;
  std::string message =
      counted
          ? absl::StrCat("pod ", f.pod, " ", WhatHappened(f), ": restart ", ctx.job.status.restarts,
                         " of at most ", ctx.job.spec.backoff_limit.value_or(0), " after ",
                         RestartBackoff(ctx.options, ctx.job.status.restarts).count(), " s")
          : absl::StrCat("pod ", f.pod, " lost (", f.detail,
                         "): gang restarted, not counted against spec.backoffLimit");
  const bool cheating = f.kind == Finding::kCheating;
  if (cheating) {
    absl::StrAppend(&message, ", kept off node ", f.by, " for ",
                    ctx.options.cheating_quarantine.count(), " s");
  }
  SetCondition(ctx, api::kConditionPlaced, ConditionStatus::kFalse,
               cheating  ? kReasonLaunchesOutsideGate
               : counted ? kReasonRestartBackoff
                         : kReasonGangRestart,
               message);
  SetCondition(ctx, api::kConditionRunning, ConditionStatus::kFalse, kReasonGangRestart, message);
  QueueEvent(ctx, true, cheating ? kReasonLaunchesOutsideGate : kReasonGangRestart, message);
  WAVEPOOL_RETURN_IF_ERROR(WriteStatus(ctx));
  if (ctx.metrics != nullptr) ctx.metrics->CountGangRestart(f.metric);
  WAVEPOOL_RETURN_IF_ERROR(DeletePods(ctx, gang, /*keep_finished=*/false));
  ReconcileResult result;
  result.requeue_after =
      counted ? std::chrono::nanoseconds(RestartBackoff(ctx.options, ctx.job.status.restarts))
              : std::chrono::nanoseconds(0);
  return result;
}

}  // namespace

const std::string& PodNameOf(const kube::Pod& pod) { return pod.metadata.name; }

const std::string& PodPhaseOf(const kube::Pod& pod) { return pod.status.phase; }

bool IsTerminating(const kube::Pod& pod) { return !pod.metadata.deletion_timestamp.empty(); }

std::optional<std::string> PodAnnotation(const kube::Pod& pod, std::string_view key) {
  const auto found = pod.metadata.annotations.find(std::string(key));
  if (found == pod.metadata.annotations.end()) return std::nullopt;
  return found->second;
}

std::int64_t GangGenerationOf(const api::ObjectMeta& metadata) {
  const auto found = metadata.labels.find(std::string(kLabelGangGeneration));
  std::int64_t generation = -1;
  if (found == metadata.labels.end() || !absl::SimpleAtoi(found->second, &generation)) {
    return -1;
  }
  return generation;
}

std::int64_t GangGenerationOf(const kube::Pod& pod) { return GangGenerationOf(pod.metadata); }

absl::Status DeletePods(ReconcileContext& ctx, const std::vector<kube::Pod>& pods,
                        bool keep_finished) {
  for (const kube::Pod& pod : pods) {
    if (IsTerminating(pod)) continue;
    const std::string& phase = PodPhaseOf(pod);
    if (keep_finished && (phase == "Succeeded" || phase == "Failed")) continue;
    const absl::Status s =
        ctx.writer.DeletePod(ctx.ns(), PodNameOf(pod), pod.metadata.uid, std::nullopt);
    if (!s.ok() && s.code() != absl::StatusCode::kNotFound) return s;
  }
  return absl::OkStatus();
}

NodeStateMap NodeStatesWithHeartbeats(const ReconcileContext& ctx, const GpuNodeList& nodes) {
  const NodeStateMap from = ctx.reader.SharedNodeStates();
  PlacementLedger& ledger = ctx.ledger;
  HeartbeatObservations& heartbeats = ledger.heartbeats;
  const std::chrono::nanoseconds timeout = ctx.options.heartbeat_timeout;
  absl::MutexLock lock(&ledger.node_states_mu);
  PlacementLedger::NodeStatesMemo& memo = ledger.node_states;
  const HeartbeatChanges changes = ctx.reader.GpuNodeHeartbeatsSince(memo.heartbeats_version);
  memo.heartbeats_version = changes.version;
  bool again = memo.states == nullptr || memo.nodes != nodes || memo.from != from ||
               changes.complete || ctx.now < memo.computed_at || ctx.now > memo.fresh_until;
  std::set<std::string> listed;  // Every GPUNode, when the changes are complete.
  for (const auto& [name, time] : changes.changed) {
    if (time == nullptr) {  // Deleted: forgotten, so that one that comes back is judged afresh.
      heartbeats.Forget(name);
      continue;
    }
    if (changes.complete) listed.insert(name);
    // The value is compared as an opaque token: when it changes on the controller's clock, not
    // what time the node's clock wrote into it (heartbeat_observations.h). While the kept states
    // hold, a verdict that changes makes them other ones; a fresh node that beats again only
    // stays fresh for longer, so fresh_until still holds.
    const bool was_fresh = heartbeats.FreshUntil(name, ctx.now, timeout).has_value();
    if (heartbeats.ObserveFresh(name, *time, ctx.now, timeout) != was_fresh) again = true;
  }
  if (changes.complete) heartbeats.RetainOnly(listed);
  if (!again) return memo.states;

  auto states = std::make_shared<std::map<std::string, NodeState>>(*from);
  WallTime fresh_until = WallTime::max();
  for (const api::GpuNode& node : *nodes) {
    const std::optional<WallTime> until =
        heartbeats.FreshUntil(node.metadata.name, ctx.now, timeout);
    if (until.has_value()) fresh_until = std::min(fresh_until, *until);
    const auto it = states->find(node.spec.node_name);
    if (it != states->end()) it->second.heartbeat_fresh = until.has_value();
  }
  memo.nodes = nodes;
  memo.from = from;
  memo.computed_at = ctx.now;
  memo.fresh_until = fresh_until;
  memo.states = std::move(states);
  return memo.states;
}

absl::StatusOr<std::optional<ReconcileResult>> ObserveGang(ReconcileContext& ctx,
                                                           const std::vector<kube::Pod>& pods,
                                                           const GpuNodeList& nodes) {
  std::map<std::string, const kube::Pod*> current;
  std::vector<kube::Pod> gang;
  for (const kube::Pod& pod : pods) {
    if (GangGenerationOf(pod) != ctx.job.status.gang_generation) continue;
    current[PodNameOf(pod)] = &pod;
    gang.push_back(pod);
  }
  const Finding f =
      Look(ctx, current, *NodeStatesWithHeartbeats(ctx, nodes), CheatingPodsOf(ctx, *nodes));
  switch (f.kind) {
    case Finding::kNothing:
      return std::optional<ReconcileResult>();
    case Finding::kSucceeded: {
      ctx.job.status.phase = api::JobPhase::kSucceeded;
      const std::string msg =
          absl::StrCat("all ", ctx.job.status.placement.size(), " pods succeeded");
      SetCondition(ctx, api::kConditionSucceeded, ConditionStatus::kTrue, "AllPodsSucceeded", msg);
      SetCondition(ctx, api::kConditionRunning, ConditionStatus::kFalse, "Completed", msg);
      ReleaseReservation(ctx);
      WAVEPOOL_RETURN_IF_ERROR(WriteStatus(ctx));
      return std::optional<ReconcileResult>(ReconcileResult{});
    }
    case Finding::kPreempted: {
      ctx.job.status.phase = api::JobPhase::kPreempted;
      const std::string msg = absl::StrCat("pod ", f.pod, " preempted by foreground job ", f.by,
                                           "; it resumes from its checkpoint once stopped");
      SetCondition(ctx, api::kConditionPreempted, ConditionStatus::kTrue, "PreemptedByForeground",
                   msg);
      SetCondition(ctx, api::kConditionRunning, ConditionStatus::kFalse, "Preempted", msg);
      WAVEPOOL_RETURN_IF_ERROR(WriteStatus(ctx));
      ReconcileResult result;
      result.requeue_after = SoonRequeue(ctx.options);
      return std::optional<ReconcileResult>(result);
    }
    case Finding::kPreemptedGone:
      // Placed again below with a new generation; it resumes from spec.checkpoint.path.
      ++ctx.job.status.gang_generation;
      ctx.job.status.placement.clear();
      ctx.job.status.phase = api::JobPhase::kPreempted;
      if (!f.by.empty()) {
        const std::string msg = absl::StrCat("pod ", f.pod, " preempted by foreground job ", f.by,
                                             "; it resumes from its checkpoint once placed again");
        SetCondition(ctx, api::kConditionPreempted, ConditionStatus::kTrue, "PreemptedByForeground",
                     msg);
        SetCondition(ctx, api::kConditionRunning, ConditionStatus::kFalse, "Preempted", msg);
      }
      ReleaseReservation(ctx);
      return std::optional<ReconcileResult>();
    case Finding::kCheating:
      // Kept off the node before the restart: the next placement must not choose it again.
      ctx.ledger.quarantine.Add(ctx.key, ctx.job.metadata.uid, f.by,
                                ctx.now + ctx.options.cheating_quarantine);
      [[fallthrough]];
    case Finding::kFailed:
    case Finding::kLost: {
      WAVEPOOL_ASSIGN_OR_RETURN(ReconcileResult result, RestartGang(ctx, f, gang));
      return std::optional<ReconcileResult>(result);
    }
  }
  return std::optional<ReconcileResult>();
}

}  // namespace wavepool::controller::internal
