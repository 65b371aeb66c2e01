#include "wavepool/runtime/executor_factory.h"

#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "staged_executor.h"
#include "tick_tock_executor.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime {
namespace {

struct Parts {
  std::unique_ptr<Communicator> communicator;
  std::unique_ptr<StageEngine> engine;
};

absl::StatusOr<Parts> MakeParts(const ExecutorSetup& setup,
                                const std::shared_ptr<const StageProgram>& program,
                                const std::string& name, bool reduce_gradients) {
  Communicator::Options options;
  options.timeout = setup.timeout;
  options.name = name;
  WAVEPOOL_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> communicator,
                            Communicator::Create(setup.store, setup.rank, program->world_size(),
                                                 program->DistinctSyncGroups(), options));
  StageEngine::Options engine_options;
  engine_options.rank = setup.rank;
  engine_options.seed = static_cast<std::uint64_t>(setup.plan.training.seed);
  engine_options.reduce_gradients = reduce_gradients;
  engine_options.bucket_bytes = setup.bucket_bytes;
  engine_options.compress_weights = setup.plan.data_movement.weight_compression;
  engine_options.device = setup.device;
  engine_options.role = setup.role;
  WAVEPOOL_ASSIGN_OR_RETURN(std::unique_ptr<StageEngine> engine,
                            StageEngine::Create(program, setup.graph, setup.plan.training,
                                                communicator.get(), setup.pacer, engine_options));
  return Parts{std::move(communicator), std::move(engine)};
}

}  // namespace

absl::StatusOr<std::unique_ptr<Executor>> MakeExecutor(const ExecutorSetup& setup) {
  if (setup.rank < 0 || setup.rank >= setup.plan.gpus) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", setup.rank, " is not in [0, ",
                                                   setup.plan.gpus, ") (the plan's GPUs)"));
  }
  WAVEPOOL_ASSIGN_OR_RETURN(StageProgram compiled, StageProgram::Compile(setup.plan, *setup.graph));
  auto program = std::make_shared<const StageProgram>(std::move(compiled));
  const bool tick_tock = setup.plan.strategy == api::Strategy::kTickTock && setup.plan.waves == 2;
  if (!tick_tock) {
    WAVEPOOL_ASSIGN_OR_RETURN(Parts parts, MakeParts(setup, program, "plan", true));
    return std::make_unique<StagedExecutor>(
        std::move(parts.communicator), std::move(parts.engine), setup.pacer,
        StagedExecutor::Data{setup.source, static_cast<std::uint64_t>(setup.plan.training.seed),
                             setup.plan.data_movement.preload});
  }
  if (program->stage_count() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "plan stages: a TickTock plan runs one data-parallel stage, got ", program->stage_count()));
  }
  // The two waves are one task to the node agent: it sees their memory summed.
  auto memory = std::make_unique<SummedMemoryPacers>(setup.pacer, 2);
  std::array<TickTockExecutor::Wave, 2> waves;
  for (int wave = 0; wave < 2; ++wave) {
    ExecutorSetup wave_setup = setup;
    wave_setup.pacer = memory->view(wave);
    WAVEPOOL_ASSIGN_OR_RETURN(Parts parts,
                              MakeParts(wave_setup, program, wave == 0 ? "tick" : "tock", false));
    waves[static_cast<std::size_t>(wave)] = {std::move(parts.communicator),
                                             std::move(parts.engine)};
  }
  return std::make_unique<TickTockExecutor>(
      std::move(memory), std::move(waves), setup.pacer,
      TickTockExecutor::Data{setup.source, static_cast<std::uint64_t>(setup.plan.training.seed),
                             setup.plan.data_movement.preload});
}

}  // namespace wavepool::runtime
