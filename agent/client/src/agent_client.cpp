#include "wavepool/agent/client/agent_client.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <deque>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent_connection.h"
#include "wavepool/agent/client/launch_gate.h"
#include "wavepool/base/errno_error.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::agent {
namespace {

using internal::AgentConnection;
using SteadyClock = std::chrono::steady_clock;

// Above this many unsent bytes the thread stops encoding reports: they wait in the bounded
// report buffers (where the oldest are dropped) instead of growing the socket's queue.
constexpr std::size_t kOutputHighWaterBytes = 1 << 20;
constexpr std::size_t kIterationsPerFlush = 256;

std::int64_t MonotonicNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

absl::Status CheckOptions(const AgentClient::Options& o) {
  const auto bad = [](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("AgentClient::Options.", what));
  };
  if (o.socket_path.empty()) return bad("socket_path: must not be empty");
  if (o.flush_interval.count() <= 0) return bad("flush_interval: must be > 0");
  if (o.batch_size < 1 || o.batch_size > kMaxOpGroupsPerReport) {
    return bad(
        absl::StrCat("batch_size: must be in 1..", kMaxOpGroupsPerReport, ", got ", o.batch_size));
  }
  if (o.max_buffered_reports < o.batch_size) {
    return bad(absl::StrCat("max_buffered_reports: must be >= batch_size (", o.batch_size,
                            "), got ", o.max_buffered_reports));
  }
  if (o.reconnect_backoff_min.count() <= 0 || o.reconnect_backoff_max < o.reconnect_backoff_min) {
    return bad("reconnect_backoff_min/max: must satisfy 0 < min <= max");
  }
  if (o.register_timeout.count() <= 0) return bad("register_timeout: must be > 0");
  return absl::OkStatus();
}

// Appends to a bounded buffer, dropping the oldest entry when it is full; true if one was dropped.
template <typename T>
bool PushBounded(std::deque<T>& buffer, const T& value, std::size_t capacity) {
  const bool drop = buffer.size() >= capacity;
  if (drop) buffer.pop_front();
  buffer.push_back(value);
  return drop;
}

template <typename T>
std::vector<T> TakeFront(std::deque<T>& buffer, std::size_t n) {
  n = std::min(n, buffer.size());
  std::vector<T> taken(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n));
  buffer.erase(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(n));
  return taken;
}

}  // namespace

struct AgentClient::Pending {
  std::deque<OpGroupReport> ops;
  std::deque<MemorySample> memory;
  std::deque<WaveMemorySample> wave_memory;
  std::deque<agent::ReportIteration> iterations;
  std::int64_t last_memory_time_ns = std::numeric_limits<std::int64_t>::min();
  std::array<std::int64_t, kMaxWavesPerTask> last_wave_time_ns{};  // all 0: times are >= 0
  bool flush_now = false;  // a batch filled up since the last flush
};

template <typename Sample, typename SamplesOf, typename LastTimeOf>
absl::Status AgentClient::BufferMemory(const char* what, const Sample& sample, SamplesOf samples_of,
                                       LastTimeOf last_time_of) {
  if (sample.time_ns < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": time_ns must be >= 0 (CLOCK_MONOTONIC), got ", sample.time_ns));
  }
  bool wake = false;
  {
    absl::MutexLock lock(&mu_);
    if (closing_.load(std::memory_order_acquire)) {
      return absl::FailedPreconditionError(absl::StrCat(what, ": the agent client is closed"));
    }
    std::int64_t& last = last_time_of(*pending_);
    if (sample.time_ns < last) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": time_ns ", sample.time_ns,
                                                     " < the previous sample's ", last,
                                                     " (samples must be in time order)"));
    }
    last = sample.time_ns;
    std::deque<Sample>& samples = samples_of(*pending_);
    if (PushBounded(samples, sample, options_.max_buffered_reports)) ++stats_.reports_dropped;
    wake = samples.size() == options_.batch_size && !pending_->flush_now;
    pending_->flush_now = pending_->flush_now || wake;
  }
  if (wake) WakeUp();
  return absl::OkStatus();
}

AgentClient::AgentClient(Options options)
    : options_(std::move(options)),
      gate_(std::make_unique<WorkerGate>(options_.registration.role)),
      pending_(std::make_unique<Pending>()),
      backoff_(options_.reconnect_backoff_min),
      random_state_(static_cast<std::uint64_t>(MonotonicNowNs()) ^
                    (static_cast<std::uint64_t>(getpid()) << 32)) {}

