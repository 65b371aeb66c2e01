#include "wavepool/agent/client/worker_gate.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/time.h"

namespace wavepool::agent {
namespace {

// The longest single wait inside a gate: a retired gate is unmapped at most this long after its
// last user asked for it (WorkerGate::Acquire).
constexpr std::chrono::nanoseconds kAcquireSlice = std::chrono::milliseconds(1);

}  // namespace

// Every atomic here is seq_cst. The hot path pairs "raise `active`, then re-read current_" with
// the connection's "move current_, then read `active`, then `held`/`raised`": in the single total
// order either the caller sees the move and backs off without touching the gate, or the
// connection sees the caller inside and leaves the gate mapped. Acquire/release would not forbid
// the store-load reordering this handshake rests on.
WorkerGate::Binding* WorkerGate::EnterCurrent() const {
  for (;;) {
    Binding* binding = current_.load(std::memory_order_seq_cst);
    if (binding == nullptr) return nullptr;
    binding->active.fetch_add(1, std::memory_order_seq_cst);
    if (current_.load(std::memory_order_seq_cst) == binding) return binding;
    Leave(binding);  // rebound meanwhile: use the new one
  }
}

bool WorkerGate::TryAcquire() {
  Binding* binding = EnterCurrent();
  if (binding == nullptr) return role_ == Role::kForeground;
  const bool acquired = binding->gate->TryAcquire();
  if (acquired) CountCredit(binding);
  Leave(binding);
  return acquired;
}

// The binding's count first: a release that claimed this credit from outstanding_ must find it.
void WorkerGate::CountCredit(Binding* binding) {
  binding->held.fetch_add(1, std::memory_order_seq_cst);
  outstanding_.fetch_add(1, std::memory_order_seq_cst);
}

bool WorkerGate::ReleaseOn(Binding* binding) {
  binding->active.fetch_add(1, std::memory_order_seq_cst);
  bool took = false;
  // An abandoned binding's credits are moving to the debt: leave them alone (FreeBindingLocked).
  if (!binding->abandoned.load(std::memory_order_seq_cst)) {
    std::int32_t held = binding->held.load(std::memory_order_seq_cst);
    while (held > 0 && !(took = binding->held.compare_exchange_weak(held, held - 1,
                                                                    std::memory_order_seq_cst))) {
    }
    if (took) binding->gate->Release();
  }
  Leave(binding);
  return took;
}

bool WorkerGate::PayDebt() {
  std::int32_t debt = debt_.load(std::memory_order_seq_cst);
  while (debt > 0) {
    if (debt_.compare_exchange_weak(debt, debt - 1, std::memory_order_seq_cst)) return true;
  }
  return false;
}

void WorkerGate::Release() {
  // Claim one of the outstanding credits first: then one is sure to be found below, even while
  // other threads move theirs (a scan of the bindings is not atomic), and an unmatched release
  // is told apart from a race.
  std::int32_t outstanding = outstanding_.load(std::memory_order_seq_cst);
  do {
    if (outstanding <= 0) return;  // nothing held: an unmatched release
  } while (
      !outstanding_.compare_exchange_weak(outstanding, outstanding - 1, std::memory_order_seq_cst));
  for (;;) {
    if (PayDebt()) return;
    Binding* oldest = nullptr;
    for (Binding& binding : bindings_) {
      if (binding.held.load(std::memory_order_seq_cst) <= 0 ||
          binding.abandoned.load(std::memory_order_seq_cst)) {
        continue;
      }
      if (oldest == nullptr || binding.order.load(std::memory_order_relaxed) <
                                   oldest->order.load(std::memory_order_relaxed)) {
        oldest = &binding;
      }
    }
    if (oldest != nullptr && ReleaseOn(oldest)) return;
    // Another release took that one, or an abandoned gate's credits are on their way to the debt:
    // ours is still counted somewhere; look again.
    if (oldest == nullptr) std::this_thread::yield();
  }
}

absl::Status WorkerGate::Acquire(std::chrono::nanoseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline = Clock::now() + std::max(timeout, timeout.zero());
  absl::Status last = absl::DeadlineExceededError("no gate bound (agent gone)");
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now());
    const auto slice = std::clamp(left, std::chrono::nanoseconds::zero(), kAcquireSlice);
    Binding* binding = EnterCurrent();
    if (binding == nullptr) {
      if (role_ == Role::kForeground) return absl::OkStatus();
      WaitForBind(left);
    } else {
      last = binding->gate->Acquire(slice);
      if (last.ok()) CountCredit(binding);
      Leave(binding);
      if (!absl::IsDeadlineExceeded(last)) return last;
    }
    if (Clock::now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "launch gate: no credit within %d ns; last try: %s", timeout.count(), last.message()));
    }
  }
}

void WorkerGate::WaitForBind(std::chrono::nanoseconds timeout) {
  absl::MutexLock lock(&writer_mu_);
  // current_ is stored only by Bind, under writer_mu_, and never cleared.
  const auto bound = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(writer_mu_) {
    return current_.load(std::memory_order_seq_cst) != nullptr;
  };
  writer_mu_.AwaitWithTimeout(absl::Condition(&bound), absl::FromChrono(timeout));
}

bool WorkerGate::Paused() const {
  Binding* binding = EnterCurrent();
  if (binding == nullptr) return role_ == Role::kBackground;
  const bool paused = binding->gate->Paused();
  Leave(binding);
  return paused;
}

bool WorkerGate::IsSensitive(std::uint32_t op_group) const {
  Binding* binding = EnterCurrent();
  if (binding == nullptr) return false;
  const bool sensitive = binding->gate->IsSensitive(op_group);
  Leave(binding);
  return sensitive;
}

