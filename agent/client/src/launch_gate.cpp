#include "wavepool/agent/client/launch_gate.h"

#include <time.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::agent {
namespace {

// Acquire's backoff: spin this long first (a credit usually frees within a launch group's
// completion poll), then sleep, doubling from kFirstSleepNs up to kMaxSleepNs, so that a paused
// background worker costs ~10k wake-ups per second at most.
constexpr std::int64_t kSpinNs = 4'000;
constexpr std::int64_t kFirstSleepNs = 1'000;
constexpr std::int64_t kMaxSleepNs = 100'000;

std::int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);  // the vDSO: no system call
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void SleepNs(std::int64_t ns) {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  nanosleep(&ts, nullptr);  // EINTR just ends the sleep early: the caller re-checks
}

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Takes one credit if in_flight < credit_limit. `kOrder` is the CAS's order on success; a failed
// CAS publishes and orders nothing, so it is relaxed. credit_limit is read relaxed: it is one
// value the agent sets and guards no other data; a stale limit is corrected on the next launch.
template <std::memory_order kOrder>
bool TakeCredit(WorkerSegment& mine, const GateSlot& slot) {
  std::int32_t current = mine.in_flight.load(std::memory_order_relaxed);
  do {
    if (current >= slot.credit_limit.load(std::memory_order_relaxed)) return false;
  } while (!mine.in_flight.compare_exchange_weak(current, current + 1, kOrder,
                                                 std::memory_order_relaxed));
  return true;
}

// Returns one credit. Release order: everything the worker did for the completed group
// happens-before the next acquirer's successful CAS (acquire) sees the credit free. The floor at
// 0 keeps the invariant 0 <= in_flight even for a credit that was never counted (agent gone).
void ReturnCredit(WorkerSegment& mine) {
  std::int32_t current = mine.in_flight.load(std::memory_order_relaxed);
  while (current > 0 &&
         !mine.in_flight.compare_exchange_weak(current, current - 1, std::memory_order_release,
                                               std::memory_order_relaxed)) {
  }
}

absl::Status Unusable(const std::string& path, const std::string& why) {
  return absl::FailedPreconditionError(absl::StrCat("gate ", path, ": ", why));
}

