#include "wavepool/agent/metrics.h"

#include <array>
#include <cmath>
#include <exception>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "metrics/metric_families.h"
#include "metrics/metrics_endpoint.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::agent {
namespace {

using metric_families::Families;
using metric_families::IsKnownRole;
using metric_families::IterationBuckets;
using metric_families::kProtocolErrorKinds;
using metric_families::kRegistrationResults;
using metric_families::kReportTypes;
using metric_families::kRoles;
using metric_families::Name;
using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Histogram;
using prometheus::Labels;
using prometheus::Registry;

std::size_t RoleIndex(Role role) { return role == Role::kForeground ? 0 : 1; }
const char* Bool(bool value) { return value ? "true" : "false"; }

// An increment of a cumulative total read from the gate: a reading below the previous one means
// the total restarted from zero (a new worker in the slot), so all of it is new.
std::uint64_t Growth(std::uint64_t previous, std::uint64_t now) {
  return now >= previous ? now - previous : now;
}

double NanosToSeconds(std::uint64_t ns) { return static_cast<double>(ns) * 1e-9; }

}  // namespace

struct GpuMetrics::Series {
  Gauge& memory_used;
  Gauge& memory_total;
  Gauge& utilization;
  Gauge& sm_foreground;
  Gauge& sm_background;
  Gauge* sm_all;  // nullptr without GPM
  Gauge& wave_peak;
  Gauge& wave_trough;
  Gauge& wave_period;
  Gauge& wave_phase_offset;
  Gauge& wave_phase_offset_ratio;
  Gauge& headroom;
  Gauge& background_hold;
  std::array<Gauge*, 2> tasks;  // by RoleIndex
};

GpuMetrics::GpuMetrics(std::uint32_t index, std::unique_ptr<Series> series)
    : index_(index), series_(std::move(series)) {}
GpuMetrics::~GpuMetrics() = default;

void GpuMetrics::SetMemory(std::int64_t used_bytes, std::int64_t total_bytes) {
  series_->memory_used.Set(static_cast<double>(used_bytes));
  series_->memory_total.Set(static_cast<double>(total_bytes));
}

void GpuMetrics::SetUtilization(double ratio) { series_->utilization.Set(ratio); }

void GpuMetrics::SetRoleSmOccupancy(double foreground_ratio, double background_ratio) {
  series_->sm_foreground.Set(foreground_ratio);
  series_->sm_background.Set(background_ratio);
}

void GpuMetrics::SetSmOccupancy(double ratio) {
  if (series_->sm_all != nullptr) series_->sm_all->Set(ratio);
}

void GpuMetrics::SetMemoryWave(const MemoryWaveSummary& wave) {
  series_->wave_peak.Set(static_cast<double>(wave.peak_bytes));
  series_->wave_trough.Set(static_cast<double>(wave.trough_bytes));
  series_->wave_period.Set(wave.period.count());
  series_->wave_phase_offset.Set(wave.phase_offset.count());
  series_->wave_phase_offset_ratio.Set(wave.phase_offset_ratio);
  series_->headroom.Set(static_cast<double>(wave.headroom_bytes));
}

void GpuMetrics::SetBackgroundHold(bool raised) { series_->background_hold.Set(raised ? 1 : 0); }

struct TaskMetrics::Series {
  Histogram& iteration;
  Counter& samples;
  Gauge& credits_in_flight;
  Gauge& credit_limit;
  Counter& gate_wait;
  Counter& paused;
  Counter& launches;
  Gauge* slowdown;           // foreground only
  Gauge* slowdown_slo;       // foreground only
  Gauge* sensitive_groups;   // foreground only
  Gauge* recommended_batch;  // background only
  Gauge* cheating;           // background only
  int users = 0;             // live TaskMetrics sharing these series
};

TaskMetrics::TaskMetrics(TaskLabels labels, Series* series)
    : labels_(std::move(labels)), series_(series) {}
TaskMetrics::~TaskMetrics() = default;