absl::StatusOr<std::unique_ptr<AgentClient>> AgentClient::Connect(Options options) {
  WAVEPOOL_RETURN_IF_ERROR(CheckOptions(options));
  if (options.registration.pid == 0) options.registration.pid = static_cast<std::int32_t>(getpid());
  std::unique_ptr<AgentClient> client(new AgentClient(std::move(options)));
  const Options& o = client->options_;
  client->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (client->wake_fd_ < 0) return ErrnoError(errno, "AgentClient: eventfd");
  Registered registered;
  WAVEPOOL_ASSIGN_OR_RETURN(
      std::unique_ptr<AgentConnection> connection,
      AgentConnection::Open(
          o.socket_path, o.registration, SteadyClock::now() + o.register_timeout, client->wake_fd_,
          [] { return false; }, &registered));
  absl::StatusOr<std::unique_ptr<LaunchGate>> gate =
      LaunchGate::Attach(registered, o.registration.role);
  if (!gate.ok()) {
    // Tell the agent to free the slot now rather than when it notices the closed socket.
    if (connection->Queue(Goodbye{}).ok()) {
      (void)connection->Drain(SteadyClock::now() + o.register_timeout);
    }
    return gate.status();
  }
  client->gate_->Bind(std::move(*gate));
  {
    absl::MutexLock lock(&client->mu_);  // uncontended: the thread starts below
    client->registered_ = registered;
  }
  client->connection_ = std::move(connection);
  client->SayIfTheAgentIsOlder();
  client->connected_.store(true, std::memory_order_release);
  client->thread_ = std::thread([c = client.get()] { c->Run(); });
  return client;
}

AgentClient::~AgentClient() {
  Close();
  if (wake_fd_ >= 0) close(wake_fd_);
}

void AgentClient::Close() {
  absl::MutexLock lock(&close_mu_);
  closing_.store(true, std::memory_order_release);
  if (!thread_.joinable()) return;
  WakeUp();
  thread_.join();
}

void AgentClient::Log(std::string_view line) const {
  if (options_.log) options_.log(line);
}

void AgentClient::WakeUp() {
  if (wake_fd_ >= 0) eventfd_write(wake_fd_, 1);
}

