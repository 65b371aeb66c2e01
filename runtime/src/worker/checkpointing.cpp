#include "checkpointing.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/runtime/checkpoint_state.h"

namespace wavepool::runtime {
namespace {

constexpr std::string_view kExtraSection = "executor";

std::string ModelSection(const Replica& replica) { return replica.name + ".model"; }
std::string OptimizerSection(const Replica& replica) { return replica.name + ".optimizer"; }

NamedTensors ReplicaTensors(const Replica& replica) {
  NamedTensors tensors = replica.model->NamedParameters();
  for (auto& buffer : replica.model->NamedBuffers()) tensors.push_back(buffer);
  return tensors;
}

std::vector<std::uint8_t> Bytes(std::string_view text) { return {text.begin(), text.end()}; }

}  // namespace

Checkpointing::Checkpointing(CheckpointDirectory directory, Identity identity, Executor* executor,
                             StorePtr store, std::chrono::milliseconds timeout, Clock& clock)
    : directory_(std::move(directory)),
      identity_(std::move(identity)),
      executor_(executor),
      store_(std::move(store)),
      timeout_(timeout),
      clock_(clock) {}

absl::StatusOr<CheckpointFile> Checkpointing::Build(std::int64_t step) {
  CheckpointFile file;
  file.step = step;
  file.data_position = step;  // the sample order is a function of the step (batch_loader.h)
  file.rank = identity_.rank;
  file.world_size = identity_.world_size;
  file.fingerprint = identity_.fingerprint;
  file.metadata = identity_.metadata;
  for (const Replica& replica : executor_->Replicas()) {
    WAVEPOOL_ASSIGN_OR_RETURN(std::string tensors, EncodeTensors(ReplicaTensors(replica)));
    file.sections[ModelSection(replica)] = std::move(tensors);
    WAVEPOOL_ASSIGN_OR_RETURN(std::string optimizer, EncodeOptimizer(*replica.optimizer));
    file.sections[OptimizerSection(replica)] = std::move(optimizer);
  }
  WAVEPOOL_ASSIGN_OR_RETURN(std::string extra, EncodeTensors(executor_->ExtraState()));
  file.sections[std::string(kExtraSection)] = std::move(extra);
  WAVEPOOL_ASSIGN_OR_RETURN(std::string generator, EncodeCpuGenerator());
  file.sections[std::string(kCpuGeneratorSection)] = std::move(generator);
  return file;
}

absl::Status Checkpointing::Apply(const CheckpointFile& file) {
  for (const Replica& replica : executor_->Replicas()) {
    WAVEPOOL_ASSIGN_OR_RETURN(std::string_view tensors, file.Section(ModelSection(replica)));
    if (absl::Status s = RestoreTensors(tensors, ReplicaTensors(replica)); !s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat(file.source, ": ", ModelSection(replica), ": ", s.message()));
    }
    WAVEPOOL_ASSIGN_OR_RETURN(std::string_view optimizer, file.Section(OptimizerSection(replica)));
    if (absl::Status s = RestoreOptimizer(optimizer, *replica.optimizer); !s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat(file.source, ": ", OptimizerSection(replica), ": ", s.message()));
    }
  }
  WAVEPOOL_ASSIGN_OR_RETURN(std::string_view extra, file.Section(kExtraSection));
  WAVEPOOL_ASSIGN_OR_RETURN(NamedTensors state, DecodeTensors(extra));
  if (absl::Status s = executor_->LoadExtraState(file.step, state); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(file.source, ": ", s.message()));
  }
  WAVEPOOL_ASSIGN_OR_RETURN(std::string_view generator, file.Section(kCpuGeneratorSection));
  return RestoreCpuGenerator(generator);
}

absl::StatusOr<std::optional<std::int64_t>> Checkpointing::Restore() {
  absl::StatusOr<std::int64_t> latest = directory_.Latest();
  if (absl::IsNotFound(latest.status())) return std::nullopt;
  if (!latest.ok()) return latest.status();
  CheckpointExpectations expected;
  expected.fingerprint = identity_.fingerprint;
  expected.rank = identity_.rank;
  expected.world_size = identity_.world_size;
  WAVEPOOL_ASSIGN_OR_RETURN(CheckpointFile file, directory_.Read(*latest, expected));
  WAVEPOOL_RETURN_IF_ERROR(Apply(file));
  return file.step;
}

absl::Status Checkpointing::Agree(std::int64_t step, const std::string& phase,
                                  const absl::Status& mine) {
  const std::string prefix = absl::StrCat("checkpoint/", step, "/", phase);
  try {
    if (!mine.ok()) {
      store_->set(prefix + "/failed",
                  Bytes(absl::StrCat("rank ", identity_.rank, ": ", mine.message())));
      return mine;
    }
    store_->add(prefix, 1);
    const MonotonicTime deadline = clock_.Now() + timeout_;
    while (store_->add(prefix, 0) < identity_.world_size) {
      if (store_->check({prefix + "/failed"})) {
        const std::vector<std::uint8_t> why = store_->get(prefix + "/failed");
        return absl::AbortedError(absl::StrCat("checkpoint of step ", step, " failed on ",
                                               std::string(why.begin(), why.end())));
      }
      if (clock_.Now() > deadline) {
        return absl::DeadlineExceededError(
            absl::StrFormat("checkpoint of step %d: not every rank %s it within %g s", step, phase,
                            static_cast<double>(timeout_.count()) / 1000.0));
      }
      clock_.SleepFor(std::chrono::milliseconds(5));
    }
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("checkpoint of step ", step, ": ", e.what()));
  }
  return absl::OkStatus();
}

absl::Status Checkpointing::Save(std::int64_t step) {
  absl::StatusOr<CheckpointFile> file = Build(step);
  absl::Status written = file.ok() ? directory_.Write(*file) : file.status();
  if (identity_.world_size == 1) {
    WAVEPOOL_RETURN_IF_ERROR(written);
  } else {
    WAVEPOOL_RETURN_IF_ERROR(Agree(step, "wrote", written));
  }
  absl::Status committed;
  if (identity_.rank == 0) {
    committed = directory_.Commit(step, identity_.world_size);
    // A failed prune only leaves disk space unclaimed (checkpoint.h).
    if (committed.ok()) (void)directory_.Prune();
  }
  if (identity_.world_size == 1) return committed;
  return Agree(step, "committed", committed);
}

}  // namespace wavepool::runtime
