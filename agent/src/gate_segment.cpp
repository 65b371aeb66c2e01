#include "wavepool/agent/gate_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <new>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace wavepool::agent {
namespace {

constexpr auto kFree = static_cast<std::uint32_t>(SlotState::kFree);
constexpr auto kActive = static_cast<std::uint32_t>(SlotState::kActive);
constexpr auto kReclaiming = static_cast<std::uint32_t>(SlotState::kReclaiming);

// The temporary file of Create: unlinked, unmapped and closed unless Create succeeds.
class PendingFile {
 public:
  explicit PendingFile(std::string path) : path_(std::move(path)) {}
  ~PendingFile() {
    if (address_ != nullptr) munmap(address_, sizeof(GateFile));
    if (fd_ >= 0) {
      close(fd_);
      unlink(path_.c_str());
    }
  }
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;

  std::string& path() { return path_; }
  int fd() const { return fd_; }
  void set_fd(int fd) { fd_ = fd; }
  void set_address(void* address) { address_ = address; }
  // After the rename: the file is the gate now; keep the mapping, close the descriptor.
  GateFile* Commit() {
    close(std::exchange(fd_, -1));
    return static_cast<GateFile*>(std::exchange(address_, nullptr));
  }

 private:
  std::string path_;
  int fd_ = -1;
  void* address_ = nullptr;
};

void ClearCounters(GateSlot& slot) {
  slot.in_flight.store(0, std::memory_order_relaxed);
  slot.pause.store(0, std::memory_order_relaxed);
  slot.heartbeat_ns.store(0, std::memory_order_relaxed);
  slot.acquired_total.store(0, std::memory_order_relaxed);
  slot.wait_ns_total.store(0, std::memory_order_relaxed);
  slot.paused_ns_total.store(0, std::memory_order_relaxed);
}

void ClearSensitive(GateSlot& slot) {
  for (auto& word : slot.sensitive) word.store(0, std::memory_order_relaxed);
}

}  // namespace

absl::StatusOr<std::unique_ptr<GateSegment>> GateSegment::Create(const std::string& directory,
                                                                 std::uint32_t gpu_index,
                                                                 std::uint32_t slots,
                                                                 std::uint64_t epoch, mode_t mode,
                                                                 gid_t group) {
  if (directory.empty()) {
    return absl::InvalidArgumentError("gate directory: must not be empty");
  }
  const std::string path = absl::StrCat(directory, "/gpu-", gpu_index, ".gate");
  if (slots == 0 || slots > kMaxSlotsPerGpu) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "create gate %s: slots must be in 1..%u, got %u", path, kMaxSlotsPerGpu, slots));
  }
  const std::string context = absl::StrCat("create gate ", path, ": ");
  // Call right after the failed syscall: errno is read before anything can allocate.
  auto failed = [&context](const char* syscall, const std::string& object) {
    const int err = errno;
    return absl::ErrnoToStatus(err, absl::StrCat(context, syscall, " ", object));
  };
  PendingFile pending(absl::StrCat(directory, "/.gpu-", gpu_index, ".gate.XXXXXX"));
  pending.set_fd(mkostemp(pending.path().data(), O_CLOEXEC));
  if (pending.fd() < 0) return failed("mkostemp", pending.path());
  if (ftruncate(pending.fd(), sizeof(GateFile)) != 0) return failed("ftruncate", pending.path());
  void* address =
      mmap(nullptr, sizeof(GateFile), PROT_READ | PROT_WRITE, MAP_SHARED, pending.fd(), 0);
  if (address == MAP_FAILED) return failed("mmap", pending.path());
  pending.set_address(address);
  // ftruncate zero-filled the file: every slot is kFree with generation 0, every counter 0.
  // Placement new begins the objects' lifetime without writing (the atomics' default
  // constructors are trivial).
  GateFile* file = new (address) GateFile;
  file->header.magic = kGateMagic;
  file->header.layout_version = kGateLayoutVersion;
  file->header.slot_count = slots;
  file->header.epoch = epoch;
  file->header.gpu_index = gpu_index;
  if (fchmod(pending.fd(), mode) != 0) return failed("fchmod", pending.path());
  if (group != static_cast<gid_t>(-1) && fchown(pending.fd(), static_cast<uid_t>(-1), group) != 0) {
    return failed("fchown", pending.path());
  }
  if (fsync(pending.fd()) != 0) return failed("fsync", pending.path());
  struct stat st;
  if (fstat(pending.fd(), &st) != 0) return failed("fstat", pending.path());
  // The rename publishes the complete file atomically (it replaces a stale gate, whose mappings
  // keep the old inode).
  const std::string renaming = absl::StrCat(pending.path(), " to ", path);
  if (rename(pending.path().c_str(), path.c_str()) != 0) return failed("rename", renaming);
  pending.Commit();
  return std::unique_ptr<GateSegment>(new GateSegment(path, file, st.st_dev, st.st_ino));
}