absl::Status TaskMetrics::ObserveIteration(Seconds duration, std::uint64_t samples) {
  const double seconds = duration.count();
  // The protocol's bound (NaN fails both comparisons): the histogram's sum stays finite.
  if (!(seconds >= 0 && seconds <= kMaxIterationSeconds)) {
    return absl::InvalidArgumentError(
        absl::StrCat("task ", labels_.namespace_name, "/", labels_.pod,
                     ": iteration seconds: must be finite, >= 0 and <= ", kMaxIterationSeconds,
                     ", got ", seconds));
  }
  series_->iteration.Observe(seconds);
  series_->samples.Increment(static_cast<double>(samples));
  return absl::OkStatus();
}

void TaskMetrics::ObserveGate(const GateReading& reading) {
  series_->credit_limit.Set(reading.credit_limit);
  series_->credits_in_flight.Set(reading.credits_in_flight);
  absl::MutexLock lock(&mu_);
  series_->launches.Increment(
      static_cast<double>(Growth(last_gate_.launches_total, reading.launches_total)));
  series_->gate_wait.Increment(
      NanosToSeconds(Growth(last_gate_.wait_ns_total, reading.wait_ns_total)));
  series_->paused.Increment(
      NanosToSeconds(Growth(last_gate_.paused_ns_total, reading.paused_ns_total)));
  last_gate_ = reading;
}

void TaskMetrics::SetForegroundSlowdown(double ratio) {
  if (series_->slowdown != nullptr) series_->slowdown->Set(ratio);
}

void TaskMetrics::SetForegroundSlowdownSlo(double max_slowdown) {
  if (series_->slowdown_slo != nullptr) series_->slowdown_slo->Set(max_slowdown);
}

void TaskMetrics::SetSensitiveOpGroups(std::uint32_t count) {
  if (series_->sensitive_groups != nullptr) series_->sensitive_groups->Set(count);
}

void TaskMetrics::SetCheating(bool cheating) {
  if (series_->cheating != nullptr) series_->cheating->Set(cheating ? 1 : 0);
}

void TaskMetrics::SetRecommendedBatchSize(std::uint32_t batch_size) {
  if (series_->recommended_batch != nullptr) series_->recommended_batch->Set(batch_size);
}

struct AgentMetrics::Impl {
  std::shared_ptr<Registry> registry;
  Families families{};
  std::vector<std::unique_ptr<GpuMetrics>> gpus;
  std::array<Counter*, kReportTypes.size()> reports{};
  std::array<Counter*, kProtocolErrorKinds.size()> protocol_errors{};
  std::array<std::array<Counter*, kRegistrationResults.size()>, kRoles.size()> registrations{};
  Counter* reclaimed_slots = nullptr;
  Counter* cheating_detections = nullptr;
  Gauge* heartbeat = nullptr;

  absl::Mutex mu;
  Gauge* info_series ABSL_GUARDED_BY(mu) = nullptr;
  // Task series by label set, and the tasks using them.
  std::map<Labels, std::unique_ptr<TaskMetrics::Series>> task_series ABSL_GUARDED_BY(mu);
  std::map<const TaskMetrics*, std::unique_ptr<TaskMetrics>> tasks ABSL_GUARDED_BY(mu);

  std::uint16_t port = 0;
  // Declared last: destroyed first, so no scrape runs while the rest goes away.
  std::unique_ptr<net::ShortRequestServer> endpoint;

  GpuMetrics* FindGpu(std::uint32_t index) const {
    for (const auto& gpu : gpus) {
      if (gpu->index() == index) return gpu.get();
    }
    return nullptr;
  }
  void AddGpu(const GpuIdentity& identity);
  void AddAgentSeries(const AgentInfo& agent_info);
  absl::Status StartEndpoint(const MetricsOptions& options);
  // Throw what Family::Add throws.
  std::unique_ptr<TaskMetrics::Series> NewTaskSeries(const Labels& labels, Role role);
  void RemoveTaskSeries(const TaskMetrics::Series& series);
  static Labels InfoLabels(const AgentInfo& agent_info);
  static Labels TaskLabelSet(const TaskLabels& labels);
};