bool AgentClient::WaitForWakeUp(std::chrono::nanoseconds timeout) {
  pollfd fds[1] = {{wake_fd_, POLLIN, 0}};
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(std::max(timeout, timeout.zero()));
  if (poll(fds, 1, static_cast<int>(std::min<std::int64_t>(ms.count(), 60'000))) <= 0) {
    return false;
  }
  eventfd_t value;
  while (eventfd_read(wake_fd_, &value) == 0) {
  }
  return true;
}

// --- Reports ------------------------------------------------------------------------------------

absl::Status AgentClient::ReportOp(const OpGroupReport& report) {
  if (report.op_group >= kMaxOpGroups) {
    return absl::InvalidArgumentError(
        absl::StrCat("ReportOp: op_group ", report.op_group, " >= ", kMaxOpGroups));
  }
  if (static_cast<int>(report.kind) > static_cast<int>(OpKind::kCopy)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ReportOp: kind ", static_cast<int>(report.kind), " is not an OpKind (0..3)"));
  }
  bool wake = false;
  {
    absl::MutexLock lock(&mu_);
    if (closing_.load(std::memory_order_acquire)) {
      return absl::FailedPreconditionError("ReportOp: the agent client is closed");
    }
    if (PushBounded(pending_->ops, report, options_.max_buffered_reports)) {
      ++stats_.reports_dropped;
    }
    wake = pending_->ops.size() == options_.batch_size && !pending_->flush_now;
    pending_->flush_now = pending_->flush_now || wake;
  }
  if (wake) WakeUp();
  return absl::OkStatus();
}

absl::Status AgentClient::ReportMemory(const MemorySample& sample) {
  const auto samples = [](Pending& p) -> std::deque<MemorySample>& { return p.memory; };
  const auto last_time = [](Pending& p) -> std::int64_t& { return p.last_memory_time_ns; };
  return BufferMemory("ReportMemory", sample, samples, last_time);
}

absl::Status AgentClient::ReportWaveMemory(const WaveMemorySample& sample) {
  if (sample.wave >= kMaxWavesPerTask) {
    return absl::InvalidArgumentError(
        absl::StrCat("ReportWaveMemory: wave ", sample.wave, " >= ", kMaxWavesPerTask));
  }
  // Each wave's samples are in time order; the waves' threads report independently.
  const auto samples = [](Pending& p) -> std::deque<WaveMemorySample>& { return p.wave_memory; };
  const auto last_time = [&](Pending& p) -> std::int64_t& {
    return p.last_wave_time_ns[sample.wave];
  };
  return BufferMemory("ReportWaveMemory", sample, samples, last_time);
}

absl::Status AgentClient::ReportIteration(const agent::ReportIteration& report) {
  // As the protocol limits it (NaN fails both comparisons).
  if (!(report.seconds >= 0 && report.seconds <= kMaxIterationSeconds)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ReportIteration: seconds must be a finite value >= 0 and <= ", kMaxIterationSeconds,
        ", got ", report.seconds));
  }
  absl::MutexLock lock(&mu_);
  if (closing_.load(std::memory_order_acquire)) {
    return absl::FailedPreconditionError("ReportIteration: the agent client is closed");
  }
  if (PushBounded(pending_->iterations, report, options_.max_buffered_reports)) {
    ++stats_.reports_dropped;
  }
  return absl::OkStatus();
}

std::optional<Policy> AgentClient::LatestPolicy() const {
  absl::MutexLock lock(&mu_);
  return policy_;
}

Registered AgentClient::registration() const {
  absl::MutexLock lock(&mu_);
  return registered_;
}

AgentClient::Stats AgentClient::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

// --- The background thread ----------------------------------------------------------------------

void AgentClient::Run() {
  auto next_flush = SteadyClock::now() + options_.flush_interval;
  while (!closing_.load(std::memory_order_acquire)) {
    if (connection_ == nullptr) {
      Reconnect();
    } else {
      Serve(next_flush);
    }
  }
  SayGoodbye();
  connected_.store(false, std::memory_order_release);
  gate_->SetAgentAlive(false);
}

void AgentClient::Serve(SteadyClock::time_point& next_flush) {
  const int fd = connection_->fd();
  pollfd fds[2] = {
      {fd, static_cast<short>(POLLIN | (connection_->pending_bytes() ? POLLOUT : 0)), 0},
      {wake_fd_, POLLIN, 0}};
  const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next_flush - SteadyClock::now());
  if (poll(fds, 2, static_cast<int>(std::max<std::int64_t>(0, wait.count()))) < 0 &&
      errno != EINTR) {
    Disconnect(ErrnoError(errno, "poll"));
    return;
  }
  if (fds[1].revents != 0) WaitForWakeUp(std::chrono::nanoseconds::zero());
  if (fds[0].revents != 0) {
    std::vector<Message> messages;
    const absl::Status read = connection_->Read(&messages);
    for (Message& message : messages) {
      if (auto* policy = std::get_if<Policy>(&message)) {
        absl::MutexLock lock(&mu_);
        policy_ = std::move(*policy);
      } else if (auto* foregrounds = std::get_if<Foregrounds>(&message)) {
        // A segment that does not map keeps its foreground's slot pausing this worker.
        if (absl::Status watched = gate_->WatchForegrounds(foregrounds->segments); !watched.ok()) {
          Log(absl::StrCat("agent client: ", watched.ToString()));
        }
      } else if (auto* error = std::get_if<ErrorReply>(&message)) {
        Disconnect(ToStatus(*error));
        return;
      } else {
        Disconnect(absl::FailedPreconditionError(absl::StrCat(
            "unexpected ", std::string(MessageTypeName(TypeOf(message))), " from the agent")));
        return;
      }
    }
    if (!read.ok()) {
      Disconnect(read);
      return;
    }
  }
  bool due = SteadyClock::now() >= next_flush;
  {
    absl::MutexLock lock(&mu_);
    due = due || pending_->flush_now;
  }
  if (due) {
    next_flush = SteadyClock::now() + options_.flush_interval;
    gate_->Heartbeat(MonotonicNowNs());
    gate_->CollectRetired();
    if (gate_->revoked()) {
      Disconnect(absl::FailedPreconditionError("the agent reclaimed this worker's gate slot"));
      return;
    }
    if (absl::Status flushed = Flush(false); !flushed.ok()) {
      Disconnect(flushed);
      return;
    }
  }
  if (absl::Status written = connection_->Write(); !written.ok()) Disconnect(written);
}

