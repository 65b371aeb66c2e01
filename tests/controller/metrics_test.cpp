#include "wavepool/controller/metrics.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavepool::controller {
namespace {

using ::testing::HasSubstr;

TEST(ControllerMetrics, EveryFamilyHasItsSeriesBeforeTheFirstEvent) {
  ControllerMetrics metrics;
  const std::string text = metrics.Serialize();
  EXPECT_THAT(text, HasSubstr("wavepool_controller_reconciles_total{result=\"success\"} 0"));
  EXPECT_THAT(text, HasSubstr("wavepool_controller_queue_depth 0"));
  EXPECT_THAT(text, HasSubstr("wavepool_controller_jobs{phase=\"Running\"} 0"));
  EXPECT_THAT(text, HasSubstr("wavepool_controller_leader 0"));
  EXPECT_THAT(text, HasSubstr("wavepool_controller_plan_duration_seconds_count 0"));
}

TEST(ControllerMetrics, CountsReconcilesByResultAndErrorsByCode) {
  ControllerMetrics metrics;
  metrics.ObserveReconcile(ReconcileOutcome::kSuccess, std::chrono::milliseconds(3));
  metrics.ObserveReconcile(ReconcileOutcome::kConflict, std::chrono::milliseconds(1),
                           absl::AbortedError("conflict"));
  metrics.ObserveReconcile(ReconcileOutcome::kError, std::chrono::milliseconds(1),
                           absl::UnavailableError("connection refused"));
  const std::string text = metrics.Serialize();
  EXPECT_THAT(text, HasSubstr("wavepool_controller_reconciles_total{result=\"success\"} 1"));
  EXPECT_THAT(text, HasSubstr("wavepool_controller_reconciles_total{result=\"conflict\"} 1"));
  EXPECT_THAT(text, HasSubstr("wavepool_controller_reconcile_errors_total{code=\"ABORTED\"} 1"));
  EXPECT_THAT(text,
              HasSubstr("wavepool_controller_reconcile_errors_total{code=\"UNAVAILABLE\"} 1"));
  EXPECT_THAT(text, HasSubstr("wavepool_controller_reconcile_duration_seconds_count 3"));
}

TEST(ControllerMetrics, PlacementAndGangSeriesCarryRoleAndReason) {
  ControllerMetrics metrics;
  metrics.ObservePlacementDecision(api::Role::kForeground, std::chrono::microseconds(250));
  metrics.ObservePlacementLatency(api::Role::kBackground, std::chrono::seconds(2));
  metrics.CountPlacementFailure(api::Role::kForeground, "not_placeable");
  metrics.CountPlacementConflict("foreground_clash");
  metrics.CountPreemption();
  metrics.CountGangRestart("node_lost");
  metrics.SetJobsByPhase({{"Running", 3}, {"Failed", 1}});
  metrics.SetQueueDepth(7);
  metrics.SetLeader(true);
  const std::string text = metrics.Serialize();
  EXPECT_THAT(text, HasSubstr("wavepool_controller_placement_duration_seconds_count{role="
                              "\"foreground\"} 1"));
  EXPECT_THAT(text, HasSubstr("wavepool_controller_placement_latency_seconds_sum{role="
                              "\"background\"} 2"));
  EXPECT_THAT(text, HasSubstr("wavepool_controller_placement_failures_total{reason=\"not_"
                              "placeable\",role=\"foreground\"} 1"));
  EXPECT_THAT(text, HasSubstr("wavepool_controller_placement_conflicts_total{reason=\"foreground_"
                              "clash\"} 1"));
  EXPECT_THAT(text, HasSubstr("wavepool_controller_preemptions_total 1"));
  EXPECT_THAT(text, HasSubstr("wavepool_controller_gang_restarts_total{reason=\"node_lost\"} 1"));
  EXPECT_THAT(text, HasSubstr("wavepool_controller_jobs{phase=\"Running\"} 3"));
  EXPECT_THAT(text, HasSubstr("wavepool_controller_jobs{phase=\"Pending\"} 0"));
  EXPECT_THAT(text, HasSubstr("wavepool_controller_queue_depth 7"));
  EXPECT_THAT(text, HasSubstr("wavepool_controller_leader 1"));
}

}  // namespace
}  // namespace wavepool::controller
