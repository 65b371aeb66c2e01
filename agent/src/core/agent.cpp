#include "wavepool/agent/agent.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <iterator>
#include <limits>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "host_dir/no_follow_fs.h"
#include "identity/registration_check.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::agent {

struct Agent::Task {
  SessionId session = 0;
  TaskLabels labels;
  std::int32_t pid = 0;
  SlotGrant slot;
  std::uint32_t requested_credits = 0;
  std::uint32_t credit_limit = 0;
  std::uint32_t batch_size = 0;                // background: as registered
  std::uint32_t recommended_batch_size = 0;    // background: 0 = keep
  std::unique_ptr<BackgroundAdvisor> advisor;  // background
  std::unique_ptr<SlowdownFeedback> feedback;  // foreground
  TaskMetrics* metrics = nullptr;              // owned by the AgentMetrics
  std::deque<MemorySample> memory;             // the worker's allocator samples, recent
  // What each of the task's waves holds (ReportWaveMemory; tick-tock's tick and tock), recent.
  std::map<std::uint8_t, std::deque<MemorySample>> wave_memory;
  // The last ReportIteration, published as the task's progress in the GPUNode.
  std::optional<ReportIteration> last_iteration;
};

struct Agent::Gpu {
  GpuInfo info;
  std::unique_ptr<GateSegment> gate;
  GpuMetrics* metrics = nullptr;  // owned by the AgentMetrics
  std::deque<GpuSample> samples;  // the wave window
  std::optional<MemoryWave> wave;
  std::optional<Seconds> phase_offset;
  std::optional<double> phase_offset_ratio;
  std::optional<double> foreground_occupancy, background_occupancy;
  MonotonicTime last_wave;  // the clock's epoch before the first
  MonotonicTime last_advice;
};

namespace {

constexpr std::size_t kMaxTaskMemorySamples = 1 << 16;
// A task's wave samples together stay within its allocator samples' bound.
constexpr std::size_t kMaxWaveMemorySamples = kMaxTaskMemorySamples / kMaxWavesPerTask;
// Connections one pod may hold (a worker per GPU, and room for reconnections); unlimited with
// trust_register, where every worker may be a thread of one process.
constexpr std::size_t kMaxConnectionsPerPod = 16;

// The memory a worker's allocator reports holding, as points for the memory-wave analysis.
std::vector<MemoryPoint> AllocatedPoints(const std::deque<MemorySample>& reports) {
  return PointsFromAllocatorSamples(std::vector<MemorySample>(reports.begin(), reports.end()),
                                    AllocatorField::kAllocated);
}

// The protocol keeps a report's samples in time order (DecodeFrame); these keep them in order
// across a task's reports, which TaskMemorySamples' readers and the wave analysis rely on.
// InvalidArgument naming the first sample that goes back in time; nothing of the report is kept.
absl::Status CheckMemoryOrder(const std::deque<MemorySample>& kept, const ReportMemory& report) {
  if (kept.empty() || report.samples.empty()) return absl::OkStatus();
  const std::int64_t last = kept.back().time_ns;
  if (report.samples.front().time_ns >= last) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("ReportMemory.samples[0].time_ns: ", report.samples.front().time_ns,
                   " < the task's previous sample's time_ns ", last,
                   " (samples must stay in time order across reports)"));
}

