#include "wavepool/planner/device.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "wavepool/planner/names.h"

namespace wavepool::planner {
namespace {

constexpr double kGB = 1e9;
constexpr Bytes kGiB = Bytes{1} << 30;

// Datasheet figures (SXM parts, dense tensor throughput, per-direction link bandwidth).
std::vector<DeviceSpec> BuildCatalog() {
  std::vector<DeviceSpec> catalog;
  // Tesla V100-SXM2-32GB: 80 SMs, 15.7 TFLOP/s FP32, 125 FP16 tensor, no TF32, 900 GB/s HBM2,
  // NVLink 2.0 6 x 25 GB/s per direction, 100 Gb/s EDR InfiniBand per GPU, PCIe 3.0 x16.
  catalog.push_back({"v100", "NVIDIA Tesla V100-SXM2-32GB", 80, 15.7e12, 125e12, 0, 900 * kGB,
                     32 * kGiB, 150 * kGB, 8, 12.5 * kGB, 16 * kGB, Microseconds(4)});
  // A100-SXM4-40GB: 108 SMs, 19.5 TFLOP/s FP32, 312 FP16 tensor, 156 TF32 tensor, 1555 GB/s HBM2,
  // NVLink 3 through NVSwitch 300 GB/s per direction, 200 Gb/s HDR InfiniBand per GPU, PCIe 4.0.
  catalog.push_back({"a100-40gb", "NVIDIA A100-SXM4-40GB", 108, 19.5e12, 312e12, 156e12, 1555 * kGB,
                     40 * kGiB, 300 * kGB, 8, 25 * kGB, 32 * kGB, Microseconds(4)});
  // H100-SXM5-80GB: 132 SMs, 67 TFLOP/s FP32, 989 BF16 tensor, 494.7 TF32 tensor (the datasheet's
  // 989 is with sparsity), 3.35 TB/s HBM3, NVLink 4 through NVSwitch 450 GB/s per direction,
  // 400 Gb/s NDR InfiniBand per GPU, PCIe 5.0 x16.
  catalog.push_back({"h100", "NVIDIA H100-SXM5-80GB", 132, 67e12, 989e12, 494.7e12, 3350 * kGB,
                     80 * kGiB, 450 * kGB, 8, 50 * kGB, 64 * kGB, Microseconds(3)});
  // H200-SXM-141GB: the H100's compute with 4.8 TB/s HBM3e and 141 GB.
  catalog.push_back({"h200", "NVIDIA H200-SXM-141GB", 132, 67e12, 989e12, 494.7e12, 4800 * kGB,
                     Bytes{141} * 1000 * 1000 * 1000, 450 * kGB, 8, 50 * kGB, 64 * kGB,
                     Microseconds(3)});
  return catalog;
}

constexpr std::pair<std::string_view, std::string_view> kAliases[] = {
    {"v100-sxm2", "v100"}, {"v100-32gb", "v100"}, {"a100", "a100-40gb"}, {"a100-sxm4", "a100-40gb"},
    {"h100-sxm", "h100"},  {"h100-80gb", "h100"}, {"h200-sxm", "h200"},  {"h200-141gb", "h200"},
};

}  // namespace

const std::vector<DeviceSpec>& DeviceCatalog() {
  static const std::vector<DeviceSpec>* const catalog = new std::vector<DeviceSpec>(BuildCatalog());
  return *catalog;
}

absl::StatusOr<DeviceSpec> FindDevice(std::string_view name) {
  std::string_view key = name;
  for (const auto& [alias, canonical] : kAliases) {
    if (SameName(key, alias)) key = canonical;
  }
  std::vector<std::string> known, spellings;
  for (const DeviceSpec& device : DeviceCatalog()) {
    if (SameName(device.name, key)) return device;
    known.push_back(device.name);
    spellings.push_back(device.name);
  }
  for (const auto& [alias, canonical] : kAliases) spellings.emplace_back(alias);
  return absl::NotFoundError(absl::StrCat("unknown device \"", std::string(name),
                                          "\"; known devices: ", absl::StrJoin(known, ", "),
                                          DidYouMean(name, spellings, "\"")));
}

}  // namespace wavepool::planner
