// The fingerprint a checkpoint carries of the model and plan it was written for, so that a job
// resumes only from state that fits what it now runs (checkpoint.h, Read).
//
// It covers what decides which tensors a rank holds and how they evolve: the model graph (its
// layer table, without measured times) and the plan's execution fields: strategy, global batch,
// GPUs, waves, wave placement, each stage's layers, ranks and per-GPU batch, each sync group's
// stage and ranks, and the optimizer (its state's layout). It leaves out what may change without
// invalidating the state: predictions, the job name, training.steps (so a job can be extended),
// the learning rate, seed and checkpoint intervals, the device, the collective algorithms and the
// data-movement switches.
#ifndef WAVEPOOL_RUNTIME_CHECKPOINT_FINGERPRINT_H_
#define WAVEPOOL_RUNTIME_CHECKPOINT_FINGERPRINT_H_

#include <string>

#include "absl/status/statusor.h"
#include "wavepool/api/plan.h"
#include "wavepool/planner/model.h"

namespace wavepool::runtime {

// The canonical text the fingerprint hashes: a version line, then one line per plan field and
// the layer table. Stable across builds for equal inputs; exposed for tests and debugging.
std::string CheckpointFingerprintText(const planner::ModelGraph& model, const api::Plan& plan);

// SHA-256 of CheckpointFingerprintText, as 64 lowercase hex digits. Internal only if OpenSSL
// fails (out of memory).
absl::StatusOr<std::string> CheckpointFingerprint(const planner::ModelGraph& model,
                                                  const api::Plan& plan);

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_CHECKPOINT_FINGERPRINT_H_
