// The agent's side of one GPU's launch gate: it creates the shared-memory file, hands slots to
// registering workers, sets their credit limits, pauses and sensitive op groups, reads their
// statistics, and reclaims the slots of workers that died. Layout and invariants:
// wavepool/agent/client/gate_layout.h.
//
// A GateSegment is safe for concurrent use by the agent's threads (slot allocation is serialised
// inside; the rest are single atomic writes). It owns the mapping and, unless released, removes
// the file when destroyed.
#ifndef WAVEPOOL_AGENT_GATE_SEGMENT_H_
#define WAVEPOOL_AGENT_GATE_SEGMENT_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <sys/types.h>

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
  bool pause = false;
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
  // (<= kMaxSlotsPerGpu), file mode `mode` and, when `group` >= 0, that group as owner (so that
  // workers in pods can map it). The message of any failure names the path and the syscall.
  static absl::StatusOr<std::unique_ptr<GateSegment>> Create(const std::string& directory,
                                                             std::uint32_t gpu_index,
                                                             std::uint32_t slots,
                                                             std::uint64_t epoch,
                                                             mode_t mode = 0660,
                                                             gid_t group = static_cast<gid_t>(-1));
  ~GateSegment();
  GateSegment(const GateSegment&) = delete;
  GateSegment& operator=(const GateSegment&) = delete;

  const std::string& path() const { return path_; }
  std::uint64_t epoch() const { return epoch_; }
  std::uint32_t gpu_index() const { return gpu_index_; }
  std::uint32_t slot_count() const { return slot_count_; }

  // A free slot for a worker; ResourceExhausted when every slot is taken.
  absl::StatusOr<SlotGrant> Allocate(Role role, std::int32_t pid, std::int32_t credit_limit);
  // Frees a slot whose worker said goodbye or died: drops its credits in flight, lowers a pause it
  // raised, clears its sensitive set. Safe to call twice.
  void Reclaim(std::uint32_t slot);

  void SetCreditLimit(std::uint32_t slot, std::int32_t limit);
  void SetPaused(std::uint32_t slot, bool paused);  // background slots
  void SetSensitive(std::uint32_t slot, std::uint32_t op_group, bool sensitive);
  void SetBackgroundStop(bool stop);
  void Beat(std::int64_t now_ns);

  SlotSnapshot Read(std::uint32_t slot) const;
  std::uint32_t ForegroundHold() const;
  // Keeps the file on destruction (an agent handing over to its successor).
  void KeepFileOnDestruction() { remove_file_ = false; }

 private:
  GateSegment(std::string path, GateFile* file, std::uint32_t gpu_index, std::uint32_t slots,
              std::uint64_t epoch);

  const std::string path_;
  GateFile* const file_;  // the mapping, owned
  const std::uint32_t gpu_index_;
  const std::uint32_t slot_count_;
  const std::uint64_t epoch_;
  bool remove_file_ = true;
  std::mutex allocate_mu_;  // serialises Allocate and Reclaim's state transitions
};

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_GATE_SEGMENT_H_
