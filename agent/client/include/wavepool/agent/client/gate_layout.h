// The launch gate's shared-memory layout: one file per GPU in the agent's host directory
// (`<dir>/gpu-<index>.gate`), mapped read-write by the agent and by every worker on that GPU.
// The agent creates it; workers find their slot through Register (protocol.h).
//
// Cache lines (64 bytes each; a slot is 11 lines, the file 1 + 32 * 11 lines):
//   header   [magic version slot_count epoch gpu_index] [agent_heartbeat_ns]
//            [foreground_hold background_stop]
//   slot i   [state generation role pid credit_limit]   agent writes, workers read
//            [in_flight pause heartbeat_ns]             the worker's hot line
//            [acquired_total wait_ns_total paused_ns_total]
//            [sensitive: 8 lines, 4096 bits]            agent writes, the foreground reads
//
// Invariants (the hot path relies on them; every field is a lock-free, address-free atomic, so
// the same code works across processes):
//  - header.magic/layout_version/slot_count/epoch/gpu_index never change after the agent
//    initialised the file (it writes a temporary file and renames it into place, so nobody maps a
//    half-initialised one); a worker maps a file only after checking them, and only the epoch it
//    was told in Registered. A restarted agent creates a new file (a new inode, a new epoch): the
//    old mapping stays valid but is no longer read by anyone.
//  - A slot is owned by the agent while state != kActive and by one worker while kActive; the
//    worker writes only in_flight, heartbeat_ns, its statistics and its bit of foreground_hold.
//  - generation changes whenever the slot changes hands (Allocate and Reclaim both bump it). A
//    worker whose generation no longer matches has been revoked: its gate touches nothing in the
//    slot any more and follows the agent-gone rules (launch_gate.h).
//  - 0 <= in_flight; a worker increments it only while in_flight < credit_limit (compare and
//    swap), so in_flight <= credit_limit unless the agent lowered the limit, after which it only
//    falls. A release never takes it below 0. Reclaiming a slot sets in_flight to 0.
//  - Bit i of header.foreground_hold is set iff slot i is an active foreground slot whose worker
//    raised its pause (it runs a sensitive op group); background workers wait while the hold is
//    non-zero. One atomic OR/AND per raise/lower, so a worker killed at any instruction leaves a
//    consistent hold, and Reclaim (or the next Allocate of the slot) clears the bit.
//  - A slot's pause is the agent's per-slot pause of a background slot (unused for foreground).
//  - A slot's sensitive bitmap is written by the agent only; bit g set means op group g is
//    sensitive (the feedback loop, or an all-reduce).
#ifndef WAVEPOOL_AGENT_CLIENT_GATE_LAYOUT_H_
#define WAVEPOOL_AGENT_CLIENT_GATE_LAYOUT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "wavepool/agent/client/protocol.h"

namespace wavepool::agent {

inline constexpr std::uint64_t kGateMagic = 0x3130455441475057;  // "WPGATE01"
inline constexpr std::uint32_t kGateLayoutVersion = 1;
inline constexpr std::uint32_t kMaxSlotsPerGpu = 32;
inline constexpr std::size_t kSensitiveWords = kMaxOpGroups / 64;

enum class SlotState : std::uint32_t { kFree = 0, kActive = 1, kReclaiming = 2 };

struct alignas(64) GateHeader {
  std::uint64_t magic;
  std::uint32_t layout_version;
  std::uint32_t slot_count;
  std::uint64_t epoch;  // changes every time an agent creates the file
  std::uint32_t gpu_index;
  std::uint32_t reserved;
  alignas(64) std::atomic<std::int64_t> agent_heartbeat_ns;  // CLOCK_MONOTONIC
  // Bit i: foreground slot i raised its pause. Non-zero: background workers hold their launches.
  alignas(64) std::atomic<std::uint32_t> foreground_hold;
  // Non-zero: every background slot is paused (the agent is draining or restarting).
  std::atomic<std::uint32_t> background_stop;
};

struct alignas(64) GateSlot {
  // Written by the agent.
  std::atomic<std::uint32_t> state;  // SlotState
  std::atomic<std::uint32_t> generation;
  std::atomic<std::uint32_t> role;  // Role
  std::atomic<std::int32_t> pid;    // in the agent's pid namespace
  std::atomic<std::int32_t> credit_limit;
  // Written by the worker on the hot path (own cache line: the agent polls, workers write).
  alignas(64) std::atomic<std::int32_t> in_flight;
  std::atomic<std::uint32_t> pause;  // background slots: set by the agent
  std::atomic<std::int64_t> heartbeat_ns;
  // Worker statistics, read by the agent for metrics.
  alignas(64) std::atomic<std::uint64_t> acquired_total;
  std::atomic<std::uint64_t> wait_ns_total;    // time spent waiting for a credit
  std::atomic<std::uint64_t> paused_ns_total;  // of which waiting on a pause
  // Written by the agent.
  alignas(64) std::atomic<std::uint64_t> sensitive[kSensitiveWords];
};

struct GateFile {
  GateHeader header;
  GateSlot slots[kMaxSlotsPerGpu];
};

static_assert(std::atomic<std::int64_t>::is_always_lock_free, "gate atomics must be lock-free");
static_assert(std::atomic<std::uint32_t>::is_always_lock_free, "gate atomics must be lock-free");
static_assert(kMaxSlotsPerGpu <= 32, "foreground_hold has one bit per slot");
static_assert(sizeof(GateHeader) == 3 * 64 && sizeof(GateSlot) == 11 * 64,
              "the layout is shared across processes and versions: change kGateLayoutVersion");

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_CLIENT_GATE_LAYOUT_H_
