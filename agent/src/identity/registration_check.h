// The agent's checks of a Register request against who the peer is (peer_identity.h): every
// string valid (worker_strings.h), then role, namespace, job and pod equal to the resolved
// identity, the GPU one assigned to the pod, and at most one slot per assigned GPU. Pure
// functions over their arguments, except that Resolve may block on the identity source.
#ifndef WAVEPOOL_AGENT_SRC_IDENTITY_REGISTRATION_CHECK_H_
#define WAVEPOOL_AGENT_SRC_IDENTITY_REGISTRATION_CHECK_H_

#include <cstddef>
#include <optional>

#include "absl/status/statusor.h"
#include "wavepool/agent/client/protocol.h"
#include "wavepool/agent/gpu_device.h"
#include "wavepool/agent/peer_identity.h"
#include "wavepool/agent/socket_server.h"

namespace wavepool::agent::internal {

// The identity `request` may register under: nullopt when `identity` is null (the agent trusts
// Register: AgentOptions::trust_register). InvalidArgument naming the field for an invalid
// string; PermissionDenied naming the field for a request that is not the peer's identity, or
// the source's error (NotFound: an unknown process) as PermissionDenied with its message.
absl::StatusOr<std::optional<WorkerIdentity>> CheckRegister(PeerIdentity* identity,
                                                            const PeerCredentials& peer,
                                                            const RegisterRequest& request);

// The pod's slots: `held_total` slots on this agent, `holds_gpu` whether one is on `gpu`.
// PermissionDenied naming Register.gpu_index when `gpu` is not assigned to the pod, or the pod
// holds a slot of every GPU it was assigned already (one per GPU).
absl::Status CheckPodSlots(const WorkerIdentity& identity, const GpuInfo& gpu,
                           std::size_t held_total, bool holds_gpu);

}  // namespace wavepool::agent::internal

#endif  // WAVEPOOL_AGENT_SRC_IDENTITY_REGISTRATION_CHECK_H_
