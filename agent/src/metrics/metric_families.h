// The families of wavepool/agent/metrics.h: names, help texts, types, histogram buckets and the
// label values of the agent's enums. Private to the agent's metrics.
#ifndef WAVEPOOL_AGENT_SRC_METRICS_METRIC_FAMILIES_H_
#define WAVEPOOL_AGENT_SRC_METRICS_METRIC_FAMILIES_H_

#include <array>
#include <string>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "wavepool/agent/metrics.h"

namespace wavepool::agent::metric_families {

using prometheus::Counter;
using prometheus::Family;
using prometheus::Gauge;
using prometheus::Histogram;

// Every family the agent exports. Registered once; pointers stay valid as long as the registry.
struct Families {
  // Per GPU: {gpu, UUID}, plus {role} where noted.
  Family<Gauge>* gpu_memory_used;
  Family<Gauge>* gpu_memory_total;
  Family<Gauge>* gpu_utilization;
  Family<Gauge>* gpu_sm_occupancy;  // + role: foreground, background, all
  Family<Gauge>* gpu_wave_peak;
  Family<Gauge>* gpu_wave_trough;
  Family<Gauge>* gpu_wave_period;
  Family<Gauge>* gpu_wave_phase_offset;
  Family<Gauge>* gpu_wave_phase_offset_ratio;
  Family<Gauge>* gpu_headroom;
  Family<Gauge>* gpu_background_hold;
  Family<Gauge>* gpu_tasks;  // + role
  // Per task: {namespace, job, pod, role, gpu}.
  Family<Histogram>* task_iteration;
  Family<Counter>* task_samples;
  Family<Gauge>* task_credits_in_flight;
  Family<Gauge>* task_credit_limit;
  Family<Counter>* task_gate_wait;
  Family<Counter>* task_paused;
  Family<Counter>* task_launches;
  Family<Gauge>* task_slowdown;
  Family<Gauge>* task_slowdown_slo;
  Family<Gauge>* task_sensitive_groups;
  Family<Gauge>* task_recommended_batch;
  Family<Gauge>* task_cheating;  // background only
  // The agent.
  Family<Gauge>* agent_info;
  Family<Counter>* agent_reports;
  Family<Counter>* agent_protocol_errors;
  Family<Counter>* agent_reclaimed_slots;
  Family<Counter>* agent_registrations;
  Family<Counter>* agent_cheating_detections;
  Family<Gauge>* agent_heartbeat;
};

// Registers every family, each with the constant label hostname. Throws what prometheus-cpp's
// builders throw (a name registered twice, a bad label name); the caller converts it.
Families RegisterFamilies(prometheus::Registry& registry, const std::string& hostname);

// Iterations of the paper's workloads run from a few milliseconds (small models, one GPU slice)
// to seconds (VGG16/BERT at large batches): roughly 1-2.5-5 steps per decade, 1 ms to 10 s.
const Histogram::BucketBoundaries& IterationBuckets();

// Every value of each enum, so that their counters exist (at 0) from start-up.
constexpr std::array<ReportType, 4> kReportTypes = {
    ReportType::kOps, ReportType::kMemory, ReportType::kWaveMemory, ReportType::kIteration};
constexpr std::array<ProtocolErrorKind, 5> kProtocolErrorKinds = {
    ProtocolErrorKind::kMalformed, ProtocolErrorKind::kUnsupportedVersion,
    ProtocolErrorKind::kOversized, ProtocolErrorKind::kOutOfOrder,
    ProtocolErrorKind::kPeerRejected};
constexpr std::array<RegistrationResult, 3> kRegistrationResults = {
    RegistrationResult::kAccepted, RegistrationResult::kNoFreeSlot, RegistrationResult::kRejected};
constexpr std::array<Role, 2> kRoles = {Role::kForeground, Role::kBackground};

// Label values.
const char* Name(ReportType type);
const char* Name(ProtocolErrorKind kind);
const char* Name(RegistrationResult result);
const char* Name(Role role);  // "foreground" or "background"
bool IsKnownRole(Role role);

}  // namespace wavepool::agent::metric_families

#endif  // WAVEPOOL_AGENT_SRC_METRICS_METRIC_FAMILIES_H_
