// The check and apply halves of each training-state section (checkpoint_state.h), so that
// LoadTrainingState can check every section before it applies any.
#ifndef WAVEPOOL_RUNTIME_SRC_CHECKPOINT_STATE_SECTIONS_H_
#define WAVEPOOL_RUNTIME_SRC_CHECKPOINT_STATE_SECTIONS_H_

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "byte_codec.h"
#include "wavepool/runtime/checkpoint_state.h"

namespace wavepool::runtime::checkpoint_internal {

// A tensor's dtype and shape, as stored: u8 dtype code, u32 rank, i64 dims.
struct TensorSignature {
  torch::ScalarType dtype = torch::kFloat;
  std::vector<std::int64_t> shape;

  bool operator==(const TensorSignature& other) const {
    return dtype == other.dtype && shape == other.shape;
  }
  bool operator!=(const TensorSignature& other) const { return !(*this == other); }
};

// "[4, 3] float32".
std::string Describe(const TensorSignature& signature);
// InvalidArgument naming `name` for an undefined or non-strided tensor or an unsupported dtype.
absl::StatusOr<TensorSignature> SignatureOf(std::string_view name, const torch::Tensor& tensor);
void WriteSignature(ByteWriter& writer, const TensorSignature& signature);
// Fails the reader (DataLoss) on an unknown dtype code, a rank over 64 or a negative dim.
TensorSignature ReadSignature(ByteReader& reader);
// Element count times element size; fails the reader when it overflows.
std::uint64_t ByteSize(const TensorSignature& signature, ByteReader& reader);

// One tensor of a parsed model section; `bytes` views the section.
struct TensorRecord {
  std::string name;
  TensorSignature signature;
  std::string_view bytes;
};

absl::StatusOr<std::vector<TensorRecord>> ParseTensors(std::string_view section);
// FailedPrecondition naming the first tensor whose name, shape or dtype differs.
absl::Status CheckTensors(const std::vector<TensorRecord>& records, const NamedTensors& targets);
// REQUIRES: CheckTensors(records, targets) is OK.
absl::Status ApplyTensors(const std::vector<TensorRecord>& records, const NamedTensors& targets);

// An optimizer section whose kind and parameter groups match the optimizer, with its archive
// already parsed.
struct CheckedOptimizer {
  std::unique_ptr<torch::serialize::InputArchive> archive;
};
absl::StatusOr<CheckedOptimizer> CheckOptimizer(std::string_view section,
                                                const torch::optim::Optimizer& optimizer);
absl::Status ApplyOptimizer(CheckedOptimizer& checked, torch::optim::Optimizer& optimizer);

absl::Status CheckCpuGenerator(std::string_view section);
// REQUIRES: CheckCpuGenerator(section) is OK.
absl::Status ApplyCpuGenerator(std::string_view section);

// The message of anything LibTorch throws, without its C++ backtrace.
std::string TorchErrorMessage(const std::exception& error);

}  // namespace wavepool::runtime::checkpoint_internal

#endif  // WAVEPOOL_RUNTIME_SRC_CHECKPOINT_STATE_SECTIONS_H_
