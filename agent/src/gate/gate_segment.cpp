#include "wavepool/agent/gate_segment.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <new>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "wavepool/base/errno_error.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::agent {
namespace {

constexpr auto kFree = static_cast<std::uint32_t>(SlotState::kFree);
constexpr auto kActive = static_cast<std::uint32_t>(SlotState::kActive);
constexpr auto kReclaiming = static_cast<std::uint32_t>(SlotState::kReclaiming);
// The most credits a worker segment is believed to have in flight (read back for metrics only).
constexpr std::int32_t kMaxReportedInFlight = 1 << 20;

void ClearSensitive(GateSlot& slot) {
  for (auto& word : slot.sensitive) word.store(0, std::memory_order_relaxed);
}

// A worker's statistic as the agent reports it: a u64 that fits the metrics' signed types.
std::uint64_t Clamped(std::uint64_t value) {
  return std::min<std::uint64_t>(value, std::numeric_limits<std::int64_t>::max());
}

}  // namespace

absl::StatusOr<std::unique_ptr<GateSegment>> GateSegment::Create(const std::string& directory,
                                                                 std::uint32_t gpu_index,
                                                                 std::uint32_t slots,
                                                                 std::uint64_t epoch) {
  if (directory.empty()) {
    return absl::InvalidArgumentError("gate directory: must not be empty");
  }
  const std::string path = absl::StrCat(directory, "/gpu-", gpu_index, ".gate");
  if (slots == 0 || slots > kMaxSlotsPerGpu) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "create gate %s: slots must be in 1..%u, got %u", path, kMaxSlotsPerGpu, slots));
  }
  const std::string what = absl::StrCat("create gate ", path);
  absl::StatusOr<ScopedFd> fd =
      CreateSealableSegment(absl::StrCat("wavepool-gpu-", gpu_index, ".gate"), sizeof(GateFile));
  if (!fd.ok())
    return absl::Status(fd.status().code(), absl::StrCat(what, ": ", fd.status().message()));
  WAVEPOOL_ASSIGN_OR_RETURN(std::unique_ptr<Mapping> control,
                            Mapping::Map(fd->get(), sizeof(GateFile), /*writable=*/true, what));
  // ftruncate zero-filled the segment: every slot is kFree with generation 0. Placement new
  // begins the objects' lifetime without writing (the atomics' default constructors are trivial).
  GateFile* file = new (control->data()) GateFile;
  file->header.magic = kGateMagic;
  file->header.layout_version = kGateLayoutVersion;
  file->header.slot_count = slots;
  file->header.epoch = epoch;
  file->header.gpu_index = gpu_index;
  // Before any worker can receive it: from now on this mapping is the only writable one.
  WAVEPOOL_RETURN_IF_ERROR(SealAgainstNewWriters(fd->get(), what));
  return std::unique_ptr<GateSegment>(
      new GateSegment(path, std::move(control), ShareFd(*std::move(fd))));
}

GateSegment::GateSegment(std::string path, std::unique_ptr<Mapping> control, SharedFd descriptor)
    : path_(std::move(path)),
      control_(std::move(control)),
      descriptor_(std::move(descriptor)),
      file_(static_cast<GateFile*>(control_->data())),
      gpu_index_(file_->header.gpu_index),
      slot_count_(file_->header.slot_count),
      epoch_(file_->header.epoch) {}

GateSegment::~GateSegment() = default;

GateSlot* GateSegment::SlotOrNull(std::uint32_t slot) const {
  return slot < slot_count_ ? &file_->slots[slot] : nullptr;
}

absl::StatusOr<GateSegment::Worker> GateSegment::MapWorker(const SharedFd& fd) const {
  auto refuse = [this](const std::string& why) {
    return absl::InvalidArgumentError(
        absl::StrCat("gate ", path_, ": allocate: Register.worker_segment: ", why));
  };
  if (fd == nullptr || !fd->valid()) return refuse("no descriptor");
  // Sealed against shrinking (no SIGBUS for the agent or anyone reading it) and against new
  // writers (only the worker that created it can write it).
  if (absl::Status sealed = CheckSealed(fd->get(), sizeof(WorkerSegment), "segment");
      !sealed.ok()) {
    return refuse(std::string(sealed.message()));
  }
  struct stat st;
  if (fstat(fd->get(), &st) != 0) return refuse(std::string(ErrnoError(errno, "fstat").message()));
  struct stat control;
  if (fstat(descriptor_->get(), &control) == 0 && control.st_dev == st.st_dev &&
      control.st_ino == st.st_ino) {
    return refuse("is the gate's control segment");
  }
  // Another worker's segment (a background was given the foregrounds') is not this worker's.
  for (std::uint32_t i = 0; i < slot_count_; ++i) {
    const Worker& other = workers_[i];
    if (other.mapping != nullptr && other.device == st.st_dev && other.inode == st.st_ino) {
      return refuse(absl::StrCat("is the segment of slot ", i));
    }
  }
  absl::StatusOr<std::unique_ptr<Mapping>> mapping =
      Mapping::Map(fd->get(), sizeof(WorkerSegment), /*writable=*/false, "worker segment");
  if (!mapping.ok()) return refuse(std::string(mapping.status().message()));
  Worker worker;
  worker.fd = fd;
  worker.mapping = *std::move(mapping);
  worker.device = st.st_dev;
  worker.inode = st.st_ino;
  return worker;
}

