#include "wavepool/agent/client/launch_gate.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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
bool TakeCredit(GateSlot& slot) {
  std::int32_t current = slot.in_flight.load(std::memory_order_relaxed);
  do {
    if (current >= slot.credit_limit.load(std::memory_order_relaxed)) return false;
  } while (!slot.in_flight.compare_exchange_weak(current, current + 1, kOrder,
                                                 std::memory_order_relaxed));
  return true;
}

// Returns one credit. Release order: everything the worker did for the completed group
// happens-before the next acquirer's successful CAS (acquire) sees the credit free. The floor at
// 0 keeps the invariant 0 <= in_flight even for a credit that was never counted (agent gone).
void ReturnCredit(GateSlot& slot) {
  std::int32_t current = slot.in_flight.load(std::memory_order_relaxed);
  while (current > 0 &&
         !slot.in_flight.compare_exchange_weak(current, current - 1, std::memory_order_release,
                                               std::memory_order_relaxed)) {
  }
}

// Whether the agent or a foreground pauses a background slot.
template <std::memory_order kOrder>
bool BackgroundBlocked(const GateHeader& header, const GateSlot& slot) {
  return header.background_stop.load(kOrder) != 0 || header.foreground_hold.load(kOrder) != 0 ||
         slot.pause.load(kOrder) != 0;
}

