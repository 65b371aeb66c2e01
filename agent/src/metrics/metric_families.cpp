#include "metrics/metric_families.h"

#include <string>

namespace wavepool::agent::metric_families {

// Iterations of the paper's workloads run from a few milliseconds (small models, one GPU slice)
// to seconds (VGG16/BERT at large batches): roughly 1-2.5-5 steps per decade, 1 ms to 10 s.
const Histogram::BucketBoundaries& IterationBuckets() {
  static const Histogram::BucketBoundaries kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                       0.25,  0.5,    1.0,   2.5,  5.0,   10.0};
  return kBuckets;
}

const char* Name(ReportType type) {
  switch (type) {
    case ReportType::kOps:
      return "ops";
    case ReportType::kMemory:
      return "memory";
    case ReportType::kWaveMemory:
      return "wave_memory";
    case ReportType::kIteration:
      return "iteration";
  }
  return "unknown";
}

const char* Name(ProtocolErrorKind kind) {
  switch (kind) {
    case ProtocolErrorKind::kMalformed:
      return "malformed";
    case ProtocolErrorKind::kUnsupportedVersion:
      return "unsupported_version";
    case ProtocolErrorKind::kOversized:
      return "oversized";
    case ProtocolErrorKind::kOutOfOrder:
      return "out_of_order";
    case ProtocolErrorKind::kPeerRejected:
      return "peer_rejected";
  }
  return "unknown";
}

const char* Name(RegistrationResult result) {
  switch (result) {
    case RegistrationResult::kAccepted:
      return "accepted";
    case RegistrationResult::kNoFreeSlot:
      return "no_free_slot";
    case RegistrationResult::kRejected:
      return "rejected";
  }
  return "unknown";
}

bool IsKnownRole(Role role) { return role == Role::kForeground || role == Role::kBackground; }
const char* Name(Role role) { return role == Role::kForeground ? "foreground" : "background"; }

Families RegisterFamilies(prometheus::Registry& registry, const std::string& hostname) {
  const prometheus::Labels host = {{"hostname", hostname}};
  auto gauge = [&](const char* name, const char* help) {
    return &prometheus::BuildGauge().Name(name).Help(help).Labels(host).Register(registry);
  };
  auto counter = [&](const char* name, const char* help) {
    return &prometheus::BuildCounter().Name(name).Help(help).Labels(host).Register(registry);
  };
  Families f{};
  f.gpu_memory_used = gauge("wavepool_gpu_memory_used_bytes", "GPU memory in use, in bytes.");
  f.gpu_memory_total = gauge("wavepool_gpu_memory_total_bytes", "GPU memory in all, in bytes.");
  f.gpu_utilization = gauge("wavepool_gpu_utilization_ratio",
                            "Fraction of the last sample period during which a kernel ran (0-1).");
  f.gpu_sm_occupancy = gauge("wavepool_gpu_sm_occupancy_ratio",
                             "SM occupancy (0-1): role=all from GPM, foreground and background "
                             "from per-process utilisation.");
  f.gpu_wave_peak = gauge("wavepool_gpu_memory_wave_peak_bytes",
                          "Peak of the GPU's memory wave over one iteration, in bytes.");
  f.gpu_wave_trough = gauge("wavepool_gpu_memory_wave_trough_bytes",
                            "Trough of the GPU's memory wave over one iteration, in bytes.");
  f.gpu_wave_period = gauge("wavepool_gpu_memory_wave_period_seconds",
                            "Period of the GPU's memory wave (one iteration); 0 until detected.");
  f.gpu_wave_phase_offset = gauge("wavepool_gpu_memory_wave_phase_offset_seconds",
                                  "Offset between the tick and tock waves' memory peaks.");
  f.gpu_wave_phase_offset_ratio =
      gauge("wavepool_gpu_memory_wave_phase_offset_ratio",
            "The tick-tock offset as a fraction of the waves' period (Wavelet aims at 0.5).");
  f.gpu_headroom = gauge("wavepool_gpu_memory_headroom_bytes",
                         "GPU memory left free at the wave's peak, in bytes.");
  f.gpu_background_hold = gauge("wavepool_gpu_background_hold",
                                "1 while a foreground worker holds background launches paused.");
  f.gpu_tasks = gauge("wavepool_gpu_tasks", "Tasks registered on the GPU, by role.");
  f.task_iteration = &prometheus::BuildHistogram()
                          .Name("wavepool_task_iteration_seconds")
                          .Help("Duration of the task's training iterations.")
                          .Labels(host)
                          .Register(registry);
  f.task_samples = counter("wavepool_task_samples_total", "Training samples the task processed.");
  f.task_credits_in_flight = gauge("wavepool_task_launch_credits_in_flight",
                                   "Launch credits the task holds (launch groups not finished).");
  f.task_credit_limit =
      gauge("wavepool_task_launch_credit_limit", "Launch credits the task may hold at once.");
  f.task_gate_wait = counter("wavepool_task_gate_wait_seconds_total",
                             "Time the task waited for a launch credit, pauses included.");
  f.task_paused =
      counter("wavepool_task_paused_seconds_total", "Time the task waited on a foreground pause.");
  f.task_launches = counter("wavepool_task_launches_total", "Launch credits the task acquired.");
  f.task_slowdown = gauge("wavepool_task_foreground_slowdown_ratio",
                          "Foreground iteration time with background work over its solo time.");
  f.task_slowdown_slo = gauge("wavepool_task_foreground_slowdown_slo_ratio",
                              "The slowdown the agent holds the foreground under: its job's "
                              "maxForegroundSlowdown, or the agent's default.");
  f.task_sensitive_groups = gauge("wavepool_task_sensitive_op_groups",
                                  "Foreground op groups marked sensitive (background paused).");
  f.task_recommended_batch = gauge("wavepool_task_recommended_batch_size",
                                   "Per-GPU batch the agent recommends to a background task.");
  f.task_cheating = gauge("wavepool_task_cheating",
                          "1 while a background task uses the GPU when the launch gate holds it "
                          "paused or grants it no credit (cheat_detector.h), else 0.");
  f.agent_info = gauge("wavepool_agent_info", "Agent version and capabilities; always 1.");
  f.agent_reports = counter("wavepool_agent_reports_total", "Worker reports received, by type.");
  f.agent_protocol_errors = counter("wavepool_agent_protocol_errors_total",
                                    "Connections ended by a protocol error, by kind.");
  f.agent_reclaimed_slots = counter("wavepool_agent_reclaimed_slots_total",
                                    "Gate slots reclaimed from workers that died.");
  f.agent_registrations =
      counter("wavepool_agent_registrations_total", "Worker registrations, by role and result.");
  f.agent_cheating_detections =
      counter("wavepool_agent_cheating_detections_total",
              "Times a background task was flagged for using the GPU the gate did not allow.");
  f.agent_heartbeat = gauge("wavepool_agent_heartbeat_timestamp_seconds",
                            "Unix time of the agent's last heartbeat.");
  return f;
}

}  // namespace wavepool::agent::metric_families