void WorkerGate::RaisePause() {
  Binding* binding = EnterCurrent();
  if (binding == nullptr) return;
  binding->raised.store(true, std::memory_order_seq_cst);
  binding->gate->RaisePause();
  Leave(binding);
}

void WorkerGate::LowerPause() {
  for (Binding& binding : bindings_) {
    if (!binding.raised.load(std::memory_order_seq_cst)) continue;
    binding.active.fetch_add(1, std::memory_order_seq_cst);
    if (!binding.abandoned.load(std::memory_order_seq_cst) &&
        binding.raised.exchange(false, std::memory_order_seq_cst)) {
      binding.gate->LowerPause();
    }
    Leave(&binding);
  }
}

bool WorkerGate::agent_alive() const {
  Binding* binding = EnterCurrent();
  if (binding == nullptr) return false;
  const bool alive = binding->gate->agent_alive();
  Leave(binding);
  return alive;
}

bool WorkerGate::revoked() const {
  Binding* binding = EnterCurrent();
  if (binding == nullptr) return false;
  const bool revoked = binding->gate->Revoked();
  Leave(binding);
  return revoked;
}

std::int32_t WorkerGate::held() const { return outstanding_.load(std::memory_order_relaxed); }

std::int32_t WorkerGate::credit_limit() const {
  Binding* binding = EnterCurrent();
  if (binding == nullptr) return 0;
  const std::int32_t limit = binding->gate->credit_limit();
  Leave(binding);
  return limit;
}

// --- The connection's side ------------------------------------------------------------------
// `gate` of a binding changes only here, under writer_mu_, while no hot-path call can reach it:
// the binding is not current, nothing is inside it (`active`), it gave no credit that is still
// out (`held`) and raised no pause. `active` is read before and after the others: a TryAcquire
// that entered before current_ moved is seen by the first read (or its credit by the `held`
// read); a Release that took the last credit before the `held` read is seen by the second. Once
// all are zero they stay zero: only the current binding gains credits or a raised pause.
bool WorkerGate::Unused(const Binding& binding) const {
  return &binding != current_.load(std::memory_order_seq_cst) &&
         binding.active.load(std::memory_order_seq_cst) == 0 &&
         binding.held.load(std::memory_order_seq_cst) == 0 &&
         !binding.raised.load(std::memory_order_seq_cst) &&
         binding.active.load(std::memory_order_seq_cst) == 0;
}

WorkerGate::Binding* WorkerGate::FreeBindingLocked() {
  Binding* current = current_.load(std::memory_order_seq_cst);
  Binding* oldest = nullptr;
  for (Binding& binding : bindings_) {
    if (&binding == current) continue;
    if (Unused(binding)) {
      binding.gate.reset();
      return &binding;
    }
    if (oldest == nullptr || binding.order.load() < oldest->order.load()) oldest = &binding;
  }
  // Every retired gate still has credits out: abandon the oldest. First let any TryAcquire that
  // entered while it was current finish (none can enter now); then flag it, so that releases and
  // LowerPause keep out, and let those inside finish. Its credits are then stable: move them to
  // the debt (releases that find them flagged meanwhile wait for that) and unmap it.
  const auto wait_until_idle = [oldest] {
    while (oldest->active.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  };
  wait_until_idle();
  oldest->abandoned.store(true, std::memory_order_seq_cst);
  wait_until_idle();
  const std::int32_t abandoned = oldest->held.load(std::memory_order_seq_cst);
  debt_.fetch_add(abandoned, std::memory_order_seq_cst);
  oldest->held.store(0, std::memory_order_seq_cst);
  oldest->raised.store(false, std::memory_order_seq_cst);
  abandoned_total_.fetch_add(static_cast<std::uint64_t>(abandoned), std::memory_order_relaxed);
  oldest->gate.reset();
  return oldest;
}

void WorkerGate::Bind(std::unique_ptr<LaunchGate> gate) {
  absl::MutexLock lock(&writer_mu_);
  Binding* fresh = FreeBindingLocked();
  fresh->gate = std::move(gate);
  fresh->abandoned.store(false, std::memory_order_seq_cst);
  fresh->order.store(bind_count_.fetch_add(1, std::memory_order_relaxed) + 1,
                     std::memory_order_relaxed);
  current_.store(fresh, std::memory_order_seq_cst);  // publishes `gate` to the hot path
}

void WorkerGate::SetAgentAlive(bool alive) {
  absl::MutexLock lock(&writer_mu_);
  if (Binding* current = current_.load(std::memory_order_seq_cst)) {
    current->gate->SetAgentAlive(alive);
  }
}

absl::Status WorkerGate::WatchForegrounds(const std::vector<ForegroundSegment>& segments) {
  absl::MutexLock lock(&writer_mu_);
  Binding* current = current_.load(std::memory_order_seq_cst);
  return current == nullptr ? absl::OkStatus() : current->gate->WatchForegrounds(segments);
}

void WorkerGate::Heartbeat(std::int64_t now_ns) {
  absl::MutexLock lock(&writer_mu_);
  if (Binding* current = current_.load(std::memory_order_seq_cst)) current->gate->Heartbeat(now_ns);
}

std::size_t WorkerGate::CollectRetired() {
  absl::MutexLock lock(&writer_mu_);
  std::size_t retired = 0;
  for (Binding& binding : bindings_) {
    if (binding.gate == nullptr || &binding == current_.load(std::memory_order_seq_cst)) continue;
    if (Unused(binding)) {
      binding.gate.reset();
    } else {
      ++retired;
    }
  }
  return retired;
}

}  // namespace wavepool::agent
