// The enumerations of the wavepool.dev/v1alpha1 API and their wire names.
//
// Every enum has exactly one spelling on the wire, case-sensitive as Kubernetes enums are
// ("Foreground", not "foreground"). ToString gives it; ParseEnum<E> reads it back; EnumNames<E>
// lists the valid spellings for error messages ("Foreground, Background").
#ifndef WAVEPOOL_API_ENUMS_H_
#define WAVEPOOL_API_ENUMS_H_

#include <optional>
#include <string>
#include <string_view>

namespace wavepool::api {

// How a TrainingJob shares GPUs (deeppool-burst-parallel §5): a Foreground job is time-critical
// and gang-placed; a Background job is best-effort and preemptible.
enum class Role { kForeground, kBackground };

enum class Optimizer { kSgd, kAdam, kAdamW };

// The parallelisation a job asks for (TrainingJob) or a plan resolved to (Plan, never kAuto).
enum class Strategy { kAuto, kDataParallel, kBurstParallel, kTickTock, kModelParallelWaves };

// The GPU counts the burst-parallel search may give a layer: 1, 2, 4, 8... (the DeepPool
// artifact's only choice) or every integer up to the job's GPUs.
enum class GpuCounts { kPowersOfTwo, kAllIntegers };

// A feature switch the planner may decide (kAuto) or the user forces.
enum class Toggle { kAuto, kOn, kOff };

enum class JobPhase {
  kPending,
  kPlanned,
  kPlaced,
  kRunning,
  kSucceeded,
  kFailed,
  kPreempted,
  kSuspended
};

// metav1.ConditionStatus.
enum class ConditionStatus { kTrue, kFalse, kUnknown };

// The all-reduce algorithm of a sync group (paradl-oracle §3, ring and tree collectives;
// hierarchical: reduce-scatter in each node, all-reduce across nodes, all-gather in each node).
enum class CollectiveAlgorithm { kRing, kTree, kHierarchical };

// Where the waves of a ModelParallelWaves plan run (wavelet-tick-tock §3.3): stage s stays on GPU
// s and the waves cross the stages as pipeline micro-batches (Stationary), or wave w runs stage s
// on GPU (s + w) mod N, so that every GPU holds the partitions it runs (RoundRobin, §3.3.2).
enum class WavePlacement { kStationary, kRoundRobin };

std::string_view ToString(Role value);
std::string_view ToString(Optimizer value);
std::string_view ToString(Strategy value);
std::string_view ToString(GpuCounts value);
std::string_view ToString(Toggle value);
std::string_view ToString(JobPhase value);
std::string_view ToString(ConditionStatus value);
std::string_view ToString(CollectiveAlgorithm value);
std::string_view ToString(WavePlacement value);

// The enumerator whose wire name is exactly `name`, or nullopt.
// Defined for every enum declared above.
template <typename E>
std::optional<E> ParseEnum(std::string_view name);

// The wire names of E in declaration order, joined by ", ".
template <typename E>
std::string EnumNames();

}  // namespace wavepool::api

#endif  // WAVEPOOL_API_ENUMS_H_
