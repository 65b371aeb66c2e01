// Launch pacing and stream priorities (deeppool-burst-parallel §5): how many launch groups each
// task may have queued on its GPU, and which stream priority it uses.
//
// DeepPool's runtime let a foreground task keep 2 groups in flight and a background task 1 while a
// foreground shares the GPU (4 when alone); the foreground runs on high-priority streams, the
// background on low-priority ones. Those are the defaults here; a job may ask for its own limits.
#ifndef WAVEPOOL_AGENT_LAUNCH_POLICY_H_
#define WAVEPOOL_AGENT_LAUNCH_POLICY_H_

#include <cstdint>

#include "absl/status/status.h"
#include "wavepool/agent/client/protocol.h"

namespace wavepool::agent {

inline constexpr std::uint32_t kMaxCreditLimit = 64;

struct PacingConfig {
  std::uint32_t foreground_credits = 2;
  std::uint32_t background_credits = 1;        // while a foreground task shares the GPU
  std::uint32_t background_alone_credits = 4;  // while none does
};

// InvalidArgument naming the field unless every limit is in [1, kMaxCreditLimit].
absl::Status Validate(const PacingConfig& config);

// A task's credit limit: what it asked for (clamped to the limits) or its role's default; a
// background task's request is also capped by the shared-GPU default while a foreground is there.
std::uint32_t CreditLimit(const PacingConfig& config, Role role, std::uint32_t requested,
                          bool foreground_present);

// Foreground: high-priority streams; background: low-priority ones.
StreamPriority StreamPriorityFor(Role role);

// The CUDA MPS client priority (CUDA_MPS_CLIENT_PRIORITY): 0 normal, 1 below normal.
std::uint32_t MpsClientPriority(Role role);

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_LAUNCH_POLICY_H_
