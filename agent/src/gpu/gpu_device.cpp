#include "wavepool/agent/gpu_device.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"

namespace wavepool::agent {

bool Measures(const GpuInfo& gpu, std::string_view field) {
  return std::none_of(gpu.limitations.begin(), gpu.limitations.end(), [&](const std::string& l) {
    return l.size() > field.size() + 1 && l.compare(0, field.size(), field) == 0 &&
           l[field.size()] == ':';
  });
}

namespace {

class NoGpuDevices final : public GpuDevices {
 public:
  explicit NoGpuDevices(std::string reason) : reason_(std::move(reason)) {}
  const std::vector<GpuInfo>& gpus() const override { return gpus_; }
  absl::StatusOr<GpuSample> Sample(GpuIndex index) override {
    return absl::NotFoundError(absl::StrCat("GPU ", index, ": ", reason_));
  }
  std::string Describe() const override { return reason_; }

 private:
  const std::string reason_;
  const std::vector<GpuInfo> gpus_;
};

}  // namespace

GpuDevicesPtr MakeNoGpuDevices(std::string reason) {
  return std::make_unique<NoGpuDevices>(std::move(reason));
}

}  // namespace wavepool::agent
