#include "gpu/simulated_gpu_engine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace wavepool::agent {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// S_f of simulated_gpu.h with kernel durations in any one unit.
double ForegroundSlowdownOf(const InterferenceModel& model, double background_share,
                            double foreground_kernel, double longest_background_kernel,
                            bool high_priority) {
  if (background_share <= 0) return 0;
  const double priority = high_priority ? model.priority_factor : 1.0;
  // Share of a foreground kernel's time spent waiting for resident background blocks to drain:
  // ~0 when background kernels are much shorter, -> 1 when they are much longer (Figure 12).
  const double blocking =
      longest_background_kernel / (foreground_kernel + longest_background_kernel);
  return background_share *
         (model.foreground_sharing * priority + model.foreground_blocking * blocking);
}

// A group whose remaining work is within rounding of zero has completed.
bool Finished(double remaining_ns, double solo_ns) {
  return remaining_ns <= 1e-3 + 1e-12 * solo_ns;
}

}  // namespace

double ForegroundSlowdown(const InterferenceModel& model, double background_share,
                          std::chrono::nanoseconds foreground_kernel,
                          std::chrono::nanoseconds longest_background_kernel, bool high_priority) {
  return ForegroundSlowdownOf(
      model, background_share, static_cast<double>(foreground_kernel.count()),
      static_cast<double>(longest_background_kernel.count()), high_priority);
}

double BackgroundSlowdown(const InterferenceModel& model, double foreground_share) {
  return model.background_sharing * foreground_share;
}

// Records what the real run does: segments for windows, completions for Timing.
class SimulatedGpuEngine::Recorder final : public Observer {
 public:
  explicit Recorder(SimulatedGpuEngine& engine) : engine_(engine) {}
  void OnSegment(Segment segment) override { engine_.segments_.push_back(std::move(segment)); }
  bool OnDone(const Group& group, double completed) override {
    engine_.done_[group.id] = Done{group.submitted, group.started, completed};
    return false;
  }

 private:
  SimulatedGpuEngine& engine_;
};

// Runs a copy of the state forward until one group completes.
class SimulatedGpuEngine::Projector final : public Observer {
 public:
  explicit Projector(OpGroupId target) : target_(target) {}
  void OnSegment(Segment) override {}
  bool OnDone(const Group& group, double completed) override {
    if (group.id != target_) return false;
    started_ = group.started;
    completed_ = completed;
    return true;
  }
  double started() const { return started_; }
  double completed() const { return completed_; }

 private:
  OpGroupId target_;
  double started_ = -1;
  double completed_ = -1;
};

SimulatedGpuEngine::SimulatedGpuEngine(const InterferenceModel& model, std::uint64_t capacity_bytes,
                                       std::chrono::nanoseconds history, MonotonicTime origin)
    : model_(model),
      capacity_bytes_(capacity_bytes),
      history_ns_(static_cast<double>(history.count())),
      origin_(origin) {
  memory_.emplace_back(0.0, 0);
}

MonotonicTime SimulatedGpuEngine::ToTime(double relative) const {
  return origin_ + std::chrono::nanoseconds(std::llround(relative));
}

std::vector<double> SimulatedGpuEngine::Rates(const Progress& progress, Segment& segment) const {
  double foreground = 0;
  double background = 0;
  double longest_background_kernel = 0;
  for (const auto& [id, task] : progress.tasks) {
    if (task.queue.empty()) continue;
    const Group& group = task.queue.front();
    if (task.spec.role == Role::kForeground) {
      foreground += group.intensity;
    } else {
      background += group.intensity;
      longest_background_kernel = std::max(longest_background_kernel, group.kernel_ns);
    }
  }
  // Held SMs: intensities, scaled down together when they ask for more than the whole GPU.
  const double scale = 1.0 / std::max(1.0, foreground + background);
  segment.occupancy = {foreground * scale, background * scale};
  std::vector<double> rates;
  for (const auto& [id, task] : progress.tasks) {
    if (task.queue.empty()) continue;
    const Group& group = task.queue.front();
    const bool is_foreground = task.spec.role == Role::kForeground;
    const double slowdown = is_foreground
                                ? ForegroundSlowdownOf(model_, std::min(1.0, background),
                                                       group.kernel_ns, longest_background_kernel,
                                                       task.spec.priority == StreamPriority::kHigh)
                                : model_.background_sharing * std::min(1.0, foreground);
    const double crowding = std::max(1.0, is_foreground ? foreground : background);
    rates.push_back(1.0 / (crowding * (1.0 + slowdown)));
    segment.pid_shares.emplace_back(task.spec.pid, group.intensity * scale);
  }
  return rates;
}

