// The agent's side of one GPU's launch gate: it creates the shared-memory file, hands slots to
// registering workers, sets their credit limits, pauses and sensitive op groups, reads their
// statistics, and reclaims the slots of workers that died. Layout and invariants:
// wavepool/agent/client/gate_layout.h.
//
// A GateSegment is safe for concurrent use by the agent's threads (slot allocation and reclaim
// are serialised inside; the rest are single atomic writes). It owns the mapping and, unless told
// to keep it, removes the file when destroyed (only if the path still names the file it created:
// a successor agent's file is left alone). The setters and Read take slot indices the segment
// handed out; an index >= slot_count() is ignored (Read returns a free slot).
#ifndef WAVEPOOL_AGENT_GATE_SEGMENT_H_
#define WAVEPOOL_AGENT_GATE_SEGMENT_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "wavepool/agent/client/gate_layout.h"
#include "wavepool/agent/client/protocol.h"

namespace wavepool::agent {

struct SlotSnapshot {
  SlotState state = SlotState::kFree;
  std::uint32_t generation = 0;
  Role role = Role::kForeground;
  std::int32_t pid = 0;
  std::int32_t credit_limit = 0;
  std::int32_t in_flight = 0;
  bool pause = false;  // foreground: its hold bit is set; background: the agent paused it
  std::int64_t heartbeat_ns = 0;
  std::uint64_t acquired_total = 0;
  std::uint64_t wait_ns_total = 0;
  std::uint64_t paused_ns_total = 0;
};

struct SlotGrant {
  std::uint32_t slot = 0;
  std::uint32_t generation = 0;
};

class GateSegment {
 public:
  // Creates (replacing any stale file) `<directory>/gpu-<gpu_index>.gate` with `slots` slots
  // (<= kMaxSlotsPerGpu), file mode `mode` and, unless `group` is (gid_t)-1, that group as owner
  // (so that workers in pods can map it). The file is written under a temporary name and renamed
  // into place, so a worker never maps a half-initialised one. InvalidArgument for bad slots or
  // directory; otherwise the message of any failure names the path, the syscall and errno.
  static absl::StatusOr<std::unique_ptr<GateSegment>> Create(
      const std::string& directory, std::uint32_t gpu_index, std::uint32_t slots,
      std::uint64_t epoch, mode_t mode = 0660, gid_t group = static_cast<gid_t>(-1));
  ~GateSegment();
  GateSegment(const GateSegment&) = delete;
  GateSegment& operator=(const GateSegment&) = delete;

  const std::string& path() const { return path_; }
  std::uint64_t epoch() const { return epoch_; }
  std::uint32_t gpu_index() const { return gpu_index_; }
  std::uint32_t slot_count() const { return slot_count_; }

  // A free slot for a worker (the lowest free index), with a new generation, cleared counters,
  // pause and sensitive set; ResourceExhausted when every slot is taken, InvalidArgument for an
  // unknown role or a negative limit. `pid` is the worker's pid as the agent sees it.
  absl::StatusOr<SlotGrant> Allocate(Role role, std::int32_t pid, std::int32_t credit_limit);
  // Frees a slot whose worker said goodbye or died: bumps its generation (the old gate is
  // revoked), drops its credits in flight, lowers a pause it raised, clears its sensitive set and
  // background pause. Statistics stay readable until the slot is allocated again. Safe to call
  // twice, and on a free slot.
  void Reclaim(std::uint32_t slot);

  void SetCreditLimit(std::uint32_t slot, std::int32_t limit);  // a negative limit counts as 0
  void SetPaused(std::uint32_t slot, bool paused);  // active background slots; others: no-op
  void SetSensitive(std::uint32_t slot, std::uint32_t op_group, bool sensitive);  // < kMaxOpGroups
  void SetBackgroundStop(bool stop);
  void Beat(std::int64_t now_ns);

  SlotSnapshot Read(std::uint32_t slot) const;
  // The number of foreground slots whose pause is raised now.
  std::uint32_t ForegroundHold() const;
  // Keeps the file on destruction (an agent handing over to its successor).
  void KeepFileOnDestruction() { remove_file_.store(false); }

 private:
  GateSegment(std::string path, GateFile* file, dev_t device, ino_t inode);
  GateSlot* SlotOrNull(std::uint32_t slot) const;

  // Constant after construction.
  const std::string path_;
  GateFile* const file_;  // the mapping, owned
  const dev_t device_;    // identify the file Create made, so the destructor unlinks only it
  const ino_t inode_;
  const std::uint32_t gpu_index_;
  const std::uint32_t slot_count_;
  const std::uint64_t epoch_;
  std::atomic<bool> remove_file_{true};
  std::mutex allocate_mu_;  // serialises Allocate and Reclaim's state transitions
};

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_GATE_SEGMENT_H_