absl::Status AgentClient::Flush(bool everything) {
  for (;;) {
    if (!everything && connection_->pending_bytes() >= kOutputHighWaterBytes) break;
    ReportOps ops;
    agent::ReportMemory memory;
    agent::ReportWaveMemory waves;
    std::vector<agent::ReportIteration> iterations;
    const bool agent_takes_waves =
        connection_->version() >= VersionIntroducing(MessageType::kReportWaveMemory);
    {
      absl::MutexLock lock(&mu_);
      ops.groups = TakeFront(pending_->ops, options_.batch_size);
      memory.samples = TakeFront(pending_->memory, options_.batch_size);
      waves.samples = TakeFront(pending_->wave_memory, options_.batch_size);
      iterations = TakeFront(pending_->iterations, kIterationsPerFlush);
      pending_->flush_now = false;
      if (!agent_takes_waves) {
        stats_.reports_dropped += waves.samples.size();
        waves.samples.clear();
      }
      stats_.reports_sent +=
          ops.groups.size() + memory.samples.size() + waves.samples.size() + iterations.size();
    }
    if (ops.groups.empty() && memory.samples.empty() && waves.samples.empty() &&
        iterations.empty()) {
      break;
    }
    // Every report was checked when it was buffered, so these encode.
    absl::Status queued;
    if (!ops.groups.empty()) queued.Update(connection_->Queue(Message(std::move(ops))));
    if (!memory.samples.empty()) queued.Update(connection_->Queue(Message(std::move(memory))));
    if (!waves.samples.empty()) queued.Update(connection_->Queue(Message(std::move(waves))));
    for (const agent::ReportIteration& iteration : iterations) {
      queued.Update(connection_->Queue(Message(iteration)));
    }
    WAVEPOOL_RETURN_IF_ERROR(queued);
  }
  return connection_->Write();
}

void AgentClient::SayIfTheAgentIsOlder() {
  if (connection_->version() >= kProtocolVersion) return;
  Log(absl::StrCat("agent client: the agent at ", options_.socket_path, " speaks protocol version ",
                   connection_->version(), " (this worker ", kProtocolVersion,
                   "): its wave memory reports are left out"));
}

void AgentClient::Disconnect(const absl::Status& why) {
  connection_.reset();
  connected_.store(false, std::memory_order_release);
  gate_->SetAgentAlive(false);
  {
    absl::MutexLock lock(&mu_);
    ++stats_.disconnects;
  }
  Log(absl::StrCat("agent client: lost the agent at ", options_.socket_path, ": ", why.ToString(),
                   "; running as if it were gone (",
                   options_.registration.role == Role::kForeground ? "unpaced" : "paused",
                   ") and reconnecting"));
  backoff_ = options_.reconnect_backoff_min;
  next_attempt_ = SteadyClock::now() + backoff_;
  last_failure_.clear();
}

void AgentClient::Reconnect() {
  const auto wait = next_attempt_ - SteadyClock::now();
  if (wait > wait.zero() && WaitForWakeUp(wait)) return;  // woken: Close, or reports; re-check
  if (closing_.load(std::memory_order_acquire)) return;
  Registered registered;
  absl::StatusOr<std::unique_ptr<AgentConnection>> connection = AgentConnection::Open(
      options_.socket_path, options_.registration, SteadyClock::now() + options_.register_timeout,
      wake_fd_, [this] { return closing_.load(std::memory_order_acquire); }, &registered);
  absl::Status failure = connection.status();
  if (connection.ok()) {
    absl::StatusOr<std::unique_ptr<LaunchGate>> gate =
        LaunchGate::Attach(registered, options_.registration.role);
    if (gate.ok()) {
      gate_->Bind(std::move(*gate));
      connection_ = std::move(*connection);
      SayIfTheAgentIsOlder();
      {
        absl::MutexLock lock(&mu_);
        registered_ = registered;
        ++stats_.reconnects;
      }
      connected_.store(true, std::memory_order_release);
      Log(absl::StrCat("agent client: registered again with the agent at ", options_.socket_path,
                       " (slot ", registered.slot, ", gate epoch ", registered.gate_epoch, ")"));
      return;
    }
    failure = gate.status();
    if ((*connection)->Queue(Goodbye{}).ok()) (void)(*connection)->Write();
  }
  if (absl::IsCancelled(failure)) return;
  if (failure.ToString() != last_failure_) {  // one line per distinct reason, not per attempt
    last_failure_ = failure.ToString();
    Log(absl::StrCat("agent client: reconnecting to ", options_.socket_path, ": ", last_failure_));
  }
  backoff_ = std::min(backoff_ * 2, options_.reconnect_backoff_max);
  // Jitter in [backoff/2, backoff] (splitmix64), so that the workers of one agent spread out.
  random_state_ += 0x9E3779B97F4A7C15ULL;
  std::uint64_t z = random_state_;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  const auto half = backoff_ / 2;
  next_attempt_ = SteadyClock::now() + half +
                  std::chrono::milliseconds(z % static_cast<std::uint64_t>(half.count() + 1));
}

void AgentClient::SayGoodbye() {
  if (connection_ == nullptr) return;
  const auto deadline = SteadyClock::now() + options_.register_timeout;
  absl::Status said = Flush(true);
  if (said.ok()) said = connection_->Queue(Goodbye{});
  if (said.ok()) said = connection_->Drain(deadline);
  if (!said.ok())
    Log(absl::StrCat("agent client: goodbye to ", options_.socket_path, ": ", said.ToString()));
  connection_.reset();
}

}  // namespace wavepool::agent
