#include "wavepool/api/enums.h"

#include <array>
#include <utility>

namespace wavepool::api {
namespace {

template <typename E, std::size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

constexpr NameTable<Role, 2> kRoleNames{{
    {Role::kForeground, "Foreground"},
    {Role::kBackground, "Background"},
}};
constexpr NameTable<Optimizer, 3> kOptimizerNames{{
    {Optimizer::kSgd, "SGD"},
    {Optimizer::kAdam, "Adam"},
    {Optimizer::kAdamW, "AdamW"},
}};
constexpr NameTable<Strategy, 5> kStrategyNames{{
    {Strategy::kAuto, "Auto"},
    {Strategy::kDataParallel, "DataParallel"},
    {Strategy::kBurstParallel, "BurstParallel"},
    {Strategy::kTickTock, "TickTock"},
    {Strategy::kModelParallelWaves, "ModelParallelWaves"},
}};
constexpr NameTable<GpuCounts, 2> kGpuCountsNames{{
    {GpuCounts::kPowersOfTwo, "PowersOfTwo"},
    {GpuCounts::kAllIntegers, "AllIntegers"},
}};
constexpr NameTable<Toggle, 3> kToggleNames{{
    {Toggle::kAuto, "Auto"},
    {Toggle::kOn, "On"},
    {Toggle::kOff, "Off"},
}};
constexpr NameTable<JobPhase, 8> kJobPhaseNames{{
    {JobPhase::kPending, "Pending"},
    {JobPhase::kPlanned, "Planned"},
    {JobPhase::kPlaced, "Placed"},
    {JobPhase::kRunning, "Running"},
    {JobPhase::kSucceeded, "Succeeded"},
    {JobPhase::kFailed, "Failed"},
    {JobPhase::kPreempted, "Preempted"},
    {JobPhase::kSuspended, "Suspended"},
}};
constexpr NameTable<ConditionStatus, 3> kConditionStatusNames{{
    {ConditionStatus::kTrue, "True"},
    {ConditionStatus::kFalse, "False"},
    {ConditionStatus::kUnknown, "Unknown"},
}};
constexpr NameTable<CollectiveAlgorithm, 3> kCollectiveAlgorithmNames{{
    {CollectiveAlgorithm::kRing, "ring"},
    {CollectiveAlgorithm::kTree, "tree"},
    {CollectiveAlgorithm::kHierarchical, "hierarchical"},
}};
constexpr NameTable<WavePlacement, 2> kWavePlacementNames{{
    {WavePlacement::kStationary, "Stationary"},
    {WavePlacement::kRoundRobin, "RoundRobin"},
}};

// Maps each enum type to its table.
constexpr const auto& Table(Role) { return kRoleNames; }
constexpr const auto& Table(Optimizer) { return kOptimizerNames; }
constexpr const auto& Table(Strategy) { return kStrategyNames; }
constexpr const auto& Table(GpuCounts) { return kGpuCountsNames; }
constexpr const auto& Table(Toggle) { return kToggleNames; }
constexpr const auto& Table(JobPhase) { return kJobPhaseNames; }
constexpr const auto& Table(ConditionStatus) { return kConditionStatusNames; }
constexpr const auto& Table(CollectiveAlgorithm) { return kCollectiveAlgorithmNames; }
constexpr const auto& Table(WavePlacement) { return kWavePlacementNames; }

template <typename E>
std::string_view NameOf(E value) {
  for (const auto& [enumerator, name] : Table(E{})) {
    if (enumerator == value) return name;
  }
  return "<invalid>";  // Only reachable through a cast of an out-of-range integer.
}

}  // namespace

std::string_view ToString(Role value) { return NameOf(value); }
std::string_view ToString(Optimizer value) { return NameOf(value); }
std::string_view ToString(Strategy value) { return NameOf(value); }
std::string_view ToString(GpuCounts value) { return NameOf(value); }
std::string_view ToString(Toggle value) { return NameOf(value); }
std::string_view ToString(JobPhase value) { return NameOf(value); }
std::string_view ToString(ConditionStatus value) { return NameOf(value); }
std::string_view ToString(CollectiveAlgorithm value) { return NameOf(value); }
std::string_view ToString(WavePlacement value) { return NameOf(value); }

template <typename E>
std::optional<E> ParseEnum(std::string_view name) {
  for (const auto& [enumerator, wire_name] : Table(E{})) {
    if (wire_name == name) return enumerator;
  }
  return std::nullopt;
}

template <typename E>
std::string EnumNames() {
  std::string joined;
  for (const auto& [enumerator, name] : Table(E{})) {
    if (!joined.empty()) joined += ", ";
    joined += name;
  }
  return joined;
}

#define WAVEPOOL_INSTANTIATE_ENUM(E)                        \
  template std::optional<E> ParseEnum<E>(std::string_view); \
  template std::string EnumNames<E>();
WAVEPOOL_INSTANTIATE_ENUM(Role)
WAVEPOOL_INSTANTIATE_ENUM(Optimizer)
WAVEPOOL_INSTANTIATE_ENUM(Strategy)
WAVEPOOL_INSTANTIATE_ENUM(GpuCounts)
WAVEPOOL_INSTANTIATE_ENUM(Toggle)
WAVEPOOL_INSTANTIATE_ENUM(JobPhase)
WAVEPOOL_INSTANTIATE_ENUM(ConditionStatus)
WAVEPOOL_INSTANTIATE_ENUM(CollectiveAlgorithm)
WAVEPOOL_INSTANTIATE_ENUM(WavePlacement)
#undef WAVEPOOL_INSTANTIATE_ENUM

}  // namespace wavepool::api
