// Reading the GPUNode conditions other components act on (gpu_node_conditions.h).
#include "wavepool/api/gpu_node_conditions.h"

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace wavepool::api {

std::vector<std::string> CheatingPods(const GpuNodeStatus& status) {
  std::vector<std::string> pods;
  const Condition* condition = FindCondition(status.conditions, kGpuNodeBackgroundCheating);
  if (condition == nullptr || condition->status != ConditionStatus::kTrue) return pods;
  for (absl::string_view entry : absl::StrSplit(condition->message, "; ")) {
    const std::size_t end = entry.find(" (GPU ");
    if (end != absl::string_view::npos && end > 0) pods.emplace_back(entry.substr(0, end));
  }
  return pods;
}

}  // namespace wavepool::api
