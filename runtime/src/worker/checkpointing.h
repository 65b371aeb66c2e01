// What a worker writes into and restores from its checkpoint (checkpoint.h): every replica's
// tensors and optimizer, the executor's extra state, the CPU generator; and the gang's agreement
// that every rank wrote a step before rank 0 commits it.
#ifndef WAVEPOOL_RUNTIME_SRC_WORKER_CHECKPOINTING_H_
#define WAVEPOOL_RUNTIME_SRC_WORKER_CHECKPOINTING_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "wavepool/base/clock.h"
#include "wavepool/runtime/checkpoint.h"
#include "wavepool/runtime/executor.h"
#include "wavepool/runtime/rendezvous.h"

namespace wavepool::runtime {

// Thread-compatible; one per worker. Borrows the executor, the store and the clock.
class Checkpointing {
 public:
  struct Identity {
    int rank = 0;
    int world_size = 1;
    std::string fingerprint;
    std::map<std::string, std::string> metadata;
  };

  // The agreement reads the store every 5 ms (the other ranks are other processes) on `clock`,
  // which also times `timeout`.
  Checkpointing(CheckpointDirectory directory, Identity identity, Executor* executor,
                StorePtr store, std::chrono::milliseconds timeout, Clock& clock = RealClock());

  // The committed step restored into the executor, or nullopt when there is none (a fresh
  // start). Errors name the file: a corrupt or mismatched checkpoint is never skipped.
  absl::StatusOr<std::optional<std::int64_t>> Restore();

  // Writes this rank's state after `step` completed steps; once every rank has written, rank 0
  // commits and prunes, and every rank returns after the commit. A rank that fails tells the
  // others (they return Aborted naming it) so that nobody waits for it.
  absl::Status Save(std::int64_t step);

  const std::string& path() const { return directory_.path(); }

 private:
  absl::StatusOr<CheckpointFile> Build(std::int64_t step);
  absl::Status Apply(const CheckpointFile& file);
  // Store-based agreement for step `step`: `phase` "written" or "committed".
  absl::Status Agree(std::int64_t step, const std::string& phase, const absl::Status& mine);

  CheckpointDirectory directory_;
  const Identity identity_;
  Executor* const executor_;
  StorePtr store_;
  const std::chrono::milliseconds timeout_;
  Clock& clock_;
};

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_SRC_WORKER_CHECKPOINTING_H_