// The checks of Attach that need the mapped control segment.
absl::Status CheckFile(const Registered& registered, Role role, const GateFile& file) {
  const std::string& path = registered.gate_path;
  const GateHeader& header = file.header;
  if (header.magic != kGateMagic) return Unusable(path, "not a gate (bad magic)");
  if (header.layout_version != kGateLayoutVersion) {
    return Unusable(path, absl::StrFormat("layout version %u, this worker reads version %u",
                                          header.layout_version, kGateLayoutVersion));
  }
  if (header.epoch != registered.gate_epoch) {
    return Unusable(path, absl::StrFormat("epoch %u, registered for epoch %u (the agent restarted)",
                                          header.epoch, registered.gate_epoch));
  }
  if (header.slot_count == 0 || header.slot_count > kMaxSlotsPerGpu ||
      registered.slot >= header.slot_count) {
    return Unusable(path, absl::StrFormat("slot %u out of range (the gate has %u slots)",
                                          registered.slot, header.slot_count));
  }
  const GateSlot& slot = file.slots[registered.slot];
  // Acquire: pairs with Allocate's release store of kActive, so role, limit and generation read
  // below are the ones the agent wrote for this worker.
  if (slot.state.load(std::memory_order_acquire) !=
      static_cast<std::uint32_t>(SlotState::kActive)) {
    return Unusable(path, absl::StrFormat("slot %u is not active", registered.slot));
  }
  const std::uint32_t generation = slot.generation.load(std::memory_order_relaxed);
  if (generation != registered.gate_generation) {
    return Unusable(path, absl::StrFormat("slot %u has generation %u, registered for %u",
                                          registered.slot, generation, registered.gate_generation));
  }
  if (slot.role.load(std::memory_order_relaxed) != static_cast<std::uint32_t>(role)) {
    return Unusable(path,
                    absl::StrFormat("slot %u was allocated for the other role", registered.slot));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<OwnSegment> LaunchGate::CreateWorkerSegment() {
  return CreateOwnSegment("wavepool-worker-segment", sizeof(WorkerSegment));
}

absl::StatusOr<std::unique_ptr<LaunchGate>> LaunchGate::Attach(const Registered& registered,
                                                               Role role) {
  const std::string& path = registered.gate_path;
  if (registered.gate == nullptr || !registered.gate->valid()) {
    return Unusable(path, "Registered carries no gate descriptor");
  }
  if (registered.own_segment == nullptr ||
      registered.own_segment->size() != sizeof(WorkerSegment)) {
    return Unusable(path, "no worker segment mapped for this registration");
  }
  const int fd = registered.gate->get();
  // Sealed against resizing and writers: a mapping of it can never fault, and it is the agent's.
  WAVEPOOL_RETURN_IF_ERROR(CheckSealed(fd, sizeof(GateFile), absl::StrCat("gate ", path)));
  WAVEPOOL_ASSIGN_OR_RETURN(
      std::unique_ptr<Mapping> control,
      Mapping::Map(fd, sizeof(GateFile), /*writable=*/false, absl::StrCat("gate ", path)));
  const auto* file = static_cast<const GateFile*>(control->data());
  WAVEPOOL_RETURN_IF_ERROR(CheckFile(registered, role, *file));
  std::unique_ptr<LaunchGate> gate(new LaunchGate(path, std::move(control), registered.own_segment,
                                                  registered.slot, registered.gate_generation,
                                                  role));
  // A foreground it cannot map keeps pausing the background: not an Attach failure.
  (void)gate->WatchForegrounds(registered.foregrounds);
  return gate;
}

LaunchGate::LaunchGate(std::string path, std::unique_ptr<Mapping> control,
                       std::shared_ptr<Mapping> own_segment, std::uint32_t slot,
                       std::uint32_t generation, Role role)
    : path_(std::move(path)),
      control_(std::move(control)),
      own_(std::move(own_segment)),
      file_(static_cast<const GateFile*>(control_->data())),
      slot_(&file_->slots[slot]),
      mine_(static_cast<WorkerSegment*>(own_->data())),
      slot_index_(slot),
      generation_(generation),
      role_(role) {}

absl::Status LaunchGate::WatchForegrounds(const std::vector<ForegroundSegment>& segments) {
  if (role_ != Role::kBackground) return absl::OkStatus();
  absl::MutexLock lock(&views_mu_);
  std::string failures;
  for (const ForegroundSegment& segment : segments) {
    if (absl::Status watched = WatchForeground(segment); !watched.ok()) {
      absl::StrAppend(&failures, failures.empty() ? "" : "; ", watched.message());
    }
  }
  if (failures.empty()) return absl::OkStatus();
  return Unusable(path_, failures);
}

absl::Status LaunchGate::WatchForeground(const ForegroundSegment& segment) {
  const std::string what = absl::StrFormat("foreground segment of slot %u generation %u",
                                           segment.slot, segment.generation);
  if (segment.slot >= kMaxSlotsPerGpu) return absl::InvalidArgumentError(what + ": no such slot");
  const ForegroundView* current = foregrounds_[segment.slot].load(std::memory_order_relaxed);
  if (current != nullptr && current->generation == segment.generation) return absl::OkStatus();
  if (segment.segment == nullptr || !segment.segment->valid()) {
    return absl::InvalidArgumentError(what + ": no descriptor");
  }
  if (views_.size() >= kMaxForegroundViews) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, ": ", kMaxForegroundViews, " segments mapped already"));
  }
  const int fd = segment.segment->get();
  // Sealed: it cannot shrink under this mapping (no SIGBUS), and this mapping is read-only.
  WAVEPOOL_RETURN_IF_ERROR(CheckSealed(fd, sizeof(WorkerSegment), what));
  WAVEPOOL_ASSIGN_OR_RETURN(std::unique_ptr<Mapping> mapping,
                            Mapping::Map(fd, sizeof(WorkerSegment), /*writable=*/false, what));
  auto view = std::make_unique<ForegroundView>();
  view->generation = segment.generation;
  view->segment = static_cast<const WorkerSegment*>(mapping->data());
  view->mapping = std::move(mapping);
  // Release: a hot-path thread that loads the pointer (acquire) sees the view's fields.
  foregrounds_[segment.slot].store(view.get(), std::memory_order_release);
  views_.push_back(std::move(view));
  return absl::OkStatus();
}

// Whether the agent or a foreground pauses this background gate. A foreground slot whose current
// segment this gate has not mapped (the agent's Foregrounds message is on its way) pauses it too.
template <std::memory_order kOrder>
bool LaunchGate::BackgroundBlocked() const {
  if (file_->header.background_stop.load(kOrder) != 0 || slot_->pause.load(kOrder) != 0) {
    return true;
  }
  std::uint32_t foreground = file_->header.foreground_slots.load(kOrder);
  while (foreground != 0) {
    const int slot = __builtin_ctz(foreground);
    foreground &= foreground - 1;
    const ForegroundView* view = foregrounds_[slot].load(std::memory_order_acquire);
    if (view == nullptr ||
        view->generation != file_->slots[slot].generation.load(std::memory_order_relaxed) ||
        view->segment->hold.load(kOrder) != 0) {
      return true;
    }
  }
  return false;
}

LaunchGate::~LaunchGate() {
  // A foreground that leaves with its pause up would hold the background until Reclaim.
  LowerPause();
}

bool LaunchGate::Revoked() const {
  // Relaxed: the generation is only compared; it guards no data read after it. Allocate and
  // Reclaim bump it before they touch the rest of the slot.
  return slot_->generation.load(std::memory_order_relaxed) != generation_;
}

void LaunchGate::CountAcquired() {
  // Relaxed: a statistic the agent samples for metrics; it orders nothing.
  mine_->acquired_total.fetch_add(1, std::memory_order_relaxed);
}

