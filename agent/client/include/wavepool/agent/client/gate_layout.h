// The launch gate's shared-memory layout: one file per GPU in the agent's host directory
// (`<dir>/gpu-<index>.gate`), mapped read-write by the agent and by every worker on that GPU.
// The agent creates it; workers find their slot through Register (protocol.h).
//
// Invariants (the hot path relies on them; every field is a lock-free, address-free atomic, so
// the same code works across processes):
//  - header.magic/layout_version/slot_count never change after the agent initialised the file;
//    a worker maps a file only after checking them, and only the epoch it was told in Registered.
//  - A slot is owned by the agent while state != kActive and by one worker (its pid) while
//    kActive; the worker writes only in_flight, pause (foreground), heartbeat_ns and its stats.
//  - 0 <= in_flight; a worker increments it only while in_flight < credit_limit (compare and
//    swap), so in_flight <= credit_limit unless the agent lowered the limit, after which it only
//    falls. Reclaiming a dead worker's slot sets in_flight to 0.
//  - header.foreground_hold == the number of active foreground slots whose pause is 1 (a
//    foreground worker raises its pause while it runs a sensitive op group; background workers
//    wait while the hold is non-zero). Reclaim lowers a dead worker's raised pause.
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
  alignas(64) std::atomic<std::uint32_t> foreground_hold;
  // Non-zero: every background slot is paused (the agent is draining or restarting).
  std::atomic<std::uint32_t> background_stop;
};

struct alignas(64) GateSlot {
  // Written by the agent.
  std::atomic<std::uint32_t> state;  // SlotState
  std::atomic<std::uint32_t> generation;
  std::atomic<std::uint32_t> role;  // Role
  std::atomic<std::int32_t> pid;
  std::atomic<std::int32_t> credit_limit;
  // Written by the worker on the hot path (own cache line: the agent polls, workers write).
  alignas(64) std::atomic<std::int32_t> in_flight;
  std::atomic<std::uint32_t> pause;  // foreground: raised; background: set by the agent
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

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_CLIENT_GATE_LAYOUT_H_
