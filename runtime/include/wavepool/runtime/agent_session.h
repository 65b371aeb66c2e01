// The worker's side of its node agent (DESIGN.md "GPU sharing"): registers through
// agent/client with the identity the controller gave the pod, and paces every launch group
// through the GPU's launch gate (launch_pacer.h).
//
// Foreground: a credit per group (the agent allows ~2 in flight); around a group the agent marks
// sensitive (and every all-reduce) the pause flag is raised so that background tasks stop
// launching. Background: waits while paused and for its one credit; a stop request (SIGTERM)
// ends the wait with Cancelled. Agent gone: foreground runs unpaced, background stays paused,
// and the connection comes back by itself (agent_client.h).
//
// Thread safety: every method is safe for concurrent use. Ownership: owns the connection.
#ifndef WAVEPOOL_RUNTIME_AGENT_SESSION_H_
#define WAVEPOOL_RUNTIME_AGENT_SESSION_H_

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "wavepool/agent/client/agent_client.h"
#include "wavepool/base/clock.h"
#include "wavepool/runtime/launch_pacer.h"

namespace wavepool::runtime {

class AgentSession final : public LaunchPacer {
 public:
  // The socket is <agent_dir>/agent.sock. Retries while nothing listens there (the node's agent
  // may still be starting) until `connect_timeout`, then returns Unavailable naming the socket;
  // the agent's own refusal (no free slot, a bad registration) is returned at once. The retries
  // back off from 50 ms to 1 s on `clock` (a simulated one in tests), which also times
  // `connect_timeout` and stamps the session's memory reports. `stopped`, when set, is asked
  // between tries: true ends them with Cancelled (a SIGTERM while the node's agent is down).
  // REQUIRES: `clock` outlives the session.
  static absl::StatusOr<std::unique_ptr<AgentSession>> Connect(
      const std::string& agent_dir, const agent::RegisterRequest& identity,
      std::chrono::milliseconds connect_timeout, agent::LogSink log = agent::LogToStderr,
      Clock& clock = RealClock(), const std::function<bool()>& stopped = {});
  ~AgentSession() override;

  absl::StatusOr<LaunchTicket> Begin(OpGroup group) override;
  void End(const LaunchTicket& ticket, std::chrono::nanoseconds duration) override;
  void ReportIteration(std::int64_t iteration, double seconds, std::int64_t samples) override;
  void ReportMemory(std::uint64_t allocated_bytes) override;
  void ReportWaveMemory(int wave, std::uint64_t allocated_bytes) override;
  void Stop() override { stopped_.store(true, std::memory_order_release); }

  agent::AgentClient& client() { return *client_; }

 private:
  AgentSession(std::unique_ptr<agent::AgentClient> client, Clock& clock);
  absl::Status TakeCredit();
  // The time now when a memory sample of the series `next_report` times may go out (at most one
  // per kMemoryReportInterval, whichever thread reports), advancing it; nullopt otherwise.
  std::optional<MonotonicTime> TakeTurn(std::atomic<MonotonicTime>& next_report);
  void RaisePause();
  void LowerPause();

  const std::unique_ptr<agent::AgentClient> client_;
  Clock& clock_;
  const agent::Role role_;
  std::atomic<bool> stopped_{false};
  // The earliest time the next memory sample goes out (ReportMemory throttles); min: any time.
  std::atomic<MonotonicTime> next_memory_report_{MonotonicTime::min()};
  // The same for each wave's samples (ReportWaveMemory).
  std::array<std::atomic<MonotonicTime>, agent::kMaxWavesPerTask> next_wave_report_;
  absl::Mutex pause_mu_;
  int pause_holders_ ABSL_GUARDED_BY(pause_mu_) = 0;  // groups running with the pause raised
};

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_AGENT_SESSION_H_