void AgentMetrics::Impl::AddGpu(const GpuIdentity& identity) {
  const Labels labels = {{"gpu", std::to_string(identity.index)}, {"UUID", identity.uuid}};
  auto with_role = [&labels](const char* role) {
    Labels role_labels = labels;
    role_labels.emplace("role", role);
    return role_labels;
  };
  Families& f = families;
  auto series = std::unique_ptr<GpuMetrics::Series>(new GpuMetrics::Series{
      f.gpu_memory_used->Add(labels),
      f.gpu_memory_total->Add(labels),
      f.gpu_utilization->Add(labels),
      f.gpu_sm_occupancy->Add(with_role("foreground")),
      f.gpu_sm_occupancy->Add(with_role("background")),
      identity.has_gpm ? &f.gpu_sm_occupancy->Add(with_role("all")) : nullptr,
      f.gpu_wave_peak->Add(labels),
      f.gpu_wave_trough->Add(labels),
      f.gpu_wave_period->Add(labels),
      f.gpu_wave_phase_offset->Add(labels),
      f.gpu_wave_phase_offset_ratio->Add(labels),
      f.gpu_headroom->Add(labels),
      f.gpu_background_hold->Add(labels),
      {&f.gpu_tasks->Add(with_role(Name(Role::kForeground))),
       &f.gpu_tasks->Add(with_role(Name(Role::kBackground)))}});
  gpus.push_back(std::unique_ptr<GpuMetrics>(new GpuMetrics(identity.index, std::move(series))));
}

void AgentMetrics::Impl::AddAgentSeries(const AgentInfo& agent_info) {
  Families& f = families;
  for (ReportType type : kReportTypes) {
    reports[static_cast<std::size_t>(type)] = &f.agent_reports->Add({{"type", Name(type)}});
  }
  for (ProtocolErrorKind kind : kProtocolErrorKinds) {
    protocol_errors[static_cast<std::size_t>(kind)] =
        &f.agent_protocol_errors->Add({{"kind", Name(kind)}});
  }
  for (Role role : kRoles) {
    for (RegistrationResult result : kRegistrationResults) {
      registrations[RoleIndex(role)][static_cast<std::size_t>(result)] =
          &f.agent_registrations->Add({{"role", Name(role)}, {"result", Name(result)}});
    }
  }
  reclaimed_slots = &f.agent_reclaimed_slots->Add({});
  cheating_detections = &f.agent_cheating_detections->Add({});
  heartbeat = &f.agent_heartbeat->Add({});
  absl::MutexLock lock(&mu);
  info_series = &f.agent_info->Add(InfoLabels(agent_info));
  info_series->Set(1);
}

Labels AgentMetrics::Impl::InfoLabels(const AgentInfo& agent_info) {
  return {{"version", agent_info.version},
          {"nvml", Bool(agent_info.nvml)},
          {"mps", Bool(agent_info.mps)},
          {"gpm", Bool(agent_info.gpm)}};
}

Labels AgentMetrics::Impl::TaskLabelSet(const TaskLabels& labels) {
  return {{"namespace", labels.namespace_name},
          {"job", labels.job},
          {"pod", labels.pod},
          {"role", Name(labels.role)},
          {"gpu", std::to_string(labels.gpu)}};
}

std::unique_ptr<TaskMetrics::Series> AgentMetrics::Impl::NewTaskSeries(const Labels& labels,
                                                                       Role role) {
  Families& f = families;
  const bool foreground = role == Role::kForeground;
  return std::unique_ptr<TaskMetrics::Series>(new TaskMetrics::Series{
      f.task_iteration->Add(labels, IterationBuckets()),
      f.task_samples->Add(labels),
      f.task_credits_in_flight->Add(labels),
      f.task_credit_limit->Add(labels),
      f.task_gate_wait->Add(labels),
      f.task_paused->Add(labels),
      f.task_launches->Add(labels),
      foreground ? &f.task_slowdown->Add(labels) : nullptr,
      foreground ? &f.task_slowdown_slo->Add(labels) : nullptr,
      foreground ? &f.task_sensitive_groups->Add(labels) : nullptr,
      foreground ? nullptr : &f.task_recommended_batch->Add(labels),
      foreground ? nullptr : &f.task_cheating->Add(labels),
  });
}

