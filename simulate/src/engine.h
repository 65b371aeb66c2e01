// The event loop of one policy's simulation (simulator.h): job states, the event queue, the
// placement passes, each job's training rate and the cluster's busy and held GPU-time.
//
// Invariants: every job trains at a constant rate between events, and `progress` is exact at
// `updated`; a job's pending completion event carries its `version`, and any rate change bumps
// the version (older events are dropped when they come up); busy_sum_ and held_sum_ are the sums
// of busy_ and held_ over the GPUs; the window's figures are taken once, when time reaches
// window_end_ (or at the end of the run when that comes first). Not thread-safe.
#ifndef WAVEPOOL_SIMULATE_SRC_ENGINE_H_
#define WAVEPOOL_SIMULATE_SRC_ENGINE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/simulate/cluster.h"
#include "wavepool/simulate/collocation.h"
#include "wavepool/simulate/simulator.h"

namespace wavepool::simulate::internal {

struct JobState {
  const TraceJob* spec = nullptr;
  const JobCost* cost = nullptr;  // the policy's plan
  bool foreground = true;
  JobPhase phase = JobPhase::kNotArrived;
  std::vector<GpuId> gpus;  // a gang's, in rank order
  GpuId gpu = -1;           // a background job's
  double progress = 0;      // steps trained, exact at `updated`
  double rate = 0;          // steps per second
  double updated = 0;
  double gang_slowdown = 1;  // a gang's sigma (collocation.h)
  double started = -1;       // a gang's start
  double finished = -1;
  std::uint64_t version = 0;
  std::vector<JobId> stopping;  // background jobs a starting gang waits for
};

enum class EventKind { kCompletion = 0, kStart = 1, kArrival = 2 };

struct Event {
  double time = 0;
  EventKind kind = EventKind::kArrival;
  std::uint64_t seq = 0;
  JobId job = kNoJob;
  std::uint64_t version = 0;
  // Earliest first; at one instant completions free GPUs before starts and arrivals use them.
  bool operator>(const Event& o) const {
    return std::tie(time, kind, seq) > std::tie(o.time, o.kind, o.seq);
  }
};

class Engine {
 public:
  // `costs[j]`: job j's plan under `policy`. Borrows everything; all must outlive Run.
  Engine(const Trace& trace, Policy policy, const SimulationOptions& options,
         std::vector<const JobCost*> costs, SimulatedCluster cluster,
         CollocationModel& collocation);

  absl::StatusOr<PolicyResult> Run();

 private:
  bool RunsBackground() const { return policy_ != Policy::kBurst; }
  void Push(EventKind kind, JobId job, double time);
  void Advance(double time);
  absl::Status Handle(const Event& event);
  absl::Status Schedule();
  absl::Status ScheduleForeground();
  absl::Status ScheduleBackground();
  void StartGang(JobId job, const ForegroundDecision& decision);
  void Begin(JobId job);
  void Preempt(JobId background);
  void Complete(JobId job);
  void StartBackground(JobId job, GpuId gpu);
  void RefreshGang(JobId job);
  void SetRate(JobId job, double rate);
  double BackgroundRate(JobId job);
  const SharedGpu& Shared(JobId foreground, JobId background);
  void UpdateGpu(GpuId gpu);
  double StepsAt(const JobState& job, double time) const;
  // Advances to window_end_ and takes the window's figures.
  void CloseWindow();
  void Observe() const;
  PolicyResult Result() const;

  // Constant after construction.
  const Trace& trace_;
  const Policy policy_;
  const SimulationOptions& options_;
  CollocationModel& collocation_;

  SimulatedCluster cluster_;
  std::vector<JobState> jobs_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::uint64_t next_seq_ = 0;
  double now_ = 0;

  std::vector<JobId> waiting_foreground_;  // arrival order
  std::int64_t smallest_waiting_gang_ = 0;
  bool foreground_dirty_ = false;  // GPUs freed or a gang arrived since the last pass
  std::deque<JobId> waiting_background_;
  std::uint64_t mutations_ = 0;                              // cluster changes
  std::uint64_t background_blocked_at_ = ~std::uint64_t{0};  // mutations_ at a failed pass
  std::map<std::pair<const JobCost*, const JobCost*>, SharedGpu> shared_;

  std::vector<double> busy_;  // by GpuId: share of time with work running
  std::vector<char> held_;    // by GpuId
  double busy_sum_ = 0;
  double held_sum_ = 0;
  double busy_seconds_ = 0;  // GPU-seconds
  double held_seconds_ = 0;

  // The measurement window (MeasurementWindow): [0, window_end_].
  double window_end_ = 0;
  bool window_closed_ = false;
  double window_busy_seconds_ = 0;
  double window_held_seconds_ = 0;
  double window_foreground_samples_ = 0;
  double window_background_samples_ = 0;

  std::int64_t arrived_ = 0;
  std::int64_t foreground_left_ = 0;
  std::int64_t background_placements_ = 0;
  std::int64_t preemptions_ = 0;
  std::int64_t events_handled_ = 0;
};

}  // namespace wavepool::simulate::internal

#endif  // WAVEPOOL_SIMULATE_SRC_ENGINE_H_
