// A worker's stable handle on its launch gate, across agent restarts. The runtime keeps one
// WorkerGate* (AgentClient::gate()) in its hot path for the life of the connection; when the agent
// restarts, the connection attaches the new gate (a new epoch and slot) and Binds it here,
// and the calls that follow use it. A LaunchGate (launch_gate.h) is one mapping of one agent's
// gate and is never rebound, so the handle forwards to the current one.
//
// Thread safety: every method is safe for concurrent use. The hot-path methods are lock-free (a
// few atomics on top of the LaunchGate's); Bind, SetAgentAlive, Heartbeat and CollectRetired are
// for the connection's thread (they serialise on a mutex among themselves, never with the hot
// path). Ownership: the handle owns every gate bound to it; it must outlive all hot-path calls.
//
// Invariants:
//  - A credit or a raised pause goes back to the gate it was taken from: every binding counts the
//    credits it handed out (held) and whether it raised the pause. Release claims one of the
//    outstanding credits (the sum of held and debt) and returns it to a binding whose count is
//    positive, oldest binding first, so an old gate drains first; each gate sees exactly as many
//    releases as credits it gave, never more.
//  - A retired gate stays mapped while any call is inside it (active), a credit it gave is
//    held or its pause is raised; CollectRetired unmaps it after that.
//  - At most kMaxBindings gates are mapped. Binding one more while all retired ones are still
//    held abandons the oldest: its outstanding credits become a debt that the next releases pay
//    without touching any gate (its agent is gone; this takes an agent restarting three times
//    while one launch group stays incomplete).
//  - Unbound, or with the agent gone, the agent-gone rules hold: foreground unpaced (TryAcquire
//    succeeds), background paused (TryAcquire fails).
#ifndef WAVEPOOL_AGENT_CLIENT_WORKER_GATE_H_
#define WAVEPOOL_AGENT_CLIENT_WORKER_GATE_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "wavepool/agent/client/launch_gate.h"
#include "wavepool/agent/client/protocol.h"

namespace wavepool::agent {

class WorkerGate {
 public:
  static constexpr std::size_t kMaxBindings = 4;

  explicit WorkerGate(Role role) : role_(role) {}
  ~WorkerGate() = default;
  WorkerGate(const WorkerGate&) = delete;
  WorkerGate& operator=(const WorkerGate&) = delete;

  // --- Hot path: as LaunchGate (launch_gate.h), on the current gate ----------------------------
  bool TryAcquire();
  // REQUIRES: a credit taken by TryAcquire or Acquire and not yet returned (an unmatched
  // release is ignored).
  void Release();
  // Tries in slices of at most 1 ms, so that a reconnect during a long wait moves to the new
  // gate; unbound, a background caller waits for the first Bind. DeadlineExceeded after
  // `timeout`.
  absl::Status Acquire(std::chrono::nanoseconds timeout);
  bool Paused() const;
  bool IsSensitive(std::uint32_t op_group) const;
  void RaisePause();
  void LowerPause();

  // --- Observers
  // ----------------------------------------------------------------------------------
  Role role() const { return role_; }
  // Whether a gate is bound and its agent is alive.
  bool agent_alive() const;
  // Whether the agent reclaimed the current gate's slot (the worker must register again).
  bool revoked() const;
  // Credits taken through this handle and not yet returned (all gates, abandoned ones too).
  std::int32_t held() const;
  // The current gate's limit; 0 when unbound.
  std::int32_t credit_limit() const;
  // How many gates have been bound (1 after Connect; +1 per reconnect).
  std::uint64_t bind_count() const { return bind_count_.load(std::memory_order_relaxed); }
  // Credits abandoned with an old gate (see Invariants), over the handle's life.
  std::uint64_t abandoned_credits() const {
    return abandoned_total_.load(std::memory_order_relaxed);
  }

  // --- The connection's side -------------------------------------------------------------------
  // Makes `gate` the current gate (its agent alive as the gate says) and retires the previous one.
  // REQUIRES: gate != nullptr and gate->role() == role().
  void Bind(std::unique_ptr<LaunchGate> gate);
  // Marks the current gate's agent alive or gone (launch_gate.h, agent-gone rules).
  void SetAgentAlive(bool alive);
  // Background: the current gate watches these foreground segments (LaunchGate::WatchForegrounds);
  // OK and nothing done when unbound.
  absl::Status WatchForegrounds(const std::vector<ForegroundSegment>& segments);
  // Writes the worker's heartbeat into the current gate (CLOCK_MONOTONIC nanoseconds).
  void Heartbeat(std::int64_t now_ns);
  // Unmaps retired gates that nothing uses any more; returns how many are still retired.
  std::size_t CollectRetired();

 private:
  struct Binding {
    std::atomic<std::int32_t> active{0};  // hot-path calls inside `gate`
    std::atomic<std::int32_t> held{0};    // credits `gate` gave and that are not yet returned
    std::atomic<bool> raised{false};      // the pause was raised on `gate`
    std::atomic<bool> abandoned{false};   // its credits are moving to the debt
    std::atomic<std::uint64_t> order{0};  // bind_count_ when bound: older gates drain first
    // Written only by the connection's thread while no hot-path call can reach it (see .cpp).
    std::unique_ptr<LaunchGate> gate;
  };

  // The current binding with its `active` raised, or nullptr when unbound. The caller must Leave.
  Binding* EnterCurrent() const;
  static void Leave(Binding* binding) { binding->active.fetch_sub(1, std::memory_order_seq_cst); }
  // Takes one credit back from `binding` if it holds one; true if it did.
  static bool ReleaseOn(Binding* binding);
  void CountCredit(Binding* binding);
  bool PayDebt();
  bool Unused(const Binding& binding) const;
  Binding* FreeBindingLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(writer_mu_);
  // Blocks until a gate is bound or `timeout` passes (real time: Bind comes from the connection's
  // thread, not from a clock).
  void WaitForBind(std::chrono::nanoseconds timeout) ABSL_LOCKS_EXCLUDED(writer_mu_);

  const Role role_;
  // Pooled, never freed before the handle: a hot-path thread may touch a stale binding's counters.
  mutable std::array<Binding, kMaxBindings> bindings_;
  std::atomic<Binding*> current_{nullptr};
  std::atomic<std::int32_t> outstanding_{0};  // credits taken and not returned (held + debt)
  std::atomic<std::int32_t> debt_{0};         // releases owed for abandoned credits
  std::atomic<std::uint64_t> bind_count_{0};
  std::atomic<std::uint64_t> abandoned_total_{0};
  // Serialises the connection's side; an unbound background Acquire waits on it for Bind.
  absl::Mutex writer_mu_;
};

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_CLIENT_WORKER_GATE_H_