// Owns a mapping until released (Attach's error paths unmap it).
class Mapping {
 public:
  Mapping(void* address, std::size_t bytes) : address_(address), bytes_(bytes) {}
  ~Mapping() {
    if (address_ != nullptr) munmap(address_, bytes_);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  GateFile* file() const { return static_cast<GateFile*>(address_); }
  void* Release() { return std::exchange(address_, nullptr); }

 private:
  void* address_;
  std::size_t bytes_;
};

absl::Status Unusable(const std::string& path, const std::string& why) {
  return absl::FailedPreconditionError(absl::StrCat("gate ", path, ": ", why));
}

absl::Status SyscallFailed(const std::string& path, const char* syscall, int err) {
  return absl::ErrnoToStatus(err, absl::StrCat("gate ", path, ": ", syscall));
}

// The checks of Attach that need the mapped file. `bytes` is the file's size (>= the header).
absl::Status CheckFile(const Registered& registered, Role role, const GateFile& file,
                       std::size_t bytes) {
  const std::string& path = registered.gate_path;
  const GateHeader& header = file.header;
  if (header.magic != kGateMagic) return Unusable(path, "not a gate file (bad magic)");
  if (header.layout_version != kGateLayoutVersion) {
    return Unusable(path, absl::StrFormat("layout version %u, this worker reads version %u",
                                          header.layout_version, kGateLayoutVersion));
  }
  if (bytes != sizeof(GateFile)) {
    return Unusable(path, absl::StrFormat("size %u bytes, a version %u gate file has %u", bytes,
                                          kGateLayoutVersion, sizeof(GateFile)));
  }
  if (header.epoch != registered.gate_epoch) {
    return Unusable(path, absl::StrFormat("epoch %u, registered for epoch %u (the agent restarted)",
                                          header.epoch, registered.gate_epoch));
  }
  if (header.slot_count == 0 || header.slot_count > kMaxSlotsPerGpu ||
      registered.slot >= header.slot_count) {
    return Unusable(path, absl::StrFormat("slot %u out of range (the file has %u slots)",
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

absl::StatusOr<std::unique_ptr<LaunchGate>> LaunchGate::Attach(const Registered& registered,
                                                               Role role) {
  const std::string& path = registered.gate_path;
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return SyscallFailed(path, "open", errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return SyscallFailed(path, "fstat", err);
  }
  const auto bytes = static_cast<std::size_t>(st.st_size);
  if (st.st_size < static_cast<off_t>(sizeof(GateHeader))) {
    close(fd);
    return Unusable(
        path, absl::StrFormat("truncated: %u bytes, a gate file has %u", bytes, sizeof(GateFile)));
  }
  // The whole file and no more: touching a page past its end would raise SIGBUS.
  void* address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int mmap_errno = errno;
  close(fd);  // the mapping keeps the file
  if (address == MAP_FAILED) return SyscallFailed(path, "mmap", mmap_errno);
  Mapping mapping(address, bytes);
  if (absl::Status checked = CheckFile(registered, role, *mapping.file(), bytes); !checked.ok()) {
    return checked;
  }
  GateFile* file = static_cast<GateFile*>(mapping.Release());
  return std::unique_ptr<LaunchGate>(
      new LaunchGate(path, file, bytes, registered.slot, registered.gate_generation, role));
}

LaunchGate::LaunchGate(std::string path, GateFile* file, std::size_t mapped_bytes,
                       std::uint32_t slot, std::uint32_t generation, Role role)
    : path_(std::move(path)),
      file_(file),
      mapped_bytes_(mapped_bytes),
      slot_(&file->slots[slot]),
      slot_index_(slot),
      generation_(generation),
      role_(role) {}

LaunchGate::~LaunchGate() {
  // A foreground that leaves with its pause up would hold the background until Reclaim.
  LowerPause();
  munmap(file_, mapped_bytes_);
}

bool LaunchGate::Revoked() const {
  // Relaxed: the generation is only compared; it guards no data read after it. Allocate and
  // Reclaim bump it before they touch the rest of the slot.
  return slot_->generation.load(std::memory_order_relaxed) != generation_;
}

void LaunchGate::CountAcquired() {
  // Relaxed: a statistic the agent samples for metrics; it orders nothing.
  slot_->acquired_total.fetch_add(1, std::memory_order_relaxed);
}

bool LaunchGate::TryAcquire() {
  // Agent gone or slot revoked: foreground unpaced (nothing counted: the slot may be someone
  // else's already), background blocked.
  if (AgentGone()) return role_ == Role::kForeground;
  if (role_ == Role::kForeground) {
    // Acquire on success: the launch that follows cannot be ordered before the credit, and it
    // sees what the previous holder published when it released (ReturnCredit's release).
    if (!TakeCredit<std::memory_order_acquire>(*slot_)) return false;
    CountAcquired();
    return true;
  }
  // Background. A relaxed look first so that a paused worker never writes the shared line.
  if (BackgroundBlocked<std::memory_order_relaxed>(file_->header, *slot_)) return false;
  // Then take the credit and look again, both seq_cst: with the foreground's seq_cst fetch_or of
  // its hold bit (RaisePause), and the agent's seq_cst stores of pauses, this is Dekker's
  // handshake. Either this look sees the pause (and the credit goes back), or the raise comes
  // later in the single total order and a foreground that then reads our in_flight sees the
  // credit. A background worker therefore never starts a launch group after a pause it could
  // have seen.
  if (!TakeCredit<std::memory_order_seq_cst>(*slot_)) return false;
  if (BackgroundBlocked<std::memory_order_seq_cst>(file_->header, *slot_)) {
    ReturnCredit(*slot_);
    return false;
  }
  CountAcquired();
  return true;
}

void LaunchGate::Release() {
  // A revoked slot was zeroed by Reclaim and may belong to another worker now.
  if (Revoked()) return;
  ReturnCredit(*slot_);
}

bool LaunchGate::Paused() const {
  if (role_ == Role::kForeground) return false;
  return AgentGone() || BackgroundBlocked<std::memory_order_acquire>(file_->header, *slot_);
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
  // seq_cst: the other half of the handshake in TryAcquire (background). One atomic OR, so a
  // worker killed anywhere leaves the hold consistent with its bit.
  file_->header.foreground_hold.fetch_or(1u << slot_index_, std::memory_order_seq_cst);
}

void LaunchGate::LowerPause() {
  // A revoked gate's bit may belong to the slot's next foreground owner now.
  if (role_ != Role::kForeground || Revoked()) return;
  // Release (within seq_cst): the sensitive group's launches are ordered before the lowering.
  file_->header.foreground_hold.fetch_and(~(1u << slot_index_), std::memory_order_seq_cst);
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
    slot_->wait_ns_total.fetch_add(static_cast<std::uint64_t>(now - start),
                                   std::memory_order_relaxed);
    slot_->paused_ns_total.fetch_add(static_cast<std::uint64_t>(paused_ns),
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
  if (!Revoked()) slot_->heartbeat_ns.store(now_ns, std::memory_order_relaxed);
}

std::int64_t LaunchGate::AgentHeartbeat() const {
  return file_->header.agent_heartbeat_ns.load(std::memory_order_relaxed);
}

std::int32_t LaunchGate::in_flight() const {
  return slot_->in_flight.load(std::memory_order_relaxed);
}

std::int32_t LaunchGate::credit_limit() const {
  return slot_->credit_limit.load(std::memory_order_relaxed);
}

}  // namespace wavepool::agent