void SimulatedGpuEngine::Run(Progress& progress, double until, Observer& observer) const {
  while (true) {
    Segment segment;
    segment.start = progress.now;
    const std::vector<double> rates = Rates(progress, segment);
    if (rates.empty()) {  // idle: nothing changes until the next submission
      if (until > progress.now && until < kInfinity) progress.now = until;
      return;
    }
    // The next completion: the running group with the least time left at its current rate.
    double step = kInfinity;
    std::size_t first_done = 0;
    std::size_t i = 0;
    for (const auto& [id, task] : progress.tasks) {
      if (task.queue.empty()) continue;
      const double left = task.queue.front().remaining_ns / rates[i];
      if (left < step) {
        step = left;
        first_done = i;
      }
      ++i;
    }
    const double event = progress.now + step;
    const double end = std::min(event, until);
    const double elapsed = end - progress.now;
    if (elapsed > 0) {
      segment.end = end;
      observer.OnSegment(std::move(segment));
    }
    bool stop = false;
    i = 0;
    for (auto& [id, task] : progress.tasks) {
      if (task.queue.empty()) continue;
      Group& group = task.queue.front();
      group.remaining_ns -= elapsed * rates[i];
      const bool finished = i == first_done || Finished(group.remaining_ns, group.solo_ns);
      ++i;
      if (event > until || !finished) continue;
      const Group done = group;
      task.queue.pop_front();
      if (!task.queue.empty()) task.queue.front().started = end;
      stop = observer.OnDone(done, end) || stop;
    }
    progress.now = end;
    if (stop || event > until) return;
  }
}

void SimulatedGpuEngine::AdvanceTo(MonotonicTime time) {
  Recorder recorder(*this);
  Run(progress_, std::max(progress_.now, ToRelative(time)), recorder);
  Prune();
}

void SimulatedGpuEngine::Prune() {
  const double horizon = progress_.now - history_ns_;
  while (!segments_.empty() && segments_.front().end < horizon) segments_.pop_front();
  while (memory_.size() > 1 && memory_[1].first <= horizon) memory_.pop_front();
  // Completed groups: drop the old ones in bulk, not on every call.
  if (done_.size() > 4096 || (!done_.empty() && done_.begin()->second.completed < horizon)) {
    for (auto it = done_.begin(); it != done_.end();) {
      it = it->second.completed < horizon ? done_.erase(it) : std::next(it);
    }
  }
}

absl::Status SimulatedGpuEngine::AddTask(SimulatedTaskId id, const SimulatedTask& task) {
  progress_.tasks[id].spec = task;
  return absl::OkStatus();
}

absl::Status SimulatedGpuEngine::RemoveTask(SimulatedTaskId id) {
  auto it = progress_.tasks.find(id);
  if (it == progress_.tasks.end()) {
    return absl::NotFoundError(absl::StrCat("simulated task ", id, ": not found"));
  }
  progress_.tasks.erase(it);
  RecordMemory();
  return absl::OkStatus();
}

absl::Status SimulatedGpuEngine::Submit(SimulatedTaskId task_id, OpGroupId id, double solo_ns,
                                        double intensity, double kernel_ns) {
  auto it = progress_.tasks.find(task_id);
  if (it == progress_.tasks.end()) {
    return absl::NotFoundError(absl::StrCat("simulated task ", task_id, ": not found"));
  }
  Group group;
  group.id = id;
  group.solo_ns = solo_ns;
  group.intensity = intensity;
  group.kernel_ns = kernel_ns;
  group.submitted = progress_.now;
  group.remaining_ns = solo_ns;
  if (it->second.queue.empty()) group.started = progress_.now;
  it->second.queue.push_back(group);
  return absl::OkStatus();
}

