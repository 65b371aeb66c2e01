// The CPU generator section: the bytes of Generator::get_state() (mt19937's state and the cached
// normal samples), whose size LibTorch fixes per version.
#include <ATen/CPUGeneratorImpl.h>

#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "state_sections.h"

namespace wavepool::runtime::checkpoint_internal {
namespace {

// REQUIRES: the generator's mutex is held.
torch::Tensor StateOf(at::Generator& generator) { return generator.get_state().contiguous(); }

}  // namespace

absl::Status CheckCpuGenerator(std::string_view section) {
  try {
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    const std::size_t expected = StateOf(generator).nbytes();
    if (section.size() != expected) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the CPU generator state holds ", section.size(), " bytes in the checkpoint, but ",
          "this LibTorch's state is ", expected, " bytes"));
    }
  } catch (const std::exception& error) {
    return absl::InternalError(absl::StrCat("CPU generator: ", TorchErrorMessage(error)));
  }
  return absl::OkStatus();
}

absl::Status ApplyCpuGenerator(std::string_view section) {
  try {
    torch::Tensor state = torch::empty({static_cast<std::int64_t>(section.size())}, torch::kByte);
    std::memcpy(state.data_ptr(), section.data(), section.size());
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(state);
  } catch (const std::exception& error) {
    return absl::FailedPreconditionError(
        absl::StrCat("restore the CPU generator state: ", TorchErrorMessage(error)));
  }
  return absl::OkStatus();
}

}  // namespace wavepool::runtime::checkpoint_internal

namespace wavepool::runtime {

absl::StatusOr<std::string> EncodeCpuGenerator() {
  try {
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(generator.mutex());
    const torch::Tensor state = checkpoint_internal::StateOf(generator);
    return std::string(static_cast<const char*>(state.data_ptr()), state.nbytes());
  } catch (const std::exception& error) {
    return absl::InternalError(
        absl::StrCat("CPU generator: ", checkpoint_internal::TorchErrorMessage(error)));
  }
}

}  // namespace wavepool::runtime