void AgentMetrics::Impl::RemoveTaskSeries(const TaskMetrics::Series& series) {
  Families& f = families;
  f.task_iteration->Remove(&series.iteration);
  f.task_samples->Remove(&series.samples);
  f.task_credits_in_flight->Remove(&series.credits_in_flight);
  f.task_credit_limit->Remove(&series.credit_limit);
  f.task_gate_wait->Remove(&series.gate_wait);
  f.task_paused->Remove(&series.paused);
  f.task_launches->Remove(&series.launches);
  if (series.slowdown != nullptr) f.task_slowdown->Remove(series.slowdown);
  if (series.slowdown_slo != nullptr) f.task_slowdown_slo->Remove(series.slowdown_slo);
  if (series.sensitive_groups != nullptr) f.task_sensitive_groups->Remove(series.sensitive_groups);
  if (series.recommended_batch != nullptr) {
    f.task_recommended_batch->Remove(series.recommended_batch);
  }
  if (series.cheating != nullptr) f.task_cheating->Remove(series.cheating);
}

absl::Status AgentMetrics::Impl::StartEndpoint(const MetricsOptions& options) {
  internal::MetricsEndpointLimits limits;
  limits.request_deadline = options.http_request_deadline;
  limits.max_connections = options.http_max_connections;
  // The registry outlives the endpoint, which is declared after it and so destroyed first.
  absl::StatusOr<std::unique_ptr<net::ShortRequestServer>> started = internal::StartMetricsEndpoint(
      options.bind_address, options.port,
      [this] { return prometheus::TextSerializer().Serialize(registry->Collect()); }, limits);
  if (!started.ok()) {
    if (started.status().code() != absl::StatusCode::kUnavailable) return started.status();
    return absl::UnavailableError(
        absl::StrCat(started.status().message(), " (is the port taken? port 0 picks a free one)"));
  }
  endpoint = *std::move(started);
  port = static_cast<std::uint16_t>(endpoint->port());
  return absl::OkStatus();
}

namespace {

absl::Status ValidateOptions(const MetricsOptions& options) {
  if (options.hostname.empty()) {
    return absl::InvalidArgumentError("metrics options: hostname: must not be empty");
  }
  if (options.http_request_deadline.count() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics options: http_request_deadline: must be > 0 ms, got ",
                     options.http_request_deadline.count(), " ms"));
  }
  if (options.http_max_connections < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics options: http_max_connections: must be >= 1, got ", options.http_max_connections));
  }
  std::set<std::uint32_t> indices;
  for (std::size_t i = 0; i < options.gpus.size(); ++i) {
    const GpuIdentity& gpu = options.gpus[i];
    if (gpu.uuid.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metrics options: gpus[", i, "].uuid: must not be empty (the GPU's UUID, GPU-...)"));
    }
    if (!indices.insert(gpu.index).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("metrics options: gpus[", i, "].index: ", gpu.index, " is listed twice"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<AgentMetrics>> AgentMetrics::Create(const MetricsOptions& options) {
  WAVEPOOL_RETURN_IF_ERROR(ValidateOptions(options));
  auto impl = std::make_unique<Impl>();
  try {
    impl->registry = std::make_shared<Registry>(Registry::InsertBehavior::Throw);
    impl->families = metric_families::RegisterFamilies(*impl->registry, options.hostname);
    for (const GpuIdentity& gpu : options.gpus) impl->AddGpu(gpu);
    impl->AddAgentSeries(options.info);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("metrics: registering the families: ", e.what()));
  }
  if (!options.bind_address.empty()) {
    WAVEPOOL_RETURN_IF_ERROR(impl->StartEndpoint(options));
  }
  return std::unique_ptr<AgentMetrics>(new AgentMetrics(std::move(impl)));
}

AgentMetrics::AgentMetrics(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AgentMetrics::~AgentMetrics() = default;

std::uint16_t AgentMetrics::port() const { return impl_->port; }

GpuMetrics* AgentMetrics::gpu(std::uint32_t index) { return impl_->FindGpu(index); }

absl::StatusOr<TaskMetrics*> AgentMetrics::AddTask(const TaskLabels& labels) {
  const std::string name = absl::StrCat("task ", labels.namespace_name, "/", labels.pod);
  if (labels.job.empty() || labels.pod.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(name,
                                                   ": job and pod: must not be empty, got job \"",
                                                   labels.job, "\" and pod \"", labels.pod, "\""));
  }
  if (!IsKnownRole(labels.role)) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": role: must be foreground or background, got ", static_cast<int>(labels.role)));
  }
  GpuMetrics* gpu = impl_->FindGpu(labels.gpu);
  if (gpu == nullptr) {
    std::vector<std::uint32_t> known;
    for (const auto& g : impl_->gpus) known.push_back(g->index());
    return absl::NotFoundError(absl::StrCat(name, ": gpu ", labels.gpu,
                                            ": not one of this node's GPUs (",
                                            absl::StrJoin(known, ", "), ")"));
  }
  const Labels label_set = Impl::TaskLabelSet(labels);
  absl::MutexLock lock(&impl_->mu);
  auto series = impl_->task_series.find(label_set);
  if (series == impl_->task_series.end()) {
    try {
      series =
          impl_->task_series.emplace(label_set, impl_->NewTaskSeries(label_set, labels.role)).first;
    } catch (const std::exception& e) {
      return absl::InternalError(absl::StrCat(name, ": adding its series: ", e.what()));
    }
  }
  ++series->second->users;
  auto task = std::unique_ptr<TaskMetrics>(new TaskMetrics(labels, series->second.get()));
  TaskMetrics* added = task.get();
  impl_->tasks.emplace(added, std::move(task));
  gpu->series_->tasks[RoleIndex(labels.role)]->Increment();
  return added;
}