absl::StatusOr<SlotGrant> GateSegment::Allocate(Role role, std::int32_t pid,
                                                std::int32_t credit_limit,
                                                const SharedFd& worker_segment) {
  if (role != Role::kForeground && role != Role::kBackground) {
    return absl::InvalidArgumentError(
        absl::StrFormat("gate %s: allocate: unknown role %d", path_, static_cast<int>(role)));
  }
  if (credit_limit < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "gate %s: allocate: credit limit must be >= 0, got %d", path_, credit_limit));
  }
  absl::MutexLock lock(&mu_);
  for (std::uint32_t i = 0; i < slot_count_; ++i) {
    GateSlot& slot = file_->slots[i];
    if (slot.state.load(std::memory_order_acquire) != kFree) continue;
    WAVEPOOL_ASSIGN_OR_RETURN(Worker worker, MapWorker(worker_segment));
    workers_[i] = std::move(worker);
    // The generation first: a stale gate still mapping this slot is revoked before anything else
    // changes (seq_cst, like Reclaim's bump).
    const std::uint32_t generation = slot.generation.fetch_add(1, std::memory_order_seq_cst) + 1;
    slot.role.store(static_cast<std::uint32_t>(role), std::memory_order_relaxed);
    slot.pid.store(pid, std::memory_order_relaxed);
    slot.credit_limit.store(credit_limit, std::memory_order_relaxed);
    slot.pause.store(0, std::memory_order_relaxed);
    ClearSensitive(slot);
    // Release: a worker's Attach that sees kActive (acquire) sees every field written above.
    slot.state.store(kActive, std::memory_order_release);
    if (role == Role::kForeground) {
      // seq_cst: from here on every background either sees this foreground's hold or, until it
      // has mapped the segment, pauses (LaunchGate's fail-safe).
      file_->header.foreground_slots.fetch_or(1u << i, std::memory_order_seq_cst);
    }
    return SlotGrant{i, generation};
  }
  return absl::ResourceExhaustedError(
      absl::StrFormat("gate %s: all %u slots are taken", path_, slot_count_));
}

void GateSegment::Reclaim(std::uint32_t slot_index) {
  GateSlot* slot = SlotOrNull(slot_index);
  if (slot == nullptr) return;
  absl::MutexLock lock(&mu_);
  if (slot->state.load(std::memory_order_acquire) != kActive) return;
  slot->state.store(kReclaiming, std::memory_order_seq_cst);
  // Its hold stops counting first, then the old owner is revoked.
  file_->header.foreground_slots.fetch_and(~(1u << slot_index), std::memory_order_seq_cst);
  slot->generation.fetch_add(1, std::memory_order_seq_cst);
  slot->pause.store(0, std::memory_order_seq_cst);
  ClearSensitive(*slot);
  slot->pid.store(0, std::memory_order_relaxed);
  slot->state.store(kFree, std::memory_order_release);
  // The worker's mapping stays until the slot is allocated again: its statistics stay readable.
  // The descriptor goes now (it is never handed out again).
  workers_[slot_index].fd.reset();
}

void GateSegment::SetCreditLimit(std::uint32_t slot, std::int32_t limit) {
  // Relaxed: a single value that guards no other data; a worker sees it on its next launch.
  if (GateSlot* s = SlotOrNull(slot)) {
    s->credit_limit.store(limit < 0 ? 0 : limit, std::memory_order_relaxed);
  }
}

void GateSegment::SetPaused(std::uint32_t slot, bool paused) {
  GateSlot* s = SlotOrNull(slot);
  if (s == nullptr || s->state.load(std::memory_order_acquire) != kActive ||
      s->role.load(std::memory_order_relaxed) != static_cast<std::uint32_t>(Role::kBackground)) {
    return;
  }
  // seq_cst: with the background's seq_cst take-then-look, the agent may read in_flight after
  // this store and know that no new launch group starts until it lowers the pause.
  s->pause.store(paused ? 1 : 0, std::memory_order_seq_cst);
}

