// The GPU catalog: what the analytical cost model and the default network model know about a
// device when no measured profile is given. Figures are the vendors' datasheet numbers.
#ifndef WAVEPOOL_PLANNER_DEVICE_H_
#define WAVEPOOL_PLANNER_DEVICE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/planner/units.h"

namespace wavepool::planner {

struct DeviceSpec {
  std::string name;          // canonical catalog name, e.g. "a100-40gb"
  std::string display_name;  // e.g. "NVIDIA A100-SXM4-40GB"
  int sm_count = 0;
  double fp32_flops_per_second = 0;    // dense, without tensor cores
  double tensor_flops_per_second = 0;  // dense FP16/BF16 on tensor cores (mixed precision)
  double tf32_flops_per_second = 0;    // dense TF32 on tensor cores; 0: none (FP32 instead)
  double memory_bytes_per_second = 0;  // HBM bandwidth
  Bytes memory_bytes = 0;              // HBM capacity
  double nvlink_bytes_per_second = 0;  // per GPU, per direction, through NVLink/NVSwitch
  int gpus_per_node = 8;
  double network_bytes_per_second = 0;    // per GPU, per direction, between nodes (its NIC)
  double host_link_bytes_per_second = 0;  // per GPU, per direction, host <-> device (PCIe)
  Seconds kernel_launch_overhead{0};      // host-side cost per kernel launch
};

// Every device in the catalog: v100 (SXM2 32 GB), a100-40gb, h100 (SXM5 80 GB), h200.
const std::vector<DeviceSpec>& DeviceCatalog();

// Finds a device by catalog name or alias ("a100" -> a100-40gb, "h100-sxm", ...), as SameName
// compares names (any case, '-' and '_' ignored: "A100_40GB"); NotFound suggests the closest
// names (names.h) and lists the known ones.
absl::StatusOr<DeviceSpec> FindDevice(std::string_view name);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_DEVICE_H_
