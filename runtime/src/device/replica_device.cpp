#include "wavepool/runtime/replica_device.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gpu_parts.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime {
namespace {

absl::StatusOr<torch::Device> CudaDevice(const std::string& name, int index) {
  const int visible =
      torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
  if (visible == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "device '", name, "': LibTorch sees no CUDA device",
        torch::cuda::is_available() ? "" : " (no GPU visible, or a LibTorch built for the CPU)"));
  }
  if (index >= visible) {
    return absl::FailedPreconditionError(absl::StrCat(
        "device '", name, "': only ", visible, " CUDA device", visible == 1 ? "" : "s",
        " visible (cuda:0", visible > 1 ? absl::StrCat("..cuda:", visible - 1) : "", ")"));
  }
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
}

}  // namespace

absl::StatusOr<torch::Device> ParseDevice(std::string_view name) {
  if (name == "cpu") return torch::Device(torch::kCPU);
  if (name == "auto") {
    if (torch::cuda::is_available() && torch::cuda::device_count() > 0) {
      return torch::Device(torch::kCUDA, 0);
    }
    return torch::Device(torch::kCPU);
  }
  if (name == "cuda") return CudaDevice(std::string(name), 0);
  constexpr std::string_view kCudaPrefix = "cuda:";
  int index = -1;
  if (name.substr(0, kCudaPrefix.size()) == kCudaPrefix) {
    const std::string_view digits = name.substr(kCudaPrefix.size());
    const bool all_digits = !digits.empty() && digits.size() <= 4 &&
                            std::all_of(digits.begin(), digits.end(), [](char c) {
                              return std::isdigit(static_cast<unsigned char>(c));
                            });
    if (all_digits && absl::SimpleAtoi(std::string(digits), &index)) {
      return CudaDevice(std::string(name), index);
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("device '", std::string(name), "' is not cpu, cuda, cuda:N or auto"));
}

absl::StatusOr<std::unique_ptr<ReplicaDevice>> ReplicaDevice::Create(torch::Device device,
                                                                     agent::Role role,
                                                                     LaunchPacer* pacer) {
  if (device.is_cuda() && !device.has_index()) device.set_index(0);
  std::unique_ptr<ReplicaDevice> replica(new ReplicaDevice(device, pacer));
  if (device.is_cpu()) return replica;
  if (!device.is_cuda()) {
    return absl::InvalidArgumentError(
        absl::StrCat("device ", device.str(), ": the runtime trains on the CPU or CUDA"));
  }
#if WAVEPOOL_TORCH_CUDA
  WAVEPOOL_ASSIGN_OR_RETURN(Gpu gpu, internal::MakeGpu(device, role, *pacer));
  replica->pacer_ = gpu.pacer.get();
  replica->gpu_ = std::move(gpu);
  return replica;
#else
  (void)role;
  return absl::FailedPreconditionError(
      absl::StrCat("device ", device.str(), ": this build's LibTorch has no CUDA"));
#endif
}

ReplicaDevice::~ReplicaDevice() = default;

absl::Status ReplicaDevice::Synchronize() {
  if (!gpu_.has_value()) return absl::OkStatus();
  WAVEPOOL_RETURN_IF_ERROR(gpu_->drain());
  try {
    gpu_->stream.synchronize();
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("synchronising ", device_.str(), ": ", e.what()));
  }
  return absl::OkStatus();
}

}  // namespace wavepool::runtime
