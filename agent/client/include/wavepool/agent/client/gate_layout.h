// The launch gate's shared-memory layout. Two kinds of sealed memfd segments (gate_memory.h),
// passed over the agent's socket with SCM_RIGHTS (protocol.h); nothing is a file in a directory.
//
//  - The control segment (GateFile), one per GPU: written by the agent only. The agent creates
//    it, maps it read-write, initialises it and seals it (shrink, grow, future-write, seal) before
//    any worker receives it; workers can only map it read-only. Cache lines (64 bytes each; a slot
//    is 9 lines, the segment 3 + 32 * 9 lines):
//      header   [magic version slot_count epoch gpu_index] [agent_heartbeat_ns]
//               [background_stop foreground_slots]
//      slot i   [state generation role pid credit_limit pause]
//               [sensitive: 8 lines, 4096 bits]
//  - A worker segment (WorkerSegment), one per registered worker: written by that worker only.
//    The worker creates it, maps it read-write and seals it (shrink, grow, future-write, seal)
//    before it sends the descriptor with Register; the agent checks the seals and maps it
//    read-only. A foreground's segment is also handed (read-only: the seals make any other
//    mapping read-only) to the background workers of its GPU, which read its hold word directly.
//      [in_flight heartbeat_ns] [hold] [acquired_total wait_ns_total paused_ns_total]
//
// Trust: the agent never trusts a worker segment. State, role, pid and credit limit come from
// the control segment, which only the agent can write; what it reads back from a worker segment
// (in flight, heartbeat, statistics, hold) is clamped and used only for metrics, status and
// detection. A worker can corrupt only its own segment, which only the agent and (for a
// foreground's hold) the background workers of its GPU read, and resize nothing.
//
// Invariants (every field is a lock-free, address-free atomic, so the same code works across
// processes):
//  - header.magic/layout_version/slot_count/epoch/gpu_index never change after the agent sealed
//    the control segment; a worker maps one only after checking its seals, size and header, and
//    only the epoch it was told in Registered. A restarted agent creates a new segment (a new
//    epoch); the old one stays mapped by those that had it, and nobody writes it any more.
//  - A slot is owned by the agent while state != kActive and by one worker while kActive.
//  - generation changes whenever the slot changes hands (Allocate and Reclaim both bump it). A
//    worker whose generation no longer matches has been revoked and follows the agent-gone rules
//    (launch_gate.h).
//  - Bit i of header.foreground_slots is set iff slot i is an active foreground slot: a background
//    worker holds its launches while the hold word of any such slot is non-zero, and also while
//    it has not mapped that slot's worker segment of the current generation (a foreground it
//    cannot see pauses it: fail-safe). Allocate sets the bit, Reclaim clears it first.
//  - A worker increments its in_flight only while in_flight < credit_limit (compare and swap),
//    and never takes it below 0. Hold is 0 or 1: the foreground raises it around a sensitive op
//    group with one atomic store, so a worker killed at any instruction leaves it consistent,
//    and Reclaim (clearing the slot's foreground bit) makes it irrelevant.
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

inline constexpr std::uint64_t kGateMagic = 0x3230455441475057;  // "WPGATE02"
inline constexpr std::uint32_t kGateLayoutVersion = 2;
inline constexpr std::uint32_t kMaxSlotsPerGpu = 32;
inline constexpr std::size_t kSensitiveWords = kMaxOpGroups / 64;

enum class SlotState : std::uint32_t { kFree = 0, kActive = 1, kReclaiming = 2 };

struct alignas(64) GateHeader {
  std::uint64_t magic;
  std::uint32_t layout_version;
  std::uint32_t slot_count;
  std::uint64_t epoch;  // changes every time an agent creates the segment
  std::uint32_t gpu_index;
  std::uint32_t reserved;
  alignas(64) std::atomic<std::int64_t> agent_heartbeat_ns;  // CLOCK_MONOTONIC
  // Non-zero: every background slot is paused (the agent is draining or restarting).
  alignas(64) std::atomic<std::uint32_t> background_stop;
  // Bit i: slot i is an active foreground slot whose hold the background workers obey.
  std::atomic<std::uint32_t> foreground_slots;
};

// A slot of the control segment: written by the agent only.
struct alignas(64) GateSlot {
  std::atomic<std::uint32_t> state;  // SlotState
  std::atomic<std::uint32_t> generation;
  std::atomic<std::uint32_t> role;  // Role
  std::atomic<std::int32_t> pid;    // in the agent's pid namespace
  std::atomic<std::int32_t> credit_limit;
  std::atomic<std::uint32_t> pause;  // background slots: set by the agent
  alignas(64) std::atomic<std::uint64_t> sensitive[kSensitiveWords];
};

// The control segment.
struct GateFile {
  GateHeader header;
  GateSlot slots[kMaxSlotsPerGpu];
};

// One worker's segment: written by that worker only.
struct alignas(64) WorkerSegment {
  // The hot line: the worker's launches (the agent polls it).
  std::atomic<std::int32_t> in_flight;
  std::atomic<std::int64_t> heartbeat_ns;  // CLOCK_MONOTONIC
  // Foreground: 1 while it runs a sensitive op group. Its own line: every background launch
  // reads it, and it changes only around sensitive groups.
  alignas(64) std::atomic<std::uint32_t> hold;
  // Statistics, read by the agent for metrics.
  alignas(64) std::atomic<std::uint64_t> acquired_total;
  std::atomic<std::uint64_t> wait_ns_total;    // time spent waiting for a credit
  std::atomic<std::uint64_t> paused_ns_total;  // of which waiting on a pause
};

static_assert(std::atomic<std::int64_t>::is_always_lock_free, "gate atomics must be lock-free");
static_assert(std::atomic<std::uint32_t>::is_always_lock_free, "gate atomics must be lock-free");
static_assert(kMaxSlotsPerGpu <= 32, "foreground_slots has one bit per slot");
static_assert(sizeof(GateHeader) == 3 * 64 && sizeof(GateSlot) == 9 * 64 &&
                  sizeof(WorkerSegment) == 3 * 64,
              "the layout is shared across processes and versions: change kGateLayoutVersion");

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_CLIENT_GATE_LAYOUT_H_