bool LaunchGate::TryAcquire() {
  // Agent gone or slot revoked: foreground unpaced (nothing counted: the slot may be someone
  // else's already), background blocked.
  if (AgentGone()) return role_ == Role::kForeground;
  if (role_ == Role::kForeground) {
    // Acquire on success: the launch that follows cannot be ordered before the credit, and it
    // sees what the previous holder published when it released (ReturnCredit's release).
    if (!TakeCredit<std::memory_order_acquire>(*mine_, *slot_)) return false;
    CountAcquired();
    return true;
  }
  // Background. A relaxed look first so that a paused worker never writes the shared line.
  if (BackgroundBlocked<std::memory_order_relaxed>()) return false;
  // Then take the credit and look again, both seq_cst: with the foreground's seq_cst store of
  // its hold word (RaisePause), and the agent's seq_cst stores of pauses, this is Dekker's
  // handshake. Either this look sees the pause (and the credit goes back), or the raise comes
  // later in the single total order and a foreground that then reads our in_flight sees the
  // credit. A background worker therefore never starts a launch group after a pause it could
  // have seen.
  if (!TakeCredit<std::memory_order_seq_cst>(*mine_, *slot_)) return false;
  if (BackgroundBlocked<std::memory_order_seq_cst>()) {
    ReturnCredit(*mine_);
    return false;
  }
  CountAcquired();
  return true;
}

void LaunchGate::Release() {
  // A revoked gate's credits no longer count anywhere.
  if (Revoked()) return;
  ReturnCredit(*mine_);
}

bool LaunchGate::Paused() const {
  if (role_ == Role::kForeground) return false;
  return AgentGone() || BackgroundBlocked<std::memory_order_acquire>();
}

bool LaunchGate::IsSensitive(std::uint32_t op_group) const {
  if (op_group >= kMaxOpGroups) return false;
  // Relaxed: the bit is advisory and guards no other data. A single aligned word cannot tear,
  // and a stale bit only means one group runs with (or without) the pause once more; the agent
  // changes the set at feedback-loop pace (milliseconds), cache coherence delivers it in ~100 ns.
  const std::uint64_t word = slot_->sensitive[op_group / 64].load(std::memory_order_relaxed);
  return ((word >> (op_group % 64)) & 1) != 0;
}

void LaunchGate::RaisePause() {
  if (role_ != Role::kForeground || Revoked()) return;
  // seq_cst: the other half of the handshake in TryAcquire (background). One atomic store, so a
  // worker killed anywhere leaves a consistent hold (and Reclaim makes its segment irrelevant).
  mine_->hold.store(1, std::memory_order_seq_cst);
}

void LaunchGate::LowerPause() {
  if (role_ != Role::kForeground) return;
  // Release (within seq_cst): the sensitive group's launches are ordered before the lowering.
  mine_->hold.store(0, std::memory_order_seq_cst);
}

absl::Status LaunchGate::Acquire(std::chrono::nanoseconds timeout) {
  if (TryAcquire()) return absl::OkStatus();
  const std::int64_t start = NowNs();
  const std::int64_t budget = std::min<std::int64_t>(
      std::max<std::int64_t>(0, timeout.count()), std::numeric_limits<std::int64_t>::max() - start);
  const std::int64_t deadline = start + budget;
  std::int64_t now = start;
  std::int64_t paused_ns = 0;
  std::int64_t sleep_ns = kFirstSleepNs;
  bool paused = Paused();
  bool acquired = false;
  while (!acquired && now < deadline) {
    if (now - start < kSpinNs) {
      CpuRelax();
    } else {
      SleepNs(std::min(sleep_ns, deadline - now));
      sleep_ns = std::min(2 * sleep_ns, kMaxSleepNs);
    }
    acquired = TryAcquire();
    const std::int64_t later = NowNs();
    // The interval since the last look counts as paused when that look saw a pause.
    if (paused) paused_ns += later - now;
    now = later;
    paused = !acquired && Paused();
  }
  if (!Revoked()) {
    // Relaxed: statistics for the agent's metrics.
    mine_->wait_ns_total.fetch_add(static_cast<std::uint64_t>(now - start),
                                   std::memory_order_relaxed);
    mine_->paused_ns_total.fetch_add(static_cast<std::uint64_t>(paused_ns),
                                     std::memory_order_relaxed);
  }
  if (acquired) return absl::OkStatus();
  return absl::DeadlineExceededError(
      absl::StrFormat("gate %s slot %u: no launch credit within %d ns (in flight %d of %d%s%s)",
                      path_, slot_index_, budget, in_flight(), credit_limit(),
                      Paused() ? ", paused" : "", AgentGone() ? ", agent gone" : ""));
}

void LaunchGate::Heartbeat(std::int64_t now_ns) {
  // Relaxed: the agent only compares the value with its clock.
  if (!Revoked()) mine_->heartbeat_ns.store(now_ns, std::memory_order_relaxed);
}

std::int64_t LaunchGate::AgentHeartbeat() const {
  return file_->header.agent_heartbeat_ns.load(std::memory_order_relaxed);
}

std::int32_t LaunchGate::in_flight() const {
  return mine_->in_flight.load(std::memory_order_relaxed);
}

std::int32_t LaunchGate::credit_limit() const {
  return slot_->credit_limit.load(std::memory_order_relaxed);
}

}  // namespace wavepool::agent
