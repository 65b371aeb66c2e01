// A worker's side of the launch gate (deeppool-burst-parallel §5, launch pacing): before each
// launch group (a CUDA graph piece, or an op group on CPU) the worker acquires a credit, and
// releases it when the group's completion event fires; a background worker also waits while the
// foreground runs a sensitive group. Everything here is atomics in shared memory
// (gate_layout.h): no system call, no message to the agent. The gate maps the GPU's control
// segment read-only, its own worker segment read-write (mapped before Register, the only writable
// mapping there is), and, for a background worker, each foreground's segment read-only.
//
// A LaunchGate is safe for concurrent use by the threads of its worker process; one slot belongs
// to one process. The mappings are released by the destructor; nothing may use the gate after
// it. Credits still held at destruction stay counted until the agent reclaims the slot.
//
// Agent-gone rules (SetAgentAlive(false), or the slot was revoked by Reclaim): a foreground
// worker keeps training unpaced (TryAcquire always succeeds, without counting the credit), a
// background worker stays paused (TryAcquire never succeeds). A revoked gate never writes to its
// old slot again: the worker must register and attach anew.
#ifndef WAVEPOOL_AGENT_CLIENT_LAUNCH_GATE_H_
#define WAVEPOOL_AGENT_CLIENT_LAUNCH_GATE_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "wavepool/agent/client/gate_layout.h"
#include "wavepool/agent/client/gate_memory.h"
#include "wavepool/agent/client/protocol.h"

namespace wavepool::agent {

class LaunchGate {
 public:
  // Maps `registered.gate` read-only, binds to its slot with `registered.own_segment` as the
  // worker's segment and, for a background gate, watches `registered.foregrounds`.
  // FailedPrecondition when the gate or own segment is missing, the gate is not sealed or has the
  // wrong size, its magic, version or epoch differ from what Registered said, or the slot is not
  // active for this generation and role; the errno-derived code when mmap fails. Every message
  // names the gate (registered.gate_path).
  static absl::StatusOr<std::unique_ptr<LaunchGate>> Attach(const Registered& registered,
                                                            Role role);
  // The worker's own segment, created before Register: a sealed memfd mapped writable here and
  // nowhere else (gate_memory.h).
  static absl::StatusOr<OwnSegment> CreateWorkerSegment();
  ~LaunchGate();
  LaunchGate(const LaunchGate&) = delete;
  LaunchGate& operator=(const LaunchGate&) = delete;

  // --- Hot path (lock-free, no system call, no allocation) -----------------------------------
  // Takes a credit if one is free (and, for background, nothing pauses it). A foreground worker
  // whose agent is gone always succeeds (it keeps training, unpaced); a background one never does.
  bool TryAcquire();
  // Returns a credit taken by TryAcquire or Acquire. Never takes in_flight below 0.
  // REQUIRES: a credit taken on this gate and not yet returned.
  void Release();
  // Whether a background worker must hold its launches now (always false for foreground).
  bool Paused() const;
  // Whether op group `op_group` is sensitive (the foreground raises the pause around it); false
  // for op_group >= kMaxOpGroups.
  bool IsSensitive(std::uint32_t op_group) const;
  // Foreground: raise the pause for the background while a sensitive group runs, and lower it.
  // Idempotent (a flag, not a counter); no-ops for a background or revoked gate.
  void RaisePause();
  void LowerPause();

  // --- Slow path ------------------------------------------------------------------------------
  // TryAcquire until it succeeds or `timeout` passes (spinning for ~4 us, then sleeping from
  // 1 us doubling to 100 us); accounts the wait in the slot's statistics. DeadlineExceeded on
  // timeout (a timeout <= 0 tries once).
  absl::Status Acquire(std::chrono::nanoseconds timeout);
  // Records that the worker is alive (CLOCK_MONOTONIC nanoseconds).
  void Heartbeat(std::int64_t now_ns);
  // Set by the worker's connection to the agent (AgentClient): while false, TryAcquire follows
  // the agent-gone rules above.
  void SetAgentAlive(bool alive) { agent_alive_.store(alive, std::memory_order_release); }
  bool agent_alive() const { return agent_alive_.load(std::memory_order_acquire); }
  // Whether the agent reclaimed this gate's slot (its generation moved on).
  bool Revoked() const;
  // Background: maps the foreground segments the agent listed (Registered, Foregrounds) and
  // watches their hold words; a foreground slot of the gate whose current segment is not mapped
  // here pauses this worker (fail-safe). A segment that is not sealed, has the wrong size or does
  // not map is skipped (its slot keeps pausing) and named in the returned FailedPrecondition.
  // No-op for a foreground gate. For the connection's thread (serialised inside).
  absl::Status WatchForegrounds(const std::vector<ForegroundSegment>& segments);
  // The agent's heartbeat in the control segment (CLOCK_MONOTONIC nanoseconds).
  std::int64_t AgentHeartbeat() const;

  Role role() const { return role_; }
  std::uint32_t slot() const { return slot_index_; }
  std::uint32_t generation() const { return generation_; }
  const std::string& path() const { return path_; }
  std::int32_t in_flight() const;
  std::int32_t credit_limit() const;

 private:
  // A foreground segment a background gate watches: never unmapped before the gate (a hot-path
  // thread may still read a superseded one).
  struct ForegroundView {
    std::uint32_t generation = 0;
    const WorkerSegment* segment = nullptr;
    std::unique_ptr<Mapping> mapping;
  };
  // Superseded views kept mapped at most; beyond, new segments are refused (and pause).
  static constexpr std::size_t kMaxForegroundViews = 1024;

  LaunchGate(std::string path, std::unique_ptr<Mapping> control,
             std::shared_ptr<Mapping> own_segment, std::uint32_t slot, std::uint32_t generation,
             Role role);

  bool AgentGone() const { return !agent_alive_.load(std::memory_order_relaxed) || Revoked(); }
  void CountAcquired();
  template <std::memory_order kOrder>
  bool BackgroundBlocked() const;
  absl::Status WatchForeground(const ForegroundSegment& segment)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(views_mu_);

  // Constant after construction.
  const std::string path_;
  const std::unique_ptr<Mapping> control_;  // read-only
  const std::shared_ptr<Mapping> own_;      // read-write
  const GateFile* const file_;
  const GateSlot* const slot_;
  WorkerSegment* const mine_;
  const std::uint32_t slot_index_;
  const std::uint32_t generation_;
  const Role role_;
  std::atomic<bool> agent_alive_{true};
  // Background: the view of each slot's foreground segment (null: none mapped).
  std::array<std::atomic<const ForegroundView*>, kMaxSlotsPerGpu> foregrounds_{};
  absl::Mutex views_mu_;  // serialises WatchForegrounds
  std::vector<std::unique_ptr<ForegroundView>> views_
      ABSL_GUARDED_BY(views_mu_);  // owns every view
};

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_CLIENT_LAUNCH_GATE_H_