void AgentMetrics::RemoveTask(TaskMetrics* task) {
  if (task == nullptr) return;
  absl::MutexLock lock(&impl_->mu);
  auto owned = impl_->tasks.find(task);
  if (owned == impl_->tasks.end()) return;
  const TaskLabels& labels = task->labels();
  if (GpuMetrics* gpu = impl_->FindGpu(labels.gpu); gpu != nullptr) {
    gpu->series_->tasks[RoleIndex(labels.role)]->Decrement();
  }
  auto series = impl_->task_series.find(Impl::TaskLabelSet(labels));
  if (series != impl_->task_series.end() && --series->second->users == 0) {
    impl_->RemoveTaskSeries(*series->second);
    impl_->task_series.erase(series);
  }
  impl_->tasks.erase(owned);
}

absl::Status AgentMetrics::SetInfo(const AgentInfo& info) {
  absl::MutexLock lock(&impl_->mu);
  try {
    Gauge& replacement = impl_->families.agent_info->Add(Impl::InfoLabels(info));
    if (&replacement != impl_->info_series) {
      impl_->families.agent_info->Remove(impl_->info_series);
      impl_->info_series = &replacement;
    }
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("metrics: wavepool_agent_info: ", e.what()));
  }
  impl_->info_series->Set(1);
  return absl::OkStatus();
}

void AgentMetrics::CountReport(ReportType type) {
  const auto index = static_cast<std::size_t>(type);
  if (index < impl_->reports.size()) impl_->reports[index]->Increment();
}

void AgentMetrics::CountProtocolError(ProtocolErrorKind kind) {
  const auto index = static_cast<std::size_t>(kind);
  if (index < impl_->protocol_errors.size()) impl_->protocol_errors[index]->Increment();
}

void AgentMetrics::CountReclaimedSlot() { impl_->reclaimed_slots->Increment(); }

void AgentMetrics::CountCheatingDetection() { impl_->cheating_detections->Increment(); }

void AgentMetrics::CountRegistration(Role role, RegistrationResult result) {
  const auto index = static_cast<std::size_t>(result);
  if (IsKnownRole(role) && index < kRegistrationResults.size()) {
    impl_->registrations[RoleIndex(role)][index]->Increment();
  }
}

void AgentMetrics::SetHeartbeat(WallTime now) {
  impl_->heartbeat->Set(Seconds(now.time_since_epoch()).count());
}

std::string AgentMetrics::ExpositionText() const {
  return prometheus::TextSerializer().Serialize(impl_->registry->Collect());
}

}  // namespace wavepool::agent
