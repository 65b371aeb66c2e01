// The Agent's start and stop and its sessions (agent.h): registrations checked and given a gate
// slot and a policy, reports fed to the slowdown feedback loop and kept for the memory waves,
// closed sessions' slots reclaimed, and the Status the GPUNode publishes. The control loop that
// samples the GPUs and applies the policy is control_loop.cpp.
#include "wavepool/agent/agent.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/agent_state.h"
#include "host_dir/no_follow_fs.h"
#include "identity/registration_check.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::agent {

namespace {

constexpr std::size_t kMaxTaskMemorySamples = 1 << 16;
// A task's wave samples together stay within its allocator samples' bound.
constexpr std::size_t kMaxWaveMemorySamples = kMaxTaskMemorySamples / kMaxWavesPerTask;
// Connections one pod may hold (a worker per GPU, and room for reconnections); unlimited with
// trust_register, where every worker may be a thread of one process.
constexpr std::size_t kMaxConnectionsPerPod = 16;

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
