// A worker's side of the launch gate (deeppool-burst-parallel §5, launch pacing): before each
// launch group (a CUDA graph piece, or an op group on CPU) the worker acquires a credit, and
// releases it when the group's completion event fires; a background worker also waits while the
// foreground runs a sensitive group. Everything here is atomics in shared memory
// (gate_layout.h): no system call, no message to the agent.
//
// A LaunchGate is safe for concurrent use by the threads of its worker process; one slot belongs
// to one process. The mapping is released by the destructor; nothing may use the gate after it.
#ifndef WAVEPOOL_AGENT_CLIENT_LAUNCH_GATE_H_
#define WAVEPOOL_AGENT_CLIENT_LAUNCH_GATE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "wavepool/agent/client/gate_layout.h"
#include "wavepool/agent/client/protocol.h"

namespace wavepool::agent {

class LaunchGate {
 public:
  // Maps `registered.gate_path` and binds to its slot. FailedPrecondition when the file's magic,
  // version or epoch differ from what Registered said, or the slot is not active for this
  // generation; the message names the path.
  static absl::StatusOr<std::unique_ptr<LaunchGate>> Attach(const Registered& registered,
                                                            Role role);
  ~LaunchGate();
  LaunchGate(const LaunchGate&) = delete;
  LaunchGate& operator=(const LaunchGate&) = delete;

  // --- Hot path (lock-free, no system call) -------------------------------------------------
  // Takes a credit if one is free (and, for background, nothing pauses it). A foreground worker
  // whose agent is gone always succeeds (it keeps training, unpaced); a background one never does.
  bool TryAcquire();
  // Returns a credit taken by TryAcquire or Acquire.
  void Release();
  // Whether a background worker must hold its launches now.
  bool Paused() const;
  // Whether op group `op_group` is sensitive (the foreground raises the pause around it).
  bool IsSensitive(std::uint32_t op_group) const;
  // Foreground: raise the pause for the background while a sensitive group runs, and lower it.
  void RaisePause();
  void LowerPause();

  // --- Slow path ------------------------------------------------------------------------------
  // TryAcquire until it succeeds or `timeout` passes (spinning briefly, then sleeping with
  // backoff); accounts the wait in the slot's statistics. DeadlineExceeded on timeout.
  absl::Status Acquire(std::chrono::nanoseconds timeout);
  // Records that the worker is alive (CLOCK_MONOTONIC nanoseconds).
  void Heartbeat(std::int64_t now_ns);
  // Set by the worker's connection to the agent (AgentClient): while false, TryAcquire follows
  // the agent-gone rules above.
  void SetAgentAlive(bool alive) { agent_alive_.store(alive, std::memory_order_release); }
  bool agent_alive() const { return agent_alive_.load(std::memory_order_acquire); }
  // The agent's heartbeat in the gate file (CLOCK_MONOTONIC nanoseconds).
  std::int64_t AgentHeartbeat() const;

  Role role() const { return role_; }
  std::uint32_t slot() const { return slot_index_; }
  std::int32_t in_flight() const;
  std::int32_t credit_limit() const;

 private:
  LaunchGate(GateFile* file, std::size_t mapped_bytes, std::uint32_t slot, Role role);

  GateFile* file_;  // the mapping, owned
  std::size_t mapped_bytes_;
  GateSlot* slot_;
  std::uint32_t slot_index_;
  Role role_;
  std::atomic<bool> agent_alive_{true};
  std::atomic<bool> pause_raised_{false};
};

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_CLIENT_LAUNCH_GATE_H_
