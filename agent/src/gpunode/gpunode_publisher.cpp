#include "wavepool/agent/gpunode_publisher.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "identity/worker_strings.h"
#include "wavepool/agent/memory_wave.h"
#include "wavepool/api/kube_resources.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/kube/api_error.h"
#include "wavepool/kube/core_types.h"
#include "wavepool/kube/typed_client.h"

namespace wavepool::agent {
namespace {

double Finite(double value) { return std::isfinite(value) ? value : 0; }

api::Role ToApiRole(Role role) {
  return role == Role::kBackground ? api::Role::kBackground : api::Role::kForeground;
}

// What the worker last reported, as the controller reads it (api/progress.h). The iteration
// time is the last one, not an average: samples/s and the step then describe the same
// iteration, and the agent's Prometheus histogram already serves smoothed views. The slowdown is
// the feedback loop's time-weighted ratio over the task's recent op groups (slowdown_feedback.h),
// foreground only: background tasks are not judged against a solo time (0: unknown).
std::optional<api::TrainingProgress> ToApiProgress(const TaskStatus& task) {
  if (!task.last_iteration) return std::nullopt;
  api::TrainingProgress progress;
  progress.step = static_cast<std::int64_t>(std::min<std::uint64_t>(
      task.last_iteration->iteration, std::numeric_limits<std::int64_t>::max()));
  progress.iteration_seconds = Finite(task.last_iteration->seconds);
  // A 0 s iteration has no meaningful throughput (and JSON has no infinity).
  const double rate =
      static_cast<double>(task.last_iteration->samples) / task.last_iteration->seconds;
  if (task.last_iteration->seconds > 0 && std::isfinite(rate)) progress.samples_per_second = rate;
  progress.foreground_slowdown =
      task.role == Role::kForeground ? Finite(task.foreground_slowdown) : 0;
  return progress;
}

api::GpuStatus ToApiGpu(const GpuStatus& gpu) {
  api::GpuStatus out;
  out.index = gpu.info.index;
  out.uuid = gpu.info.uuid;
  out.model = gpu.info.name;
  out.memory_bytes = SaturatedBytes(gpu.info.memory_total_bytes);
  out.occupancy.foreground = Finite(gpu.foreground_sm_occupancy.value_or(0));
  out.occupancy.background = Finite(gpu.background_sm_occupancy.value_or(0));
  if (gpu.memory_wave) {
    api::MemoryWave wave;
    wave.peak_bytes = SaturatedBytes(gpu.memory_wave->peak_bytes);
    wave.trough_bytes = SaturatedBytes(gpu.memory_wave->trough_bytes);
    wave.period_seconds = Finite(gpu.memory_wave->period.count());
    wave.phase_offset_seconds = Finite(gpu.phase_offset.value_or(Seconds(0)).count());
    // Without a capacity the analysis has no headroom; the GPU's memory minus the peak is it.
    // A peak above the GPU's memory (a foreground's allocator reports can claim anything) leaves
    // none: the CRD requires headroomBytes >= 0, and one negative value would make the API server
    // refuse the node's whole status, heartbeat included.
    wave.headroom_bytes =
        std::max<std::int64_t>(0, gpu.memory_wave->headroom_bytes.value_or(HeadroomBytes(
                                      gpu.info.memory_total_bytes, gpu.memory_wave->peak_bytes)));
    out.memory_wave = wave;
  }
  for (const TaskStatus& task : gpu.tasks) {
    out.tasks.push_back({task.namespace_name, task.job, task.pod, ToApiRole(task.role), task.pid,
                         ToApiProgress(task)});
  }
  return out;
}

}  // namespace

std::vector<std::string> DropUnpublishableTasks(AgentStatus* snapshot) {
  std::vector<std::string> dropped;
  for (GpuStatus& gpu : snapshot->gpus) {
    auto bad = [&](const TaskStatus& task) {
      absl::Status valid = internal::ValidateTaskNames(task.namespace_name, task.job, task.pod);
      if (!valid.ok()) {
        dropped.push_back(absl::StrCat("GPU ", gpu.info.index, " task of pid ", task.pid,
                                       " left out: ", valid.message()));
      }
      return !valid.ok();
    };
    gpu.tasks.erase(std::remove_if(gpu.tasks.begin(), gpu.tasks.end(), bad), gpu.tasks.end());
  }
  return dropped;
}

std::string NoGpuReasonFor(const absl::Status& nvml_error) {
  // OpenNvmlDevices: "dlopen <lib>: ...", "<lib>: missing symbol ...", "nvmlInit_v2: ..." mean
  // NVML itself is unusable; "nvmlDeviceGetCount_v2: ..." and "NVML lists N GPUs and none is
  // usable" mean it works and the node has no GPU to offer.
  const std::string message(nvml_error.message());
  if (absl::StartsWith(message, "nvmlDeviceGetCount") || absl::StartsWith(message, "NVML lists")) {
    return kReasonNoGpus;
  }
  return kReasonNvmlUnavailable;
}

namespace {

std::string PodKey(const TaskStatus& task) {
  return absl::StrCat(task.namespace_name, "/", task.pod);
}

// cheat_detector.h: the condition names every flagged pod so that the controller can preempt it.
api::Condition CheatingCondition(const AgentStatus& snapshot) {
  api::Condition condition;
  condition.type = kGpuNodeBackgroundCheating;
  std::vector<std::string> flagged;
  for (const GpuStatus& gpu : snapshot.gpus) {
    for (const TaskStatus& task : gpu.tasks) {
      if (!task.cheating) continue;
      flagged.push_back(
          absl::StrCat(PodKey(task), " (GPU ", gpu.info.index, "): ", task.cheating_reason));
    }
  }
  if (flagged.empty()) {
    condition.status = api::ConditionStatus::kFalse;
    condition.reason = kReasonNoCheating;
    condition.message = "no background task uses the GPU beyond what its launch gate allows";
  } else {
    condition.status = api::ConditionStatus::kTrue;
    condition.reason = kReasonLaunchesOutsideGate;
    // The CRD caps a condition's message at 32768 characters: name as many pods as fit.
    constexpr std::size_t kMaxMessage = 32000;
    std::size_t named = 0;
    for (const std::string& entry : flagged) {
      if (condition.message.size() + entry.size() + 2 > kMaxMessage) break;
      absl::StrAppend(&condition.message, named == 0 ? "" : "; ", entry);
      ++named;
    }
    if (named < flagged.size()) {
      absl::StrAppend(&condition.message, "; and ", flagged.size() - named, " more");
    }
  }
  return condition;
}

}  // namespace

api::GpuNodeStatus MakeGpuNodeStatus(const AgentStatus& snapshot,
                                     const GpuNodeStatusInputs& inputs) {
  api::GpuNodeStatus status;
  for (const GpuStatus& gpu : snapshot.gpus) status.gpus.push_back(ToApiGpu(gpu));
  status.agent_version = inputs.agent_version;
  status.heartbeat_time = api::FormatRfc3339(inputs.now);
  status.conditions = inputs.previous_conditions;
  api::Condition ready;
  ready.type = kGpuNodeReady;
  if (snapshot.gpus.empty()) {
    ready.status = api::ConditionStatus::kFalse;
    ready.reason = inputs.no_gpu_reason.empty() ? kReasonNoGpus : inputs.no_gpu_reason;
    ready.message = snapshot.devices.empty() ? "no GPUs reported" : snapshot.devices;
    status.message = ready.message;
  } else {
    ready.status = api::ConditionStatus::kTrue;
    ready.reason = kReasonGpusReported;
    ready.message = snapshot.devices;
  }
  api::SetCondition(&status.conditions, ready, inputs.now);
  api::SetCondition(&status.conditions, CheatingCondition(snapshot), inputs.now);
  return status;
}

absl::Status Validate(const GpuNodePublisherOptions& o) {
  if (o.node_name.empty()) {
    return absl::InvalidArgumentError("node_name: must be set (--node-name or $NODE_NAME)");
  }
  if (o.interval <= std::chrono::nanoseconds(0)) {
    return absl::InvalidArgumentError("interval: must be > 0");
  }
  if (o.initial_backoff <= std::chrono::nanoseconds(0) || o.max_backoff < o.initial_backoff) {
    return absl::InvalidArgumentError("initial_backoff: must be > 0 and <= max_backoff");
  }
  if (o.max_conflict_retries < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_conflict_retries: must be >= 0, got ", o.max_conflict_retries));
  }
  return absl::OkStatus();
}

GpuNodePublisher::GpuNodePublisher(GpuNodePublisherOptions options, kube::Client* client,
                                   Snapshot snapshot, Clock* clock)
    : options_(std::move(options)), client_(client), snapshot_(std::move(snapshot)), clock_(clock) {
  if (options_.record_events) {
    kube::EventRecorder::Options events;
    events.log = [this](std::string_view line) { Log(line); };
    events.clock = clock_;
    events_ = std::make_unique<kube::EventRecorder>(*client_, "wavepool-agent", options_.node_name,
                                                    std::move(events));
  }
}

absl::StatusOr<std::unique_ptr<GpuNodePublisher>> GpuNodePublisher::Create(
    GpuNodePublisherOptions options, kube::Client* client, Snapshot snapshot, Clock* clock) {
  WAVEPOOL_RETURN_IF_ERROR(Validate(options));
  if (client == nullptr || snapshot == nullptr || clock == nullptr) {
    return absl::InvalidArgumentError("GPUNode publisher: client, snapshot and clock are required");
  }
  return std::unique_ptr<GpuNodePublisher>(
      new GpuNodePublisher(std::move(options), client, std::move(snapshot), clock));
}

GpuNodePublisher::~GpuNodePublisher() { Stop(); }

api::GpuNode GpuNodePublisher::NewObject() {
  api::GpuNode node;
  node.metadata.name = options_.node_name;
  node.metadata.labels[kGpuNodeNodeLabel] = options_.node_name;
  node.spec.node_name = options_.node_name;
  // Owned by the Node, so that deleting the Node deletes its GPUNode. Not a controller reference
  // and no blockOwnerDeletion: that would need update rights on nodes/finalizers.
  kube::TypedClient<kube::Node> nodes(client_);
  absl::StatusOr<kube::Node> owner = nodes.Get("", options_.node_name);
  if (owner.ok()) {
    api::OwnerReference reference;
    reference.api_version = "v1";
    reference.kind = "Node";
    reference.name = owner->metadata.name;
    reference.uid = owner->metadata.uid;
    node.metadata.owner_references.push_back(reference);
  } else {
    Log(absl::StrCat("GPUNode ", options_.node_name,
                     ": created without an owner (Node: ", owner.status().message(), ")"));
  }
  return node;
}

absl::StatusOr<api::GpuNode> GpuNodePublisher::ReadOrCreate() {
  kube::TypedClient<api::GpuNode> gpunodes(client_);
  absl::StatusOr<api::GpuNode> read = gpunodes.Get("", options_.node_name);
  if (read.ok() || !kube::IsNotFound(read.status())) return read;
  absl::StatusOr<api::GpuNode> created = gpunodes.Create(NewObject());
  if (created.ok() || !kube::IsAlreadyExists(created.status())) return created;
  return gpunodes.Get("", options_.node_name);  // lost a race with a previous incarnation
}

absl::StatusOr<api::GpuNode> GpuNodePublisher::Publish() {
  try {
    return PublishOnce();
  } catch (const std::exception& e) {
    // The JSON library throws on what it cannot encode (invalid UTF-8 in a string): a failed
    // publish like any other, never the end of the publishing thread.
    const absl::Status error = absl::InternalError(
        absl::StrCat("GPUNode ", options_.node_name, ": publish failed: ", e.what()));
    RecordFailure(error);
    return error;
  }
}

void GpuNodePublisher::RecordFailure(const absl::Status& error) {
  absl::MutexLock lock(&mu_);
  ++state_.failures;
  ++state_.consecutive_failures;
  state_.last_error = error;
}

absl::StatusOr<api::GpuNode> GpuNodePublisher::PublishOnce() {
  absl::MutexLock publish_lock(&publish_mu_);
  AgentStatus snapshot = snapshot_();
  for (const std::string& dropped : DropUnpublishableTasks(&snapshot)) {
    Log(absl::StrCat("GPUNode ", options_.node_name, ": ", dropped));
  }
  RecordCheatEvents(snapshot);
  const WallTime now = clock_->WallNow();  // heartbeatTime (RFC 3339)
  kube::TypedClient<api::GpuNode> gpunodes(client_);
  absl::Status error;
  for (int attempt = 0; attempt <= options_.max_conflict_retries; ++attempt) {
    if (!current_) {
      absl::StatusOr<api::GpuNode> read = ReadOrCreate();
      if (!read.ok()) {
        error = read.status();
        break;
      }
      current_ = *std::move(read);
    }
    api::GpuNode desired = *current_;
    desired.status = MakeGpuNodeStatus(snapshot, {options_.agent_version, options_.no_gpu_reason,
                                                  now, current_->status.conditions});
    absl::StatusOr<api::GpuNode> written = gpunodes.UpdateStatus(desired);
    if (written.ok()) {
      current_ = *written;
      absl::MutexLock lock(&mu_);
      if (state_.consecutive_failures > 0) {
        Log(absl::StrCat("GPUNode ", options_.node_name, ": published again after ",
                         state_.consecutive_failures, " failures"));
      }
      ++state_.publishes;
      state_.consecutive_failures = 0;
      state_.resource_version = written->metadata.resource_version;
      return written;
    }
    error = written.status();
    // Conflict: someone else wrote it (read it again); NotFound: it was deleted (create it).
    if (!kube::IsConflict(error) && !kube::IsNotFound(error)) break;
    current_.reset();
    if (attempt == options_.max_conflict_retries) {
      error =
          absl::AbortedError(absl::StrCat("GPUNode ", options_.node_name, ": still ",
                                          error.message(), " after ", attempt + 1, " attempts"));
    }
  }
  RecordFailure(error);
  return error;
}

std::chrono::nanoseconds GpuNodePublisher::Backoff(std::int64_t failures) const {
  std::chrono::nanoseconds delay = options_.initial_backoff;
  for (std::int64_t i = 1; i < failures && delay < options_.max_backoff; ++i) delay *= 2;
  return std::min(delay, options_.max_backoff);
}

void GpuNodePublisher::Start() {
  absl::MutexLock lock(&mu_);
  if (started_ || stopping_) return;
  started_ = true;
  loop_ = std::thread([this] { Loop(); });
}

void GpuNodePublisher::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (loop_.joinable()) loop_.join();
}

