// Training state in and out of checkpoint files: the public face of the three sections
// (tensor_section.cpp, optimizer_section.cpp, generator_section.cpp), checked before applied.
#include "wavepool/runtime/checkpoint_state.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "state_sections.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime {
namespace {

using checkpoint_internal::CheckedOptimizer;
using checkpoint_internal::TensorRecord;

// "checkpoint <source>, section 'model': <message>", keeping the code.
absl::Status InSection(const CheckpointFile& file, std::string_view section,
                       const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(
      status.code(),
      absl::StrCat("checkpoint ", file.source.empty() ? "(in memory)" : file.source, ", section '",
                   checkpoint_internal::View(section), "': ", status.message()));
}

// A section of `file` checked against its target, ready to apply.
struct CheckedState {
  std::vector<TensorRecord> tensors;
  std::optional<CheckedOptimizer> optimizer;
  std::string_view cpu_generator;
};

absl::StatusOr<CheckedState> CheckAll(const CheckpointFile& file, const TrainingState& state) {
  CheckedState checked;
  WAVEPOOL_ASSIGN_OR_RETURN(std::string_view model, file.Section(kModelSection));
  absl::StatusOr<std::vector<TensorRecord>> records = checkpoint_internal::ParseTensors(model);
  if (!records.ok()) return InSection(file, kModelSection, records.status());
  absl::Status status = checkpoint_internal::CheckTensors(*records, state.tensors);
  if (!status.ok()) return InSection(file, kModelSection, status);
  checked.tensors = *std::move(records);
  if (state.optimizer != nullptr) {
    WAVEPOOL_ASSIGN_OR_RETURN(std::string_view section, file.Section(kOptimizerSection));
    absl::StatusOr<CheckedOptimizer> optimizer =
        checkpoint_internal::CheckOptimizer(section, *state.optimizer);
    if (!optimizer.ok()) return InSection(file, kOptimizerSection, optimizer.status());
    checked.optimizer = *std::move(optimizer);
  }
  if (state.cpu_generator) {
    WAVEPOOL_ASSIGN_OR_RETURN(std::string_view section, file.Section(kCpuGeneratorSection));
    status = checkpoint_internal::CheckCpuGenerator(section);
    if (!status.ok()) return InSection(file, kCpuGeneratorSection, status);
    checked.cpu_generator = section;
  }
  return checked;
}

}  // namespace

NamedTensors ModuleTensors(const torch::nn::Module& module) {
  NamedTensors tensors;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    tensors.emplace_back(item.key(), item.value());
  }
  for (const auto& item : module.named_buffers(/*recurse=*/true)) {
    tensors.emplace_back(item.key(), item.value());
  }
  return tensors;
}

absl::Status RestoreTensors(std::string_view section, const NamedTensors& targets) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<TensorRecord> records,
                            checkpoint_internal::ParseTensors(section));
  WAVEPOOL_RETURN_IF_ERROR(checkpoint_internal::CheckTensors(records, targets));
  return checkpoint_internal::ApplyTensors(records, targets);
}

absl::StatusOr<NamedTensors> DecodeTensors(std::string_view section) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<TensorRecord> records,
                            checkpoint_internal::ParseTensors(section));
  NamedTensors tensors;
  for (const TensorRecord& record : records) {
    torch::Tensor tensor =
        torch::empty(record.signature.shape, torch::dtype(record.signature.dtype));
    tensors.emplace_back(record.name, tensor);
  }
  WAVEPOOL_RETURN_IF_ERROR(checkpoint_internal::ApplyTensors(records, tensors));
  return tensors;
}

absl::Status RestoreOptimizer(std::string_view section, torch::optim::Optimizer& optimizer) {
  WAVEPOOL_ASSIGN_OR_RETURN(CheckedOptimizer checked,
                            checkpoint_internal::CheckOptimizer(section, optimizer));
  return checkpoint_internal::ApplyOptimizer(checked, optimizer);
}

absl::Status RestoreCpuGenerator(std::string_view section) {
  WAVEPOOL_RETURN_IF_ERROR(checkpoint_internal::CheckCpuGenerator(section));
  return checkpoint_internal::ApplyCpuGenerator(section);
}

absl::Status SaveTrainingState(const TrainingState& state, CheckpointFile& file) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::string model, EncodeTensors(state.tensors));
  file.sections[std::string(kModelSection)] = std::move(model);
  if (state.optimizer != nullptr) {
    WAVEPOOL_ASSIGN_OR_RETURN(std::string optimizer, EncodeOptimizer(*state.optimizer));
    file.sections[std::string(kOptimizerSection)] = std::move(optimizer);
  }
  if (state.cpu_generator) {
    WAVEPOOL_ASSIGN_OR_RETURN(std::string generator, EncodeCpuGenerator());
    file.sections[std::string(kCpuGeneratorSection)] = std::move(generator);
  }
  return absl::OkStatus();
}

absl::Status LoadTrainingState(const CheckpointFile& file, const TrainingState& state) {
  WAVEPOOL_ASSIGN_OR_RETURN(CheckedState checked, CheckAll(file, state));
  // The optimizer first: it is the one apply that can still fail.
  if (checked.optimizer.has_value()) {
    absl::Status status = checkpoint_internal::ApplyOptimizer(*checked.optimizer, *state.optimizer);
    if (!status.ok()) return InSection(file, kOptimizerSection, status);
  }
  absl::Status status = checkpoint_internal::ApplyTensors(checked.tensors, state.tensors);
  if (!status.ok()) return InSection(file, kModelSection, status);
  if (state.cpu_generator) {
    status = checkpoint_internal::ApplyCpuGenerator(checked.cpu_generator);
    if (!status.ok()) return InSection(file, kCpuGeneratorSection, status);
  }
  return absl::OkStatus();
}

}  // namespace wavepool::runtime
