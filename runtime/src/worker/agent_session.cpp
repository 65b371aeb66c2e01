#include "wavepool/runtime/agent_session.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime {
namespace {

// At most one memory sample per 5 ms: the agent's memory waves are sampled at 100 Hz.
constexpr std::chrono::milliseconds kMemoryReportInterval{5};

// The process's resident set (/proc/self/statm): what a CPU task reserves. 0 when unreadable.
std::uint64_t ResidentBytes() {
  std::FILE* file = std::fopen("/proc/self/statm", "r");
  if (file == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  const int read = std::fscanf(file, "%llu %llu", &size, &resident);
  std::fclose(file);
  return read == 2 ? resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace

AgentSession::AgentSession(std::unique_ptr<agent::AgentClient> client, Clock& clock)
    : client_(std::move(client)), clock_(clock), role_(client_->gate()->role()) {
  for (auto& next : next_wave_report_) next.store(MonotonicTime::min(), std::memory_order_relaxed);
}

AgentSession::~AgentSession() { client_->Close(); }

absl::StatusOr<std::unique_ptr<AgentSession>> AgentSession::Connect(
    const std::string& agent_dir, const agent::RegisterRequest& identity,
    std::chrono::milliseconds connect_timeout, agent::LogSink log, Clock& clock,
    const std::function<bool()>& stopped) {
  agent::AgentClient::Options options;
  options.socket_path = absl::StrCat(agent_dir, "/agent.sock");
  options.registration = identity;
  options.log = std::move(log);
  const MonotonicTime deadline = clock.Now() + connect_timeout;
  std::chrono::milliseconds backoff{50};
  while (true) {
    absl::StatusOr<std::unique_ptr<agent::AgentClient>> client =
        agent::AgentClient::Connect(options);
    if (client.ok()) {
      return std::unique_ptr<AgentSession>(new AgentSession(*std::move(client), clock));
    }
    if (!absl::IsUnavailable(client.status()) || clock.Now() + backoff > deadline) {
      return absl::Status(
          client.status().code(),
          absl::StrCat("node agent at ", options.socket_path, ": ", client.status().message()));
    }
    if (stopped && stopped()) {
      return absl::CancelledError(
          absl::StrCat("stopped while waiting for the node agent at ", options.socket_path));
    }
    clock.SleepFor(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
}

absl::Status AgentSession::TakeCredit() {
  agent::WorkerGate& gate = *client_->gate();
  // In slices, so that a stop request ends a long wait (a background task preempted while the
  // foreground holds the pause); a launch that gets its credit runs even after a stop request,
  // so that a foreground step finishes and the gang stops at a step boundary.
  while (true) {
    absl::Status acquired = gate.Acquire(std::chrono::milliseconds(100));
    if (acquired.ok() || !absl::IsDeadlineExceeded(acquired)) return acquired;
    if (stopped_.load(std::memory_order_acquire)) {
      return absl::CancelledError("stopped while waiting for a launch credit");
    }
  }
}

void AgentSession::RaisePause() {
  absl::MutexLock lock(&pause_mu_);
  if (pause_holders_++ == 0) client_->gate()->RaisePause();
}

void AgentSession::LowerPause() {
  absl::MutexLock lock(&pause_mu_);
  if (--pause_holders_ == 0) client_->gate()->LowerPause();
}

absl::StatusOr<LaunchTicket> AgentSession::Begin(OpGroup group) {
  WAVEPOOL_RETURN_IF_ERROR(TakeCredit());
  agent::WorkerGate& gate = *client_->gate();
  // DeepPool §5: background launches stop while a foreground group that suffers from them runs.
  LaunchTicket ticket{group};
  ticket.raised_pause = role_ == agent::Role::kForeground &&
                        (group.kind == agent::OpKind::kAllReduce || gate.IsSensitive(group.id));
  if (ticket.raised_pause) RaisePause();
  return ticket;
}

void AgentSession::End(const LaunchTicket& ticket, std::chrono::nanoseconds duration) {
  if (ticket.raised_pause) LowerPause();
  client_->gate()->Release();
  // A report that does not encode only loses a sample of the feedback loop.
  (void)client_->ReportOp(
      {ticket.group.id, ticket.group.kind,
       static_cast<std::uint64_t>(std::max<std::int64_t>(0, duration.count()))});
}

void AgentSession::ReportIteration(std::int64_t iteration, double seconds, std::int64_t samples) {
  (void)client_->ReportIteration(
      {static_cast<std::uint64_t>(iteration), seconds, static_cast<std::uint64_t>(samples)});
}

void AgentSession::ReportMemory(std::uint64_t allocated_bytes) {
  const std::optional<MonotonicTime> now = TakeTurn(next_memory_report_);
  if (!now.has_value()) return;
  const std::uint64_t reserved = std::max(allocated_bytes, ResidentBytes());
  (void)client_->ReportMemory({ToMonotonicNanos(*now), allocated_bytes, reserved});
}

void AgentSession::ReportWaveMemory(int wave, std::uint64_t allocated_bytes) {
  if (wave < 0 || wave >= static_cast<int>(next_wave_report_.size())) return;
  const std::optional<MonotonicTime> now =
      TakeTurn(next_wave_report_[static_cast<std::size_t>(wave)]);
  if (!now.has_value()) return;
  (void)client_->ReportWaveMemory(
      {static_cast<std::uint8_t>(wave), ToMonotonicNanos(*now), allocated_bytes});
}

std::optional<MonotonicTime> AgentSession::TakeTurn(std::atomic<MonotonicTime>& next_report) {
  const MonotonicTime now = clock_.Now();
  MonotonicTime next = next_report.load(std::memory_order_relaxed);
  if (now < next || !next_report.compare_exchange_strong(next, now + kMemoryReportInterval,
                                                         std::memory_order_relaxed)) {
    return std::nullopt;
  }
  return now;
}

}  // namespace wavepool::runtime
