#include "wavepool/controller/metrics.h"

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace wavepool::controller {
namespace {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;

// Reconciles and plans take milliseconds; placement decisions microseconds to milliseconds;
// placement latency (job created -> placed) includes waiting for GPUs, so it reaches hours.
const Histogram::BucketBoundaries& DurationBuckets() {
  static const Histogram::BucketBoundaries buckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                      0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                                      1,      2.5,     5,      10};
  return buckets;
}
const Histogram::BucketBoundaries& LatencyBuckets() {
  static const Histogram::BucketBoundaries buckets = {0.01, 0.05, 0.1, 0.25, 0.5, 1,   2.5,
                                                      5,    10,   30,  60,   300, 900, 3600};
  return buckets;
}

std::string RoleLabel(api::Role role) {
  return role == api::Role::kForeground ? "foreground" : "background";
}

// Every phase a job can be in, so that wavepool_controller_jobs has a series (possibly 0) for
// each and a dashboard's sum never misses one.
std::vector<std::string> AllPhases() {
  std::vector<std::string> phases;
  for (api::JobPhase phase :
       {api::JobPhase::kPending, api::JobPhase::kPlanned, api::JobPhase::kPlaced,
        api::JobPhase::kRunning, api::JobPhase::kSucceeded, api::JobPhase::kFailed,
        api::JobPhase::kPreempted, api::JobPhase::kSuspended}) {
    phases.emplace_back(api::ToString(phase));
  }
  return phases;
}

}  // namespace

std::string_view ToString(ReconcileOutcome outcome) {
  switch (outcome) {
    case ReconcileOutcome::kSuccess:
      return "success";
    case ReconcileOutcome::kRequeue:
      return "requeue";
    case ReconcileOutcome::kConflict:
      return "conflict";
    case ReconcileOutcome::kError:
      return "error";
  }
  return "error";
}

struct ControllerMetrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  Family<Counter>& reconciles = prometheus::BuildCounter()
                                    .Name("wavepool_controller_reconciles_total")
                                    .Help("TrainingJob reconciles, by result.")
                                    .Register(*registry);
  Family<Counter>& errors = prometheus::BuildCounter()
                                .Name("wavepool_controller_reconcile_errors_total")
                                .Help("Reconciles that failed, by status code.")
                                .Register(*registry);
  Family<Histogram>& reconcile_duration =
      prometheus::BuildHistogram()
          .Name("wavepool_controller_reconcile_duration_seconds")
          .Help("Duration of one TrainingJob reconcile.")
          .Register(*registry);
  Family<Gauge>& queue_depth = prometheus::BuildGauge()
                                   .Name("wavepool_controller_queue_depth")
                                   .Help("TrainingJob keys waiting in the work queue.")
                                   .Register(*registry);
  Family<Histogram>& plan_duration = prometheus::BuildHistogram()
                                         .Name("wavepool_controller_plan_duration_seconds")
                                         .Help("Duration of planning one TrainingJob.")
                                         .Register(*registry);
  Family<Histogram>& placement_duration =
      prometheus::BuildHistogram()
          .Name("wavepool_controller_placement_duration_seconds")
          .Help("Duration of one placement decision, by role.")
          .Register(*registry);
  Family<Histogram>& placement_latency =
      prometheus::BuildHistogram()
          .Name("wavepool_controller_placement_latency_seconds")
          .Help("Time from a job's creation to its placement, by role.")
          .Register(*registry);
  Family<Counter>& placement_failures =
      prometheus::BuildCounter()
          .Name("wavepool_controller_placement_failures_total")
          .Help("Placement attempts that placed nothing, by role and reason.")
          .Register(*registry);
  Family<Counter>& placement_conflicts =
      prometheus::BuildCounter()
          .Name("wavepool_controller_placement_conflicts_total")
          .Help("Placed gangs placed afresh because their placement conflicts, by reason.")
          .Register(*registry);
  Family<Counter>& preemptions = prometheus::BuildCounter()
                                     .Name("wavepool_controller_preemptions_total")
                                     .Help("Background pods preempted for foreground gangs.")
                                     .Register(*registry);
  Family<Counter>& gang_restarts = prometheus::BuildCounter()
                                       .Name("wavepool_controller_gang_restarts_total")
                                       .Help("Gang restarts, by reason.")
                                       .Register(*registry);
  Family<Gauge>& jobs = prometheus::BuildGauge()
                            .Name("wavepool_controller_jobs")
                            .Help("TrainingJobs by status.phase.")
                            .Register(*registry);
  Family<Gauge>& leader = prometheus::BuildGauge()
                              .Name("wavepool_controller_leader")
                              .Help("1 while this replica holds the leader Lease.")
                              .Register(*registry);

  Impl() {
    // Series that exist from the start, so that rate() and absent() behave before the first
    // event.
    for (ReconcileOutcome outcome : {ReconcileOutcome::kSuccess, ReconcileOutcome::kRequeue,
                                     ReconcileOutcome::kConflict, ReconcileOutcome::kError}) {
      reconciles.Add({{"result", std::string(ToString(outcome))}});
    }
    reconcile_duration.Add({}, DurationBuckets());
    queue_depth.Add({});
    plan_duration.Add({}, DurationBuckets());
    preemptions.Add({});
    for (const std::string& phase : AllPhases()) jobs.Add({{"phase", phase}});
    leader.Add({});
  }
};