absl::Status CheckWaveMemoryOrder(const std::map<std::uint8_t, std::deque<MemorySample>>& kept,
                                  const ReportWaveMemory& report) {
  // Only a wave's first sample in a report can go back (DecodeFrame orders the rest); indexed by
  // any u8, whatever the caller passes.
  std::array<bool, 256> checked{};
  for (std::size_t i = 0; i < report.samples.size(); ++i) {
    const WaveMemorySample& sample = report.samples[i];
    if (std::exchange(checked[sample.wave], true)) continue;
    auto wave = kept.find(sample.wave);
    if (wave == kept.end() || wave->second.empty()) continue;
    const std::int64_t last = wave->second.back().time_ns;
    if (sample.time_ns >= last) continue;
    return absl::InvalidArgumentError(
        absl::StrCat("ReportWaveMemory.samples[", i, "].time_ns: ", sample.time_ns,
                     " < the task's previous sample's time_ns ", last, " of wave ", sample.wave,
                     " (a wave's samples must stay in time order across reports)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Validate(const AgentOptions& o) {
  if (o.directory.empty()) return absl::InvalidArgumentError("directory: must be set");
  if (o.hostname.empty()) return absl::InvalidArgumentError("hostname: must be set");
  if (o.slots_per_gpu < 1 || o.slots_per_gpu > kMaxSlotsPerGpu) {
    return absl::InvalidArgumentError(absl::StrCat("slots_per_gpu: must be in [1, ",
                                                   kMaxSlotsPerGpu, "], got ", o.slots_per_gpu));
  }
  if (o.sample_period.count() <= 0 || o.control_period < o.sample_period ||
      o.telemetry_period < o.sample_period) {
    return absl::InvalidArgumentError(
        "sample_period: must be > 0 and no longer than control_period and telemetry_period");
  }
  WAVEPOOL_RETURN_IF_ERROR(Validate(o.pacing));
  WAVEPOOL_RETURN_IF_ERROR(Validate(o.feedback));
  WAVEPOOL_RETURN_IF_ERROR(Validate(o.cheat));
  if (o.identity == nullptr && !o.trust_register) {
    return absl::InvalidArgumentError(
        "identity: must be set (who a worker is, from its process), unless trust_register");
  }
  return absl::OkStatus();
}

Agent::Agent(AgentOptions options, GpuDevicesPtr devices, Clock* clock, CommandRunner* runner)
    : options_(std::move(options)),
      devices_(std::move(devices)),
      clock_(clock),
      socket_path_(options_.directory + "/agent.sock"),
      // A fresh epoch per agent start: workers of a previous agent find their gate replaced.
      epoch_(
          static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) ^
          static_cast<std::uint64_t>(getpid())),
      mps_(
          [&] {
            MpsControl::Options mps = options_.mps;
            if (mps.directory.empty()) mps.directory = options_.directory;
            return mps;
          }(),
          runner),
      cheats_(options_.cheat) {}

absl::StatusOr<std::unique_ptr<Agent>> Agent::Start(AgentOptions options, GpuDevicesPtr devices,
                                                    Clock* clock, CommandRunner* runner) {
  WAVEPOOL_RETURN_IF_ERROR(Validate(options));
  if (devices == nullptr || clock == nullptr || runner == nullptr) {
    return absl::InvalidArgumentError("agent: devices, clock and runner are required");
  }
  std::unique_ptr<Agent> agent(new Agent(std::move(options), std::move(devices), clock, runner));
  WAVEPOOL_RETURN_IF_ERROR(agent->Init());
  return agent;
}

absl::Status Agent::Init() {
  WAVEPOOL_RETURN_IF_ERROR(internal::MakeDirectoryNoFollow(options_.directory, 0755));
  std::vector<MpsGpu> mps_gpus;
  std::vector<GpuIdentity> identities;
  bool gpm = false;
  {
    absl::MutexLock lock(&mu_);
    for (const GpuInfo& info : devices_->gpus()) {
      auto gpu = std::make_unique<Gpu>();
      gpu->info = info;
      WAVEPOOL_ASSIGN_OR_RETURN(
          std::unique_ptr<GateSegment> gate,
          GateSegment::Create(options_.directory, info.index, options_.slots_per_gpu, epoch_));
      gpu->gate = std::move(gate);
      mps_gpus.push_back({info.index, info.uuid});
      const bool has_gpm = Measures(info, "sm_occupancy");
      gpm = gpm || has_gpm;
      identities.push_back({info.index, info.uuid, has_gpm});
      gpus_.push_back(std::move(gpu));
    }
  }
  mps_.Start(mps_gpus);
  MetricsOptions metrics;
  metrics.hostname = options_.hostname;
  metrics.info = {options_.version, options_.nvml_devices, mps_.running() > 0, gpm};
  metrics.gpus = identities;
  metrics.bind_address = options_.metrics_address;
  metrics.port = options_.metrics_port;
  WAVEPOOL_ASSIGN_OR_RETURN(std::unique_ptr<AgentMetrics> created, AgentMetrics::Create(metrics));
  metrics_ = std::move(created);
  {
    absl::MutexLock lock(&mu_);
    for (auto& gpu : gpus_) gpu->metrics = metrics_->gpu(gpu->info.index);
  }
  SocketServer::Options server;
  server.path = socket_path_;
  server.mode = options_.mode;
  server.group = options_.group;
  if (PeerIdentity* identity = options_.trust_register ? nullptr : options_.identity) {
    server.connection_group = [identity](const PeerCredentials& peer) {
      return identity->ConnectionGroup(peer.pid);
    };
    server.max_connections_per_group = kMaxConnectionsPerPod;
  }
  WAVEPOOL_ASSIGN_OR_RETURN(std::unique_ptr<SocketServer> started,
                            SocketServer::Start(server, this));
  server_ = std::move(started);
  loop_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

Agent::~Agent() { Stop(); }

void Agent::Stop() {
  if (!stopping_.HasBeenNotified()) stopping_.Notify();
  if (loop_.joinable()) loop_.join();
  if (server_ != nullptr) server_->Stop();  // closes every session: OnClosed reclaims its slot
  mps_.Stop();
}

// Samples every sample_period and applies the policy every control_period. Waiting is on the
// wall clock (so that Stop wakes it); timestamps come from the agent's Clock.
void Agent::Loop() {
  // The clock's epoch stands for "never".
  MonotonicTime last_control, last_telemetry;
  const auto period = absl::FromChrono(options_.sample_period);
  auto due = [](MonotonicTime now, MonotonicTime last, std::chrono::milliseconds every) {
    return last == MonotonicTime() || now - last >= every;
  };
  do {
    const MonotonicTime now = clock_->Now();
    const bool telemetry = due(now, last_telemetry, options_.telemetry_period);
    Sample(now, telemetry);
    if (telemetry) last_telemetry = now;
    if (due(now, last_control, options_.control_period)) {
      Control(now);
      last_control = now;
    }
  } while (!stopping_.WaitForNotificationWithTimeout(period));
}

// Memory at every tick (the waves need 100 Hz), everything else every telemetry_period: a full
// NVML sample costs several calls, memory one.
void Agent::Sample(MonotonicTime now, bool full) {
  for (const GpuInfo& info : devices_->gpus()) {
    absl::StatusOr<GpuSample> sample =
        full ? devices_->Sample(info.index) : devices_->SampleMemory(info.index);
    if (!sample.ok()) continue;  // the device says what it cannot measure in its limitations
    absl::MutexLock lock(&mu_);
    Gpu& gpu = *gpus_[info.index];
    gpu.metrics->SetMemory(static_cast<std::int64_t>(sample->memory_used_bytes),
                           static_cast<std::int64_t>(info.memory_total_bytes));
    if (full) RecordUtilization(gpu, *sample);
    gpu.samples.push_back(*std::move(sample));
    while (!gpu.samples.empty() && gpu.samples.front().time < now - options_.wave_window) {
      gpu.samples.pop_front();
    }
  }
}

void Agent::RecordUtilization(Gpu& gpu, const GpuSample& sample) {
  if (sample.utilization) gpu.metrics->SetUtilization(*sample.utilization);
  if (sample.sm_occupancy) gpu.metrics->SetSmOccupancy(*sample.sm_occupancy);
  if (!Measures(gpu.info, "processes")) return;
  double foreground = 0, background = 0;
  for (const ProcessUtilization& p : sample.processes) {
    for (const auto& [session, task] : tasks_) {
      if (task->labels.gpu != gpu.info.index || task->pid != p.pid) continue;
      (task->labels.role == Role::kForeground ? foreground : background) += p.sm_utilization;
    }
  }
  gpu.foreground_occupancy = std::min(1.0, foreground);
  gpu.background_occupancy = std::min(1.0, background);
  gpu.metrics->SetRoleSmOccupancy(*gpu.foreground_occupancy, *gpu.background_occupancy);
  JudgeBackground(gpu, sample);
}

// What each background process used over the last telemetry period against what the gate let it
// do (cheat_detector.h); a process NVML does not list used nothing.
void Agent::JudgeBackground(Gpu& gpu, const GpuSample& sample) {
  for (const auto& [session, task] : tasks_) {
    if (task->labels.gpu != gpu.info.index || task->labels.role != Role::kBackground) continue;
    // Workers that are threads of one process (trust_register, local mode) share a pid: NVML
    // cannot tell their work apart, so none of them is judged.
    // An init-capture: C++17 does not let a lambda capture a structured binding itself.
    const bool shared_pid =
        std::any_of(tasks_.begin(), tasks_.end(), [&, &judged = task](const auto& other) {
          return other.second != judged && other.second->labels.gpu == gpu.info.index &&
                 other.second->pid == judged->pid;
        });
    if (shared_pid) continue;
    double used = 0;
    for (const ProcessUtilization& p : sample.processes) {
      used += p.pid == task->pid ? p.sm_utilization : 0;
    }
    switch (cheats_.ObserveUtilization(sample.time, task->pid, Role::kBackground, used)) {
      case CheatTransition::kFlagged:
        metrics_->CountCheatingDetection();
        task->metrics->SetCheating(true);
        break;
      case CheatTransition::kCleared:
        task->metrics->SetCheating(false);
        break;
      case CheatTransition::kNone:
        break;
    }
  }
}

void Agent::Control(MonotonicTime now) {
  absl::MutexLock lock(&mu_);
  for (auto& gpu_ptr : gpus_) {
    Gpu& gpu = *gpu_ptr;
    gpu.gate->Beat(ToMonotonicNanos(now));  // shared memory holds integers
    gpu.metrics->SetBackgroundHold(gpu.gate->ForegroundHold() > 0);
    if (now - gpu.last_wave >= options_.wave_interval) {
      AnalyzeWaves(gpu);
      gpu.last_wave = now;
    }
    if (now - gpu.last_advice >= options_.advisor_interval) {
      AdviseBackground(gpu);
      gpu.last_advice = now;
    }
  }
  for (const auto& [session, task] : tasks_) {
    const Gpu& gpu = *gpus_[task->labels.gpu];
    const SlotSnapshot slot = gpu.gate->Read(task->slot.slot);
    if (task->labels.role == Role::kBackground) {
      cheats_.ObserveGate(task->pid, {now, slot.pause || gpu.gate->ForegroundHold() > 0,
                                      slot.credit_limit, slot.in_flight, slot.acquired_total});
    }
    task->metrics->ObserveGate({slot.credit_limit, slot.in_flight, slot.acquired_total,
                                slot.wait_ns_total, slot.paused_ns_total});
    if (task->feedback != nullptr) {
      task->metrics->SetForegroundSlowdown(task->feedback->SlowdownRatio());
      task->metrics->SetSensitiveOpGroups(
          static_cast<std::uint32_t>(task->feedback->SensitiveCount()));
    }
  }
  metrics_->SetHeartbeat(clock_->WallNow());
}

void Agent::AnalyzeWaves(Gpu& gpu) {
  MemoryWaveOptions options;
  options.capacity_bytes = gpu.info.memory_total_bytes;
  const std::vector<GpuSample> samples(gpu.samples.begin(), gpu.samples.end());
  absl::StatusOr<MemoryWave> wave = AnalyzeMemoryWave(PointsFromGpuSamples(samples), options);
  if (!wave.ok()) wave = AnalyzeForegroundAllocatorWave(gpu, samples, options);
  if (!wave.ok()) return;  // no wave yet: keep the last one
  gpu.wave = *wave;
  MemoryWaveSummary summary;
  // Clamped: an allocator-derived wave may claim more than an int64 holds.
  const auto to_gauge = [](std::uint64_t bytes) {
    return static_cast<std::int64_t>(
        std::min<std::uint64_t>(bytes, std::numeric_limits<std::int64_t>::max()));
  };
  summary.peak_bytes = to_gauge(wave->peak_bytes);
  summary.trough_bytes = to_gauge(wave->trough_bytes);
  summary.period = wave->period;
  summary.headroom_bytes = wave->headroom_bytes.value_or(0);
  // Tick-tock (wavelet-tick-tock §3.2): the offset between the waves' memory, from a foreground
  // task's first two waves (both in one worker), or from two foreground tasks of one job.
  const auto measure = [&](const std::deque<MemorySample>& first,
                           const std::deque<MemorySample>& second) {
    absl::StatusOr<PhaseOffset> offset =
        MeasurePhaseOffset(AllocatedPoints(first), AllocatedPoints(second));
    if (!offset.ok()) return;
    summary.phase_offset = offset->offset;
    summary.phase_offset_ratio = offset->fraction;
    gpu.phase_offset = offset->offset;
    gpu.phase_offset_ratio = offset->fraction;
  };
  std::vector<const Task*> foregrounds;
  for (const auto& [session, task] : tasks_) {
    if (task->labels.gpu != gpu.info.index || task->feedback == nullptr) continue;
    if (task->wave_memory.size() >= 2) {
      measure(task->wave_memory.begin()->second, std::next(task->wave_memory.begin())->second);
    }
    if (!task->memory.empty()) foregrounds.push_back(task.get());
  }
  for (size_t a = 0; a + 1 < foregrounds.size(); ++a) {
    for (size_t b = a + 1; b < foregrounds.size(); ++b) {
      if (foregrounds[a]->labels.job == foregrounds[b]->labels.job &&
          foregrounds[a]->labels.namespace_name == foregrounds[b]->labels.namespace_name) {
        measure(foregrounds[a]->memory, foregrounds[b]->memory);
      }
    }
  }
  gpu.metrics->SetMemoryWave(summary);
}

absl::StatusOr<MemoryWave> Agent::AnalyzeForegroundAllocatorWave(
    const Gpu& gpu, const std::vector<GpuSample>& samples, const MemoryWaveOptions& options) {
  // A caching allocator (LibTorch's) keeps the memory it reserved, so the device's used memory
  // stays flat while the tensors training holds rise and fall every iteration; the foreground's
  // own allocator reports show that wave. Of several foregrounds, the one holding the most.
  const Task* largest = nullptr;
  for (const auto& [session, task] : tasks_) {
    if (task->labels.gpu != gpu.info.index || task->labels.role != Role::kForeground ||
        task->memory.empty()) {
      continue;
    }
    if (largest == nullptr ||
        task->memory.back().allocated_bytes > largest->memory.back().allocated_bytes) {
      largest = task.get();
    }
  }
  if (largest == nullptr) return absl::NotFoundError("no foreground allocator reports");
  absl::StatusOr<MemoryWave> wave = AnalyzeMemoryWave(AllocatedPoints(largest->memory), options);
  // The headroom others may use is under what the device has handed out, reserved included.
  if (wave.ok() && options.capacity_bytes.has_value() && !samples.empty()) {
    std::uint64_t used = 0;
    for (const GpuSample& sample : samples) used = std::max(used, sample.memory_used_bytes);
    wave->headroom_bytes =
        HeadroomBytes(*options.capacity_bytes, std::max<std::uint64_t>(used, wave->peak_bytes));
  }
  return wave;
}

void Agent::AdviseBackground(Gpu& gpu) {
  double worst = 1, limit = options_.feedback.default_max_slowdown;
  bool foreground = false;
  for (const auto& [session, task] : tasks_) {
    if (task->labels.gpu != gpu.info.index || task->feedback == nullptr) continue;
    foreground = true;
    if (task->feedback->SlowdownRatio() / task->feedback->max_slowdown() >= worst / limit) {
      worst = task->feedback->SlowdownRatio();
      limit = task->feedback->max_slowdown();
    }
  }
  if (!foreground) return;
  for (const auto& [session, task] : tasks_) {
    if (task->labels.gpu != gpu.info.index || task->labels.role != Role::kBackground ||
        task->batch_size == 0) {
      continue;
    }
    const std::uint32_t recommended = task->advisor->Check(worst, limit, task->batch_size);
    if (recommended == 0) continue;
    task->recommended_batch_size = recommended;
    task->metrics->SetRecommendedBatchSize(recommended);
    SendPolicy(*task);
  }
}

absl::Status Agent::CheckPodSlots(const WorkerIdentity& identity, const GpuInfo& gpu) const {
  std::size_t held = 0;
  bool holds_gpu = false;
  for (const auto& [session, task] : tasks_) {
    if (task->labels.namespace_name != identity.namespace_name ||
        task->labels.pod != identity.pod) {
      continue;
    }
    ++held;
    holds_gpu = holds_gpu || task->labels.gpu == gpu.index;
  }
  return internal::CheckPodSlots(identity, gpu, held, holds_gpu);
}

bool Agent::HasRole(const Gpu& gpu, Role role) const {
  return std::any_of(tasks_.begin(), tasks_.end(), [&](const auto& entry) {
    return entry.second->labels.gpu == gpu.info.index && entry.second->labels.role == role;
  });
}

void Agent::RepaceBackground(Gpu& gpu) {
  const bool foreground = HasRole(gpu, Role::kForeground);
  const Foregrounds foregrounds{gpu.gate->Foregrounds()};
  for (const auto& [session, task] : tasks_) {
    if (task->labels.gpu != gpu.info.index || task->labels.role != Role::kBackground) continue;
    // The foregrounds' hold words to obey; until it maps a new one, the background pauses.
    (void)server_->Send(task->session, foregrounds);
    const std::uint32_t limit =
        CreditLimit(options_.pacing, Role::kBackground, task->requested_credits, foreground);
    if (limit == task->credit_limit) continue;
    task->credit_limit = limit;
    gpu.gate->SetCreditLimit(task->slot.slot, static_cast<std::int32_t>(limit));
    SendPolicy(*task);
  }
}

void Agent::SendPolicy(const Task& task) {
  Policy policy;
  policy.credit_limit = task.credit_limit;
  policy.stream_priority = StreamPriorityFor(task.labels.role);
  policy.recommended_batch_size = task.recommended_batch_size;
  policy.reason = task.recommended_batch_size != 0 ? "the foreground stays over its slowdown limit"
                                                   : "a foreground task came or went";
  // A session that just closed drops the policy: nothing to do.
  (void)server_->Send(task.session, policy);
}

absl::StatusOr<std::optional<WorkerIdentity>> Agent::IdentifyPeer(const PeerCredentials& peer,
                                                                  const RegisterRequest& request) {
  return internal::CheckRegister(options_.trust_register ? nullptr : options_.identity, peer,
                                 request);
}

absl::StatusOr<Registered> Agent::OnRegister(SessionId session, const PeerCredentials& peer,
                                             const RegisterRequest& request) {
  return OnIdentifiedRegister(session, peer, request, IdentifyPeer(peer, request));
}

absl::StatusOr<Registered> Agent::OnIdentifiedRegister(
    SessionId session, const PeerCredentials& peer, const RegisterRequest& request,
    const absl::StatusOr<std::optional<WorkerIdentity>>& identity) {
  absl::MutexLock lock(&mu_);
  auto reject = [&](absl::Status status) {
    metrics_->CountRegistration(request.role, status.code() == absl::StatusCode::kResourceExhausted
                                                  ? RegistrationResult::kNoFreeSlot
                                                  : RegistrationResult::kRejected);
    return status;
  };
  if (!identity.ok()) return reject(identity.status());
  if (request.gpu_index >= gpus_.size()) {
    return reject(absl::InvalidArgumentError(absl::StrCat("Register.gpu_index: ", request.gpu_index,
                                                          " is not a GPU of this node (it has ",
                                                          gpus_.size(), ")")));
  }
  for (const auto& [field, value] :
       {std::pair{"namespace", &request.namespace_name}, std::pair{"job", &request.job},
        std::pair{"pod", &request.pod}}) {
    if (value->empty()) {
      return reject(absl::InvalidArgumentError(absl::StrCat("Register.", field, ": empty")));
    }
  }
  Gpu& gpu = *gpus_[request.gpu_index];
  if (identity->has_value()) {
    if (absl::Status s = CheckPodSlots(**identity, gpu.info); !s.ok()) return reject(s);
  }
  const bool foreground = request.role == Role::kForeground || HasRole(gpu, Role::kForeground);
  auto task = std::make_unique<Task>();
  task->session = session;
  task->labels = {request.namespace_name, request.job, request.pod, request.role,
                  request.gpu_index};
  task->pid = peer.pid;
  task->requested_credits = request.credit_limit;
  task->credit_limit = CreditLimit(options_.pacing, request.role, request.credit_limit, foreground);
  task->batch_size = request.batch_size;
  absl::StatusOr<SlotGrant> grant =
      gpu.gate->Allocate(request.role, peer.pid, static_cast<std::int32_t>(task->credit_limit),
                         request.worker_segment);
  if (!grant.ok()) return reject(grant.status());
  task->slot = *grant;
  absl::StatusOr<TaskMetrics*> metrics = metrics_->AddTask(task->labels);
  if (!metrics.ok()) {
    gpu.gate->Reclaim(grant->slot);
    return reject(metrics.status());
  }
  task->metrics = *metrics;
  if (request.role == Role::kForeground) {
    task->feedback =
        std::make_unique<SlowdownFeedback>(request.max_foreground_slowdown, options_.feedback);
    task->metrics->SetForegroundSlowdownSlo(task->feedback->max_slowdown());
  } else {
    task->advisor = std::make_unique<BackgroundAdvisor>(options_.advisor_patience);
  }
  Registered reply;
  reply.slot = grant->slot;
  reply.gate_path = gpu.gate->path();
  reply.gate_epoch = gpu.gate->epoch();
  reply.gate_generation = grant->generation;
  reply.stream_priority = StreamPriorityFor(request.role);
  reply.credit_limit = task->credit_limit;
  reply.mps_pipe_directory = mps_.PipeDirectory(request.gpu_index);
  reply.mps_client_priority = MpsClientPriority(request.role);
  reply.gate = gpu.gate->descriptor();  // sealed: workers map it read-only
  if (request.role == Role::kBackground) reply.foregrounds = gpu.gate->Foregrounds();
  tasks_[session] = std::move(task);
  metrics_->CountRegistration(request.role, RegistrationResult::kAccepted);
  if (request.role == Role::kForeground) RepaceBackground(gpu);
  return reply;
}

absl::Status Agent::OnReport(SessionId session, const Message& report) {
  absl::MutexLock lock(&mu_);
  auto it = tasks_.find(session);
  if (it == tasks_.end()) return absl::FailedPreconditionError("report from an unknown session");
  Task& task = *it->second;
  Gpu& gpu = *gpus_[task.labels.gpu];
  if (const auto* ops = std::get_if<ReportOps>(&report)) {
    metrics_->CountReport(ReportType::kOps);
    if (task.feedback == nullptr) return absl::OkStatus();  // background groups: not judged
    const bool background = HasRole(gpu, Role::kBackground);
    std::vector<SensitivityChange> changes;
    for (const OpGroupReport& group : ops->groups)
      task.feedback->Observe(group, background, &changes);
    for (const SensitivityChange& c : changes) {
      gpu.gate->SetSensitive(task.slot.slot, c.op_group, c.sensitive);
    }
  } else if (const auto* memory = std::get_if<ReportMemory>(&report)) {
    metrics_->CountReport(ReportType::kMemory);
    WAVEPOOL_RETURN_IF_ERROR(CheckMemoryOrder(task.memory, *memory));
    for (const MemorySample& sample : memory->samples) task.memory.push_back(sample);
    while (task.memory.size() > kMaxTaskMemorySamples) task.memory.pop_front();
  } else if (const auto* waves = std::get_if<ReportWaveMemory>(&report)) {
    metrics_->CountReport(ReportType::kWaveMemory);
    WAVEPOOL_RETURN_IF_ERROR(CheckWaveMemoryOrder(task.wave_memory, *waves));
    for (const WaveMemorySample& sample : waves->samples) {
      std::deque<MemorySample>& wave = task.wave_memory[sample.wave];
      wave.push_back({sample.time_ns, sample.allocated_bytes, 0});
      if (wave.size() > kMaxWaveMemorySamples) wave.pop_front();
    }
  } else if (const auto* iteration = std::get_if<ReportIteration>(&report)) {
    metrics_->CountReport(ReportType::kIteration);
    absl::Status observed =
        task.metrics->ObserveIteration(Seconds(iteration->seconds), iteration->samples);
    if (observed.ok()) task.last_iteration = *iteration;
    return observed;
  }
  return absl::OkStatus();
}

void Agent::OnClosed(SessionId session, bool said_goodbye) {
  absl::MutexLock lock(&mu_);
  auto it = tasks_.find(session);
  if (it == tasks_.end()) return;
  std::unique_ptr<Task> task = std::move(it->second);
  tasks_.erase(it);
  Gpu& gpu = *gpus_[task->labels.gpu];
  gpu.gate->Reclaim(task->slot.slot);
  metrics_->RemoveTask(task->metrics);
  if (std::none_of(tasks_.begin(), tasks_.end(),
                   [&](const auto& entry) { return entry.second->pid == task->pid; })) {
    cheats_.Forget(task->pid);
  }
  if (!said_goodbye) metrics_->CountReclaimedSlot();
  if (task->labels.role == Role::kForeground) RepaceBackground(gpu);
}

void Agent::OnProtocolError(const PeerCredentials&, const absl::Status& error) {
  switch (error.code()) {
    case absl::StatusCode::kUnimplemented:
      metrics_->CountProtocolError(ProtocolErrorKind::kUnsupportedVersion);
      break;
    case absl::StatusCode::kResourceExhausted:
      metrics_->CountProtocolError(ProtocolErrorKind::kOversized);
      break;
    case absl::StatusCode::kFailedPrecondition:
      metrics_->CountProtocolError(ProtocolErrorKind::kOutOfOrder);
      break;
    default:
      metrics_->CountProtocolError(ProtocolErrorKind::kMalformed);
  }
}

AgentStatus Agent::Status() const {
  AgentStatus status;
  status.devices = devices_->Describe();
  status.mps = mps_.Status();
  status.epoch = epoch_;
  absl::MutexLock lock(&mu_);
  for (const auto& gpu : gpus_) {
    GpuStatus g;
    g.info = gpu->info;
    g.gate_path = gpu->gate->path();
    g.mps_pipe_directory = mps_.PipeDirectory(gpu->info.index);
    g.background_held = gpu->gate->ForegroundHold() > 0;
    g.memory_wave = gpu->wave;
    g.phase_offset = gpu->phase_offset;
    g.phase_offset_ratio = gpu->phase_offset_ratio;
    g.foreground_sm_occupancy = gpu->foreground_occupancy;
    g.background_sm_occupancy = gpu->background_occupancy;
    for (const auto& [session, task] : tasks_) {
      if (task->labels.gpu != gpu->info.index) continue;
      TaskStatus t;
      t.namespace_name = task->labels.namespace_name;
      t.job = task->labels.job;
      t.pod = task->labels.pod;
      t.role = task->labels.role;
      t.pid = task->pid;
      t.slot = task->slot.slot;
      t.credit_limit = task->credit_limit;
      if (task->feedback != nullptr) {
        t.foreground_slowdown = task->feedback->SlowdownRatio();
        t.sensitive_op_groups = task->feedback->SensitiveCount();
      }
      t.recommended_batch_size = task->recommended_batch_size;
      t.last_iteration = task->last_iteration;
      const SlotSnapshot slot = gpu->gate->Read(task->slot.slot);
      t.launch_wait = std::chrono::nanoseconds(slot.wait_ns_total);
      t.launch_paused = std::chrono::nanoseconds(slot.paused_ns_total);
      if (task->labels.role == Role::kBackground) {
        const std::optional<CheatVerdict> verdict = cheats_.Verdict(task->pid);
        t.cheating = verdict && verdict->cheating;
        if (t.cheating) t.cheating_reason = verdict->reason;
      }
      g.tasks.push_back(t);
    }
    status.gpus.push_back(std::move(g));
  }
  return status;
}

std::vector<MemorySample> Agent::TaskMemorySamples(GpuIndex gpu, std::int32_t pid,
                                                   std::int64_t after_ns) const {
  absl::MutexLock lock(&mu_);
  for (const auto& [session, task] : tasks_) {
    if (task->labels.gpu != gpu || task->pid != pid) continue;
    // Samples arrive in time order (protocol.h): the newer ones are a suffix.
    auto last_read = std::find_if(task->memory.rbegin(), task->memory.rend(),
                                  [&](const MemorySample& s) { return s.time_ns <= after_ns; });
    return std::vector<MemorySample>(last_read.base(), task->memory.end());
  }
  return {};
}

}  // namespace wavepool::agent