void GpuNodePublisher::Loop() {
  for (;;) {
    absl::StatusOr<api::GpuNode> published = Publish();
    absl::MutexLock lock(&mu_);
    std::chrono::nanoseconds delay = options_.interval;
    if (!published.ok()) {
      delay = Backoff(state_.consecutive_failures);
      Log(absl::StrCat("GPUNode ", options_.node_name, ": publish failed (",
                       published.status().ToString(), "); retrying in ",
                       std::chrono::duration<double>(delay).count(), " s"));
    }
    const MonotonicTime deadline = clock_->Now() + delay;
    if (clock_->WaitUntil(mu_, deadline, absl::Condition(&stopping_))) return;
  }
}

void GpuNodePublisher::RecordCheatEvents(const AgentStatus& snapshot) {
  std::set<std::string> flagged;
  for (const GpuStatus& gpu : snapshot.gpus) {
    for (const TaskStatus& task : gpu.tasks) {
      if (!task.cheating) continue;
      const std::string key = PodKey(task);
      flagged.insert(key);
      if (flagged_pods_.count(key) > 0) continue;
      Log(absl::StrCat("GPUNode ", options_.node_name, ": background pod ", key, " on GPU ",
                       gpu.info.index, " cheats: ", task.cheating_reason));
      if (events_ == nullptr) continue;
      const nlohmann::json pod = {{"apiVersion", "v1"},
                                  {"kind", "Pod"},
                                  {"namespace", task.namespace_name},
                                  {"name", task.pod}};
      events_->Event(pod, kube::EventType::kWarning, kReasonLaunchesOutsideGate,
                     absl::StrCat("GPU ", gpu.info.index, " of node ", options_.node_name, ": ",
                                  task.cheating_reason,
                                  "; the launch gate is cooperative and this pod bypasses it"));
    }
  }
  flagged_pods_ = std::move(flagged);
}

GpuNodePublisherState GpuNodePublisher::State() const {
  absl::MutexLock lock(&mu_);
  return state_;
}

void GpuNodePublisher::Log(std::string_view line) const {
  if (options_.log) {
    options_.log(line);
  } else {
    std::cerr << "wavepool-agent: " << line << std::endl;
  }
}

}  // namespace wavepool::agent