ControllerMetrics::ControllerMetrics() : impl_(std::make_unique<Impl>()) {}
ControllerMetrics::~ControllerMetrics() = default;

std::shared_ptr<prometheus::Registry> ControllerMetrics::registry() const {
  return impl_->registry;
}

void ControllerMetrics::ObserveReconcile(ReconcileOutcome outcome, Seconds duration,
                                         const absl::Status& error) {
  impl_->reconciles.Add({{"result", std::string(ToString(outcome))}}).Increment();
  impl_->reconcile_duration.Add({}, DurationBuckets()).Observe(duration.count());
  if (!error.ok()) {
    impl_->errors.Add({{"code", absl::StatusCodeToString(error.code())}}).Increment();
  }
}

void ControllerMetrics::SetQueueDepth(std::size_t depth) {
  impl_->queue_depth.Add({}).Set(static_cast<double>(depth));
}

void ControllerMetrics::ObservePlan(Seconds duration) {
  impl_->plan_duration.Add({}, DurationBuckets()).Observe(duration.count());
}

void ControllerMetrics::ObservePlacementDecision(api::Role role, Seconds duration) {
  impl_->placement_duration.Add({{"role", RoleLabel(role)}}, DurationBuckets())
      .Observe(duration.count());
}

void ControllerMetrics::ObservePlacementLatency(api::Role role, Seconds since_creation) {
  impl_->placement_latency.Add({{"role", RoleLabel(role)}}, LatencyBuckets())
      .Observe(since_creation.count());
}

void ControllerMetrics::CountPlacementFailure(api::Role role, std::string_view reason) {
  impl_->placement_failures.Add({{"role", RoleLabel(role)}, {"reason", std::string(reason)}})
      .Increment();
}

void ControllerMetrics::CountPlacementConflict(std::string_view reason) {
  impl_->placement_conflicts.Add({{"reason", std::string(reason)}}).Increment();
}

void ControllerMetrics::CountPreemption() { impl_->preemptions.Add({}).Increment(); }

void ControllerMetrics::CountGangRestart(std::string_view reason) {
  impl_->gang_restarts.Add({{"reason", std::string(reason)}}).Increment();
}

void ControllerMetrics::SetJobsByPhase(const std::map<std::string, std::size_t>& counts) {
  for (const std::string& phase : AllPhases()) {
    const auto it = counts.find(phase);
    impl_->jobs.Add({{"phase", phase}})
        .Set(it == counts.end() ? 0.0 : static_cast<double>(it->second));
  }
}

void ControllerMetrics::SetLeader(bool leading) { impl_->leader.Add({}).Set(leading ? 1.0 : 0.0); }

std::string ControllerMetrics::Serialize() const {
  return prometheus::TextSerializer().Serialize(impl_->registry->Collect());
}

}  // namespace wavepool::controller
