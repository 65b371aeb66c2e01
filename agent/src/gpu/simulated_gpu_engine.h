// One simulated GPU: the tasks' FIFO streams, the interference model applied between events, and
// the history (activity segments, memory change points) that windows are computed from. The
// model itself is documented in wavepool/agent/simulated_gpu.h.
//
// Not thread-safe: SimulatedGpus serialises every call. Time inside is double nanoseconds since
// the engine's origin, so that precision does not depend on the clock's epoch.
//
// Invariants: the front group of every task's queue is the one running (its `started` is set);
// the time only grows; segments_ are disjoint, ascending and end at or before it.
#ifndef WAVEPOOL_AGENT_SRC_GPU_SIMULATED_GPU_ENGINE_H_
#define WAVEPOOL_AGENT_SRC_GPU_SIMULATED_GPU_ENGINE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/agent/simulated_gpu.h"

namespace wavepool::agent {

class SimulatedGpuEngine {
 public:
  SimulatedGpuEngine(const InterferenceModel& model, std::uint64_t capacity_bytes,
                     std::chrono::nanoseconds history, MonotonicTime origin);

  MonotonicTime now() const { return ToTime(progress_.now); }

  // Runs the model forward to `time`. REQUIRES: time >= now().
  void AdvanceTo(MonotonicTime time);

  absl::Status AddTask(SimulatedTaskId id, const SimulatedTask& task);
  absl::Status RemoveTask(SimulatedTaskId id);
  // Queues a group at now(). REQUIRES: the fields were validated.
  absl::Status Submit(SimulatedTaskId task, OpGroupId id, double solo_ns, double intensity,
                      double kernel_ns);
  absl::StatusOr<GroupTiming> Timing(OpGroupId id) const;

  absl::Status SetAllocated(SimulatedTaskId task, std::uint64_t bytes);
  std::uint64_t memory_used() const { return memory_.back().second; }
  absl::StatusOr<std::uint64_t> MemoryUsedAt(MonotonicTime time) const;
  absl::StatusOr<WindowStats> Window(MonotonicTime from, MonotonicTime to) const;

 private:
  struct Group {
    OpGroupId id = 0;
    double solo_ns = 0;
    double intensity = 1;
    double kernel_ns = 1;
    double submitted = 0;
    double started = -1;      // < 0 until it reaches the front of its queue
    double remaining_ns = 0;  // solo-speed work left
  };
  struct Task {
    SimulatedTask spec;
    std::deque<Group> queue;
    std::uint64_t allocated = 0;
  };
  struct Segment {  // a stretch of constant rates
    double start = 0;
    double end = 0;
    RoleShares occupancy;
    std::vector<std::pair<std::int32_t, double>> pid_shares;
  };
  struct Done {
    double submitted = 0;
    double started = 0;
    double completed = 0;
  };
  // The state a projection copies: everything that determines the future.
  struct Progress {
    double now = 0;
    std::map<SimulatedTaskId, Task> tasks;
  };
  // What a run reports; the engine records it, a projection looks for one group.
  class Observer {
   public:
    virtual ~Observer() = default;
    virtual void OnSegment(Segment segment) = 0;
    // Returns true to stop the run.
    virtual bool OnDone(const Group& group, double completed) = 0;
  };
  class Recorder;
  class Projector;

  // Runs `progress` forward until `until` or until an observer asks to stop.
  void Run(Progress& progress, double until, Observer& observer) const;
  // The rate of each running group (queue fronts), in task order, and the segment they form.
  std::vector<double> Rates(const Progress& progress, Segment& segment) const;

  // Model time is nanoseconds since `origin_`, as a double.
  double ToRelative(MonotonicTime t) const { return static_cast<double>((t - origin_).count()); }
  MonotonicTime ToTime(double relative) const;
  void RecordMemory();
  void Prune();

  const InterferenceModel model_;
  const std::uint64_t capacity_bytes_;
  const double history_ns_;
  const MonotonicTime origin_;

  Progress progress_;
  std::map<OpGroupId, Done> done_;
  std::deque<Segment> segments_;
  std::deque<std::pair<double, std::uint64_t>> memory_;  // (time, bytes in use from then on)
};

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_SRC_GPU_SIMULATED_GPU_ENGINE_H_