void GateSegment::SetSensitive(std::uint32_t slot, std::uint32_t op_group, bool sensitive) {
  GateSlot* s = SlotOrNull(slot);
  if (s == nullptr || op_group >= kMaxOpGroups) return;
  // An atomic OR/AND: agent threads may update neighbouring bits of one word at once. Relaxed,
  // as the reader's load (LaunchGate::IsSensitive): the bit is advisory.
  const std::uint64_t bit = std::uint64_t{1} << (op_group % 64);
  auto& word = s->sensitive[op_group / 64];
  if (sensitive) {
    word.fetch_or(bit, std::memory_order_relaxed);
  } else {
    word.fetch_and(~bit, std::memory_order_relaxed);
  }
}

void GateSegment::SetBackgroundStop(bool stop) {
  // seq_cst for the same handshake as SetPaused.
  file_->header.background_stop.store(stop ? 1 : 0, std::memory_order_seq_cst);
}

void GateSegment::Beat(std::int64_t now_ns) {
  // Relaxed: workers only compare the value with their clock.
  file_->header.agent_heartbeat_ns.store(now_ns, std::memory_order_relaxed);
}

SlotSnapshot GateSegment::Read(std::uint32_t slot) const {
  SlotSnapshot snapshot;
  const GateSlot* s = SlotOrNull(slot);
  if (s == nullptr) return snapshot;
  // The agent's own fields. Each is read on its own; a snapshot is not atomic as a whole.
  snapshot.state = static_cast<SlotState>(s->state.load(std::memory_order_acquire));
  snapshot.generation = s->generation.load(std::memory_order_relaxed);
  snapshot.role = static_cast<Role>(s->role.load(std::memory_order_relaxed));
  snapshot.pid = s->pid.load(std::memory_order_relaxed);
  snapshot.credit_limit = s->credit_limit.load(std::memory_order_relaxed);
  absl::MutexLock lock(&mu_);
  const WorkerSegment* w = workers_[slot].segment();
  if (w == nullptr) return snapshot;
  // The worker's, untrusted: clamped, for metrics, status and detection only. seq_cst: an agent
  // (or a foreground) that raised a pause with a seq_cst write and then reads a background's
  // in_flight here completes the handshake of LaunchGate::TryAcquire: a zero means no launch
  // group of that (cooperating) worker runs, and none starts until the pause is lowered.
  // A reclaimed slot's credits and hold count no more, whatever its old worker still writes.
  const bool active = snapshot.state == SlotState::kActive;
  snapshot.in_flight =
      active ? std::clamp(w->in_flight.load(std::memory_order_seq_cst), 0, kMaxReportedInFlight)
             : 0;
  snapshot.pause = snapshot.role == Role::kForeground
                       ? active && w->hold.load(std::memory_order_seq_cst) != 0
                       : s->pause.load(std::memory_order_seq_cst) != 0;
  snapshot.heartbeat_ns =
      std::max<std::int64_t>(0, w->heartbeat_ns.load(std::memory_order_relaxed));
  snapshot.acquired_total = Clamped(w->acquired_total.load(std::memory_order_relaxed));
  snapshot.wait_ns_total = Clamped(w->wait_ns_total.load(std::memory_order_relaxed));
  snapshot.paused_ns_total = Clamped(w->paused_ns_total.load(std::memory_order_relaxed));
  return snapshot;
}

std::uint32_t GateSegment::ForegroundHold() const {
  std::uint32_t held = 0;
  std::uint32_t foreground = file_->header.foreground_slots.load(std::memory_order_acquire);
  absl::MutexLock lock(&mu_);
  while (foreground != 0) {
    const int slot = __builtin_ctz(foreground);
    foreground &= foreground - 1;
    const WorkerSegment* w = workers_[slot].segment();
    if (w != nullptr && w->hold.load(std::memory_order_acquire) != 0) ++held;
  }
  return held;
}

std::vector<ForegroundSegment> GateSegment::Foregrounds() const {
  std::vector<ForegroundSegment> segments;
  const std::uint32_t foreground = file_->header.foreground_slots.load(std::memory_order_acquire);
  absl::MutexLock lock(&mu_);
  for (std::uint32_t i = 0; i < slot_count_; ++i) {
    if (((foreground >> i) & 1) == 0 || workers_[i].fd == nullptr) continue;
    segments.push_back(
        {i, file_->slots[i].generation.load(std::memory_order_relaxed), workers_[i].fd});
  }
  return segments;
}

}  // namespace wavepool::agent
