// The conditions a node agent sets on its GPUNode that other components act on: the
// BackgroundCheating condition, which the controller reads to preempt a background job whose
// worker uses the GPU beyond what its launch gate allows.
#ifndef WAVEPOOL_API_GPU_NODE_CONDITIONS_H_
#define WAVEPOOL_API_GPU_NODE_CONDITIONS_H_

#include <string>
#include <vector>

#include "wavepool/api/gpu_node.h"

namespace wavepool::api {

// True while the agent's cheat detector flags a background task (it uses the GPU while its
// launch gate holds it paused or grants it no credit), with reason kReasonLaunchesOutsideGate
// and a message naming each such pod as "<namespace>/<pod> (GPU <i>): <why>", joined by "; ";
// False with kReasonNoCheating otherwise. Written only by the node's agent.
inline constexpr char kGpuNodeBackgroundCheating[] = "BackgroundCheating";
inline constexpr char kReasonLaunchesOutsideGate[] = "LaunchesOutsideGate";
inline constexpr char kReasonNoCheating[] = "NoneDetected";

// The pods the BackgroundCheating condition of `status` names ("<namespace>/<pod>"), in order;
// empty when the condition is absent or not True. Entries that do not have the form above are
// skipped.
std::vector<std::string> CheatingPods(const GpuNodeStatus& status);

}  // namespace wavepool::api

#endif  // WAVEPOOL_API_GPU_NODE_CONDITIONS_H_
