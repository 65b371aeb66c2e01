// The agent's side of one GPU's launch gate: it creates the sealed control segment, hands slots
// to registering workers (checking and mapping, read-only, the sealed segment each worker brings),
// sets their credit limits, pauses and sensitive op groups, reads their statistics, and reclaims
// the slots of workers that died. Layout, invariants and trust rules:
// wavepool/agent/client/gate_layout.h.
//
// A GateSegment is safe for concurrent use by the agent's threads (slot allocation, reclaim and
// reading worker segments are serialised inside; the rest are single atomic writes). It owns the
// control segment's writable mapping (the only one there is) and its descriptor, and the
// read-only mappings of the worker segments. The setters and Read take slot indices the segment
// handed out; an index >= slot_count() is ignored (Read returns a free slot).
//
// Trust: state, generation, role, pid and credit limit are the agent's (the control segment,
// which no worker can write). A worker segment is read only for statistics, status and
// detection, every value clamped to its range; it never decides whose slot is whose.
#ifndef WAVEPOOL_AGENT_GATE_SEGMENT_H_
#define WAVEPOOL_AGENT_GATE_SEGMENT_H_

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "wavepool/agent/client/gate_layout.h"
#include "wavepool/agent/client/gate_memory.h"
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
  // Creates the control segment of GPU `gpu_index`, named `<directory>/gpu-<gpu_index>.gate` in
  // messages (no file is created), with `slots` slots (<= kMaxSlotsPerGpu), initialised and
  // sealed before anyone else can receive it. InvalidArgument for bad slots or directory;
  // otherwise the message of any failure names the gate, the syscall and errno.
  static absl::StatusOr<std::unique_ptr<GateSegment>> Create(const std::string& directory,
                                                             std::uint32_t gpu_index,
                                                             std::uint32_t slots,
                                                             std::uint64_t epoch);
  ~GateSegment();
  GateSegment(const GateSegment&) = delete;
  GateSegment& operator=(const GateSegment&) = delete;

  const std::string& path() const { return path_; }  // the gate's name
  // The sealed control segment, for Registered.gate (workers can only map it read-only).
  const SharedFd& descriptor() const { return descriptor_; }
  std::uint64_t epoch() const { return epoch_; }
  std::uint32_t gpu_index() const { return gpu_index_; }
  std::uint32_t slot_count() const { return slot_count_; }

  // A free slot for a worker (the lowest free index), with a new generation, cleared pause and
  // sensitive set, and `worker_segment` (the worker's segment from Register) mapped read-only.
  // ResourceExhausted when every slot is taken; InvalidArgument for an unknown role, a negative
  // limit, or a worker segment that is missing, not sealed (shrink, grow, future-write, seal),
  // of the wrong size, or already another active slot's (or the control segment). `pid` is the
  // worker's pid as the agent sees it. A foreground slot joins header.foreground_slots at once.
  absl::StatusOr<SlotGrant> Allocate(Role role, std::int32_t pid, std::int32_t credit_limit,
                                     const SharedFd& worker_segment);
  // Frees a slot whose worker said goodbye or died: takes it out of the foreground slots (its hold
  // stops counting), bumps its generation (the old gate is revoked), clears its sensitive set and
  // background pause. Statistics stay readable until the slot is allocated again. Safe to call
  // twice, and on a free slot.
  void Reclaim(std::uint32_t slot);

  void SetCreditLimit(std::uint32_t slot, std::int32_t limit);  // a negative limit counts as 0
  void SetPaused(std::uint32_t slot, bool paused);  // active background slots; others: no-op
  void SetSensitive(std::uint32_t slot, std::uint32_t op_group, bool sensitive);  // < kMaxOpGroups
  void SetBackgroundStop(bool stop);
  void Beat(std::int64_t now_ns);

  // The slot's state from the control segment and, clamped, its worker's counters.
  SlotSnapshot Read(std::uint32_t slot) const;
  // The number of active foreground slots whose hold is raised now.
  std::uint32_t ForegroundHold() const;
  // The active foreground slots' segments (for Registered and Foregrounds), by slot.
  std::vector<ForegroundSegment> Foregrounds() const;

 private:
  // A worker's segment as the agent holds it: read-only.
  struct Worker {
    SharedFd fd;
    std::unique_ptr<Mapping> mapping;
    dev_t device = 0;
    ino_t inode = 0;
    const WorkerSegment* segment() const {
      return mapping == nullptr ? nullptr : static_cast<const WorkerSegment*>(mapping->data());
    }
  };

  GateSegment(std::string path, std::unique_ptr<Mapping> control, SharedFd descriptor);
  GateSlot* SlotOrNull(std::uint32_t slot) const;
  absl::StatusOr<Worker> MapWorker(const SharedFd& fd) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  const std::string path_;
  const std::unique_ptr<Mapping> control_;  // the only writable mapping
  const SharedFd descriptor_;
  GateFile* const file_;
  const std::uint32_t gpu_index_;
  const std::uint32_t slot_count_;
  const std::uint64_t epoch_;
  // Serialises Allocate and Reclaim's state transitions and the worker segments' lifetime.
  mutable absl::Mutex mu_;
  std::array<Worker, kMaxSlotsPerGpu> workers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_GATE_SEGMENT_H_