GateSegment::GateSegment(std::string path, GateFile* file, dev_t device, ino_t inode)
    : path_(std::move(path)),
      file_(file),
      device_(device),
      inode_(inode),
      gpu_index_(file->header.gpu_index),
      slot_count_(file->header.slot_count),
      epoch_(file->header.epoch) {}

GateSegment::~GateSegment() {
  munmap(file_, sizeof(GateFile));
  if (!remove_file_.load()) return;
  struct stat st;
  if (stat(path_.c_str(), &st) == 0 && st.st_dev == device_ && st.st_ino == inode_) {
    unlink(path_.c_str());
  }
}

GateSlot* GateSegment::SlotOrNull(std::uint32_t slot) const {
  return slot < slot_count_ ? &file_->slots[slot] : nullptr;
}

absl::StatusOr<SlotGrant> GateSegment::Allocate(Role role, std::int32_t pid,
                                                std::int32_t credit_limit) {
  if (role != Role::kForeground && role != Role::kBackground) {
    return absl::InvalidArgumentError(
        absl::StrFormat("gate %s: allocate: unknown role %d", path_, static_cast<int>(role)));
  }
  if (credit_limit < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "gate %s: allocate: credit limit must be >= 0, got %d", path_, credit_limit));
  }
  std::lock_guard<std::mutex> lock(allocate_mu_);
  for (std::uint32_t i = 0; i < slot_count_; ++i) {
    GateSlot& slot = file_->slots[i];
    if (slot.state.load(std::memory_order_acquire) != kFree) continue;
    // The generation first: a stale gate still mapping this slot is revoked before anything else
    // changes (seq_cst, like Reclaim's bump).
    const std::uint32_t generation = slot.generation.fetch_add(1, std::memory_order_seq_cst) + 1;
    // A revoked foreground that raced Reclaim may have set its bit again after it: clear it.
    file_->header.foreground_hold.fetch_and(~(1u << i), std::memory_order_seq_cst);
    slot.role.store(static_cast<std::uint32_t>(role), std::memory_order_relaxed);
    slot.pid.store(pid, std::memory_order_relaxed);
    slot.credit_limit.store(credit_limit, std::memory_order_relaxed);
    ClearCounters(slot);
    ClearSensitive(slot);
    // Release: a worker's Attach that sees kActive (acquire) sees every field written above.
    slot.state.store(kActive, std::memory_order_release);
    return SlotGrant{i, generation};
  }
  return absl::ResourceExhaustedError(
      absl::StrFormat("gate %s: all %u slots are taken", path_, slot_count_));
}

void GateSegment::Reclaim(std::uint32_t slot_index) {
  GateSlot* slot = SlotOrNull(slot_index);
  if (slot == nullptr) return;
  std::lock_guard<std::mutex> lock(allocate_mu_);
  if (slot->state.load(std::memory_order_acquire) != kActive) return;
  slot->state.store(kReclaiming, std::memory_order_seq_cst);
  // Revoke the old owner first: from here on a live but abandoned gate writes nothing here.
  slot->generation.fetch_add(1, std::memory_order_seq_cst);
  file_->header.foreground_hold.fetch_and(~(1u << slot_index), std::memory_order_seq_cst);
  slot->in_flight.store(0, std::memory_order_seq_cst);
  slot->pause.store(0, std::memory_order_seq_cst);
  ClearSensitive(*slot);
  slot->pid.store(0, std::memory_order_relaxed);
  slot->state.store(kFree, std::memory_order_release);
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
  // Each field is read on its own; a snapshot is not atomic as a whole.
  snapshot.state = static_cast<SlotState>(s->state.load(std::memory_order_acquire));
  snapshot.generation = s->generation.load(std::memory_order_relaxed);
  snapshot.role = static_cast<Role>(s->role.load(std::memory_order_relaxed));
  snapshot.pid = s->pid.load(std::memory_order_relaxed);
  snapshot.credit_limit = s->credit_limit.load(std::memory_order_relaxed);
  // seq_cst: an agent (or a foreground) that raised a pause with a seq_cst write and then reads
  // a background's in_flight here completes the handshake of LaunchGate::TryAcquire: a zero
  // means no launch group of that worker runs, and none starts until the pause is lowered.
  snapshot.in_flight = s->in_flight.load(std::memory_order_seq_cst);
  const std::uint32_t hold = file_->header.foreground_hold.load(std::memory_order_seq_cst);
  snapshot.pause = snapshot.role == Role::kForeground
                       ? ((hold >> slot) & 1) != 0
                       : s->pause.load(std::memory_order_seq_cst) != 0;
  snapshot.heartbeat_ns = s->heartbeat_ns.load(std::memory_order_relaxed);
  snapshot.acquired_total = s->acquired_total.load(std::memory_order_relaxed);
  snapshot.wait_ns_total = s->wait_ns_total.load(std::memory_order_relaxed);
  snapshot.paused_ns_total = s->paused_ns_total.load(std::memory_order_relaxed);
  return snapshot;
}

std::uint32_t GateSegment::ForegroundHold() const {
  return static_cast<std::uint32_t>(
      __builtin_popcount(file_->header.foreground_hold.load(std::memory_order_acquire)));
}

}  // namespace wavepool::agent