absl::StatusOr<GroupTiming> SimulatedGpuEngine::Timing(OpGroupId id) const {
  GroupTiming timing;
  if (auto done = done_.find(id); done != done_.end()) {
    timing.submitted = ToTime(done->second.submitted);
    timing.start = ToTime(done->second.started);
    timing.completion = ToTime(done->second.completed);
    timing.started = timing.complete = true;
    return timing;
  }
  for (const auto& [task_id, task] : progress_.tasks) {
    for (const Group& group : task.queue) {
      if (group.id != id) continue;
      Progress copy = progress_;
      Projector projector(id);
      Run(copy, kInfinity, projector);
      timing.submitted = ToTime(group.submitted);
      timing.started = group.started >= 0;
      timing.start = ToTime(projector.started());
      timing.completion = ToTime(projector.completed());
      return timing;
    }
  }
  return absl::NotFoundError(
      absl::StrCat("op group ", id, ": unknown, dropped with its task, or older than the history"));
}

absl::Status SimulatedGpuEngine::SetAllocated(SimulatedTaskId task_id, std::uint64_t bytes) {
  auto it = progress_.tasks.find(task_id);
  if (it == progress_.tasks.end()) {
    return absl::NotFoundError(absl::StrCat("simulated task ", task_id, ": not found"));
  }
  const std::uint64_t others = memory_used() - it->second.allocated;
  if (bytes > capacity_bytes_ || others > capacity_bytes_ - bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "simulated task ", task_id, " (pid ", it->second.spec.pid, "): allocating ", bytes,
        " bytes would use ", others + bytes, " of the GPU's ", capacity_bytes_, " bytes"));
  }
  it->second.allocated = bytes;
  RecordMemory();
  return absl::OkStatus();
}

void SimulatedGpuEngine::RecordMemory() {
  std::uint64_t total = 0;
  for (const auto& [id, task] : progress_.tasks) total += task.allocated;
  if (memory_.back().first == progress_.now) {
    memory_.back().second = total;
  } else if (memory_.back().second != total) {
    memory_.emplace_back(progress_.now, total);
  }
}

absl::StatusOr<std::uint64_t> SimulatedGpuEngine::MemoryUsedAt(MonotonicTime time) const {
  const double t = ToRelative(time);
  auto after =
      std::upper_bound(memory_.begin(), memory_.end(), t,
                       [](double value, const auto& point) { return value < point.first; });
  if (after == memory_.begin()) {
    return absl::FailedPreconditionError(absl::StrCat("memory at ", ToMonotonicNanos(time),
                                                      " ns: before the simulated GPU's history"));
  }
  return std::prev(after)->second;
}

absl::StatusOr<WindowStats> SimulatedGpuEngine::Window(MonotonicTime from, MonotonicTime to) const {
  const double begin = ToRelative(from);
  const double end = ToRelative(to);
  WindowStats stats;
  std::map<std::int32_t, double> pid_time;  // pid -> share * seconds
  for (const Segment& segment : segments_) {
    const double overlap = std::min(end, segment.end) - std::max(begin, segment.start);
    if (overlap <= 0) continue;
    stats.utilization += overlap;
    if (segment.occupancy.foreground > 0) stats.busy.foreground += overlap;
    if (segment.occupancy.background > 0) stats.busy.background += overlap;
    stats.sm_occupancy.foreground += segment.occupancy.foreground * overlap;
    stats.sm_occupancy.background += segment.occupancy.background * overlap;
    for (const auto& [pid, share] : segment.pid_shares) pid_time[pid] += share * overlap;
  }
  const double length = end - begin;
  for (double* value : {&stats.utilization, &stats.busy.foreground, &stats.busy.background,
                        &stats.sm_occupancy.foreground, &stats.sm_occupancy.background}) {
    *value /= length;
  }
  for (const auto& [pid, time] : pid_time) {
    if (time > 0) stats.processes.push_back({pid, time / length});
  }
  return stats;
}

}  // namespace wavepool::agent
