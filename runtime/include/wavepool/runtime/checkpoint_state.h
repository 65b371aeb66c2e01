// Training state as checkpoint sections (checkpoint_file.h) and back: a model's named tensors,
// a torch::optim::Optimizer's state and the default CPU generator's state. docs/runtime.md
// ("Checkpoints") has the sections' byte layouts.
//
// Restoring is check-then-apply: a section is parsed and checked against its target completely
// (every name, shape and dtype; the optimizer's kind and parameter groups; the generator state's
// size) before anything is written, so a mismatch leaves the target untouched.
// LoadTrainingState extends this to all sections of a file. Restored training continues
// bit-exactly: parameters, buffers and optimizer state are copied byte for byte.
//
// Thread safety: the functions are safe to call concurrently on different targets; a target
// must not be used by another thread while it is saved or restored. The generator functions lock
// the generator's own mutex. Everything LibTorch throws is caught and returned as a Status.
#ifndef WAVEPOOL_RUNTIME_CHECKPOINT_STATE_H_
#define WAVEPOOL_RUNTIME_CHECKPOINT_STATE_H_

#include <torch/torch.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/runtime/checkpoint_file.h"

namespace wavepool::runtime {

// Tensors by name, e.g. ExecutableModel::NamedParameters() followed by NamedBuffers(). The
// tensors are shared handles: restoring writes into the caller's tensors.
using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

inline constexpr std::string_view kModelSection = "model";
inline constexpr std::string_view kOptimizerSection = "optimizer";
inline constexpr std::string_view kCpuGeneratorSection = "rng.cpu";

// The parameters, then the buffers, of `module` and its submodules, by dotted name
// ("0.weight", "bn.running_mean").
NamedTensors ModuleTensors(const torch::nn::Module& module);

// --- One section ------------------------------------------------------------------------------
// Errors here do not name a file; LoadTrainingState adds it.

// The tensors' names, dtypes, shapes and bytes (copied to the CPU, contiguous). InvalidArgument
// naming the tensor for a duplicate name, an undefined or non-strided tensor, or a dtype other
// than bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64.
absl::StatusOr<std::string> EncodeTensors(const NamedTensors& tensors);

// Copies the section's tensors into `targets`, in place (on whatever device they live), without
// recording autograd history. The names must match exactly, and each tensor's shape and dtype:
// FailedPrecondition naming the tensor, e.g.
//   "tensor 'fc1.weight' has shape [4, 3] float32 in the checkpoint, [5, 3] float32 in the model"
// or the missing or extra name. DataLoss when the section itself is malformed.
absl::Status RestoreTensors(std::string_view section, const NamedTensors& targets);
// The section's tensors as new CPU tensors, in the order they were saved (state whose shape the
// reader cannot know in advance). DataLoss when the section is malformed.
absl::StatusOr<NamedTensors> DecodeTensors(std::string_view section);

// The optimizer's kind, its parameter groups' shapes and dtypes, and its state (LibTorch's
// OutputArchive: momentum buffers, Adam moments and step counts). Parameter-group options (the
// learning rate) are the optimizer's own and are not restored, as in LibTorch's load.
absl::StatusOr<std::string> EncodeOptimizer(const torch::optim::Optimizer& optimizer);

// Restores the state saved by EncodeOptimizer into `optimizer`, whose parameters are matched to
// the saved ones by position. FailedPrecondition naming what differs when the optimizer is of
// another kind ("torch::optim::Adam in the checkpoint, torch::optim::SGD here") or its
// parameter groups differ in count, size, shape or dtype; DataLoss for a malformed section or
// archive. State tensors go to the device of the optimizer's first parameter.
// REQUIRES: `optimizer`'s parameters are the restored model's (restore the tensors first or
// after: the state is keyed by parameter identity, not value).
absl::Status RestoreOptimizer(std::string_view section, torch::optim::Optimizer& optimizer);

// The default CPU generator's state (what torch::randn and dropout on the CPU draw from).
absl::StatusOr<std::string> EncodeCpuGenerator();
// Sets the default CPU generator's state; FailedPrecondition when the section's size is not this
// LibTorch's state size.
absl::Status RestoreCpuGenerator(std::string_view section);

// --- A whole file -----------------------------------------------------------------------------

// What a rank checkpoints. Borrows the optimizer, which must outlive the calls.
struct TrainingState {
  NamedTensors tensors;                          // section kModelSection
  torch::optim::Optimizer* optimizer = nullptr;  // kOptimizerSection; null: none
  bool cpu_generator = true;                     // kCpuGeneratorSection
};

// Adds (or replaces) the sections of `state` in `file`. Errors as the Encode functions.
absl::Status SaveTrainingState(const TrainingState& state, CheckpointFile& file);

// Checks every section of `state` against `file` first (each must be present: FailedPrecondition
// naming the missing one), then applies them all, the optimizer first. Messages name file.source
// and the section. If LibTorch rejects the optimizer's archive after those checks passed (it has
// no dry run), the optimizer's state is unspecified, nothing else was applied, and the error
// says so.
absl::Status LoadTrainingState(const CheckpointFile& file, const TrainingState& state);

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_CHECKPOINT_STATE_H_
