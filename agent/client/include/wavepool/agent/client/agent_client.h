// A worker's connection to its node agent: registers over the unix socket (protocol.h), maps the
// launch gate the agent hands out, sends the worker's reports in batches and keeps the agent's
// latest Policy. When the agent goes away (EOF, a socket error, an Error message, or the slot
// revoked) the connection marks the gate's agent gone (foreground: unpaced; background: paused,
// launch_gate.h), keeps buffering reports (bounded: the oldest are dropped and counted), and
// reconnects with exponential backoff; once registered again it binds the new gate (the agent
// restarted with a new epoch) into the same WorkerGate, whose agent is then alive again.
//
// Thread safety: every method is safe for concurrent use. An AgentClient owns one background
// thread, which alone touches the socket; the Report* methods only append to memory under a
// mutex and never block on the socket. gate() is valid until the client is destroyed; after
// Close it follows the agent-gone rules.
//
//   AgentClient::Options options;
//   options.socket_path = "/run/wavepool/agent.sock";
//   options.registration = request;
//   absl::StatusOr<std::unique_ptr<AgentClient>> client = AgentClient::Connect(options);
//   WorkerGate* gate = (*client)->gate();  // keep it: it survives reconnects
//   if (gate->TryAcquire()) { Launch(); ...; gate->Release(); }
//   (*client)->ReportOp(OpGroupReport{12, OpKind::kCompute, 830'000});
#ifndef WAVEPOOL_AGENT_CLIENT_AGENT_CLIENT_H_
#define WAVEPOOL_AGENT_CLIENT_AGENT_CLIENT_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "wavepool/agent/client/log_sink.h"
#include "wavepool/agent/client/protocol.h"
#include "wavepool/agent/client/worker_gate.h"

namespace wavepool::agent {

namespace internal {
class AgentConnection;
}  // namespace internal

class AgentClient {
 public:
  struct Options {
    std::string socket_path;
    // Sent on every (re)connection; pid 0 is replaced by getpid() (the agent trusts only
    // SO_PEERCRED anyway).
    RegisterRequest registration;
    // How often buffered reports are sent; a full batch is sent at once. 50 ms keeps the agent
    // under 2% of a core for 32 workers reporting at 1 kHz (docs/performance.md).
    std::chrono::milliseconds flush_interval{50};
    // Reports per ReportOps / ReportMemory message (1..kMaxOpGroupsPerReport).
    std::size_t batch_size = 1024;
    // Reports of each kind kept while the agent is slow or gone; beyond it the oldest are dropped.
    std::size_t max_buffered_reports = 64 * 1024;
    // Reconnection waits start here and double up to the maximum (each with up to -50% jitter,
    // so that the workers of a restarted agent do not all knock at once).
    std::chrono::milliseconds reconnect_backoff_min{10};
    std::chrono::milliseconds reconnect_backoff_max{2000};
    // How long connecting, registering or saying goodbye may take.
    std::chrono::milliseconds register_timeout{2000};
    LogSink log = LogToStderr;
  };

  struct Stats {
    std::uint64_t reports_sent = 0;  // op groups, memory and wave samples, iterations
    // The oldest, dropped from a full buffer; and wave samples an agent of protocol version 2
    // cannot take.
    std::uint64_t reports_dropped = 0;
    std::uint64_t reconnects = 0;  // successful re-registrations after a loss
    std::uint64_t disconnects = 0;
  };

  // Connects, registers and maps the gate (LaunchGate::Attach). InvalidArgument for bad options
  // or a registration that does not encode; Unavailable when nothing listens on the socket;
  // the agent's error (e.g. ResourceExhausted: no free slot) as it sent it; Attach's errors.
  // Does not retry: the caller decides.
  static absl::StatusOr<std::unique_ptr<AgentClient>> Connect(Options options);
  // Close()s.
  ~AgentClient();
  AgentClient(const AgentClient&) = delete;
  AgentClient& operator=(const AgentClient&) = delete;

  // The worker's launch gate; never null, the same object for the life of the client.
  WorkerGate* gate() { return gate_.get(); }

  // Buffered; sent every flush_interval or as soon as a batch is full. InvalidArgument when the
  // report could not be encoded (op_group >= kMaxOpGroups, a kind out of range, a sample older
  // than the previous one (of its wave) or a negative time, a wave >= kMaxWavesPerTask, seconds
  // negative or not finite); FailedPrecondition after Close. Wave samples are left out while the
  // agent speaks a protocol version without them.
  absl::Status ReportOp(const OpGroupReport& report);
  absl::Status ReportMemory(const MemorySample& sample);
  absl::Status ReportWaveMemory(const WaveMemorySample& sample);
  absl::Status ReportIteration(const agent::ReportIteration& report);

  // The latest Policy the agent sent (over any connection); nullopt before the first.
  std::optional<Policy> LatestPolicy() const;
  // What the agent answered to the latest successful Register.
  Registered registration() const;
  // Whether the client is registered with a live agent now.
  bool connected() const { return connected_.load(std::memory_order_acquire); }
  Stats stats() const;

  // Sends what is buffered and Goodbye (within register_timeout), then stops the thread. The
  // gate's agent is marked gone. Idempotent.
  void Close();

 private:
  struct Pending;

  explicit AgentClient(Options options);
  // Checks a memory sample's time (never negative, never before the last of its series) and
  // buffers it; SamplesOf and LastTimeOf pick its buffer and its series' last time in Pending.
  template <typename Sample, typename SamplesOf, typename LastTimeOf>
  absl::Status BufferMemory(const char* what, const Sample& sample, SamplesOf samples_of,
                            LastTimeOf last_time_of) ABSL_LOCKS_EXCLUDED(mu_);
  void Run();
  // One turn of the connected loop: wait for the socket, the wake-up or the flush timer.
  void Serve(std::chrono::steady_clock::time_point& next_flush);
  void Reconnect();
  absl::Status Flush(bool everything);
  void Disconnect(const absl::Status& why);
  // Logs what is left out when the agent speaks an older protocol version than this worker.
  void SayIfTheAgentIsOlder();
  void SayGoodbye();
  bool WaitForWakeUp(std::chrono::nanoseconds timeout);
  void WakeUp();
  void Log(std::string_view line) const;

  // Constant after construction.
  const Options options_;
  const std::unique_ptr<WorkerGate> gate_;
  int wake_fd_ = -1;  // eventfd: reports are due, or Close

  std::atomic<bool> connected_{false};
  std::atomic<bool> closing_{false};
  std::thread thread_;
  absl::Mutex close_mu_;  // serialises Close

  mutable absl::Mutex mu_;
  std::unique_ptr<Pending> pending_ ABSL_GUARDED_BY(mu_) ABSL_PT_GUARDED_BY(mu_);
  std::optional<Policy> policy_ ABSL_GUARDED_BY(mu_);
  Registered registered_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);

  // Used by the background thread only.
  std::unique_ptr<internal::AgentConnection> connection_;
  std::chrono::milliseconds backoff_{0};
  std::chrono::steady_clock::time_point next_attempt_;
  std::uint64_t random_state_ = 0;  // reconnection jitter
  std::string last_failure_;        // logged once per distinct reason
};

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_CLIENT_AGENT_CLIENT_H_
