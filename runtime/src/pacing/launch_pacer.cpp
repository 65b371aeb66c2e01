#include "wavepool/runtime/launch_pacer.h"

#include "wavepool/base/status_macros.h"

namespace wavepool::runtime {
namespace {

class UnpacedLauncher final : public LaunchPacer {
 public:
  absl::StatusOr<LaunchTicket> Begin(OpGroup group) override { return LaunchTicket{group}; }
  void End(const LaunchTicket&, std::chrono::nanoseconds) override {}
  void ReportIteration(std::int64_t, double, std::int64_t) override {}
  void ReportMemory(std::uint64_t) override {}
  void ReportWaveMemory(int, std::uint64_t) override {}
  void Stop() override {}
};

// Ids above the layers' 2 * kLayerGroups: all-reduces, then receives, one per stage (modulo).
constexpr std::uint32_t kStageGroups = (agent::kMaxOpGroups - 2 * kLayerGroups) / 2;
static_assert(kStageGroups >= 64, "op-group id space too small");

std::uint32_t LayerSlot(int layer) { return static_cast<std::uint32_t>(layer) % kLayerGroups; }
std::uint32_t StageSlot(int stage) { return static_cast<std::uint32_t>(stage) % kStageGroups; }

}  // namespace

absl::Status LaunchPacer::Run(OpGroup group, const std::function<void()>& work) {
  WAVEPOOL_ASSIGN_OR_RETURN(LaunchTicket ticket, Begin(group));
  const auto start = std::chrono::steady_clock::now();
  work();
  End(ticket, std::chrono::steady_clock::now() - start);
  return absl::OkStatus();
}

std::unique_ptr<LaunchPacer> MakeUnpacedLauncher() { return std::make_unique<UnpacedLauncher>(); }

OpGroup ForwardGroup(int layer) { return {2 * LayerSlot(layer), agent::OpKind::kCompute}; }
OpGroup BackwardGroup(int layer) { return {2 * LayerSlot(layer) + 1, agent::OpKind::kCompute}; }
OpGroup AllReduceGroup(int stage) {
  return {2 * kLayerGroups + StageSlot(stage), agent::OpKind::kAllReduce};
}
OpGroup ReceiveGroup(int stage) {
  return {2 * kLayerGroups + kStageGroups + StageSlot(stage), agent::OpKind::kReceive};
}

}  // namespace wavepool::runtime
