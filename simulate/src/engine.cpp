// The event loop (engine.h): arrivals, completions and gang starts, the placement passes after
// each event, and the rates that hold until the next one.
#include "engine.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::simulate::internal {

Engine::Engine(const Trace& trace, Policy policy, const SimulationOptions& options,
               std::vector<const JobCost*> costs, SimulatedCluster cluster,
               CollocationModel& collocation)
    : trace_(trace),
      policy_(policy),
      options_(options),
      collocation_(collocation),
      cluster_(std::move(cluster)) {
  jobs_.resize(trace.jobs.size());
  for (std::size_t j = 0; j < jobs_.size(); ++j) {
    jobs_[j].spec = &trace.jobs[j];
    jobs_[j].cost = costs[j];
    jobs_[j].foreground = trace.jobs[j].role == api::Role::kForeground;
    if (jobs_[j].foreground) ++foreground_left_;
  }
  busy_.assign(cluster_.gpu_count(), 0.0);
  held_.assign(cluster_.gpu_count(), 0);
}

void Engine::Push(EventKind kind, JobId job, double time) {
  events_.push(Event{time, kind, next_seq_++, job, jobs_[job].version});
}

void Engine::Advance(double time) {
  const double dt = time - now_;
  busy_seconds_ += busy_sum_ * dt;
  held_seconds_ += held_sum_ * dt;
  now_ = time;
}

absl::StatusOr<PolicyResult> Engine::Run() {
  for (std::size_t j = 0; j < jobs_.size(); ++j) {
    Push(EventKind::kArrival, static_cast<JobId>(j), trace_.jobs[j].arrival_seconds);
  }
  // Jobs are in arrival order (trace.h); a window of 0 closes at the end of the run.
  window_end_ = trace_.jobs.empty() ? 0 : trace_.jobs.back().arrival_seconds;
  const auto total = static_cast<std::int64_t>(jobs_.size());
  while (arrived_ < total || foreground_left_ > 0) {
    if (events_.empty()) {
      return absl::InternalError(
          absl::StrCat(foreground_left_, " foreground jobs left with no event to come"));
    }
    const Event event = events_.top();
    events_.pop();
    if (event.kind == EventKind::kCompletion && event.version != jobs_[event.job].version) {
      continue;  // the job's rate changed after this completion was projected
    }
    if (!window_closed_ && window_end_ > 0 && event.time > window_end_) CloseWindow();
    Advance(event.time);
    ++events_handled_;
    WAVEPOOL_RETURN_IF_ERROR(Handle(event));
    WAVEPOOL_RETURN_IF_ERROR(Schedule());
    if (options_.observer) Observe();
  }
  if (!window_closed_) {
    window_end_ = MeasurementWindow(trace_, now_);
    CloseWindow();
  }
  return Result();
}

double Engine::StepsAt(const JobState& job, double time) const {
  const double steps = static_cast<double>(job.spec->steps);
  if (job.phase == JobPhase::kDone) return steps;
  return std::min(steps, job.progress + job.rate * (time - job.updated));
}

void Engine::CloseWindow() {
  Advance(window_end_);
  window_closed_ = true;
  window_busy_seconds_ = busy_seconds_;
  window_held_seconds_ = held_seconds_;
  for (const JobState& job : jobs_) {
    if (job.cost == nullptr) continue;  // a background job of a policy without them
    const double samples =
        StepsAt(job, now_) * static_cast<double>(job.cost->samples_per_iteration);
    (job.foreground ? window_foreground_samples_ : window_background_samples_) += samples;
  }
}

void Engine::Observe() const {
  Snapshot snapshot;
  snapshot.time_seconds = now_;
  snapshot.foreground_on.resize(cluster_.gpu_count());
  snapshot.background_on.resize(cluster_.gpu_count());
  for (GpuId g = 0; g < cluster_.gpu_count(); ++g) {
    snapshot.foreground_on[g] = cluster_.ForegroundOn(g);
    snapshot.background_on[g] = cluster_.BackgroundOn(g);
  }
  snapshot.jobs.reserve(jobs_.size());
  for (const JobState& job : jobs_) {
    JobSnapshot j;
    j.phase = job.phase;
    j.plan_gpus = job.cost != nullptr ? job.cost->gpus : 0;
    const bool holds = job.phase == JobPhase::kStarting || job.phase == JobPhase::kRunning;
    if (holds && job.foreground) j.gpus = job.gpus;
    if (holds && !job.foreground) j.gpus = {job.gpu};
    j.steps_trained = StepsAt(job, now_);
    j.steps_per_second = job.rate;
    snapshot.jobs.push_back(std::move(j));
  }
  options_.observer(snapshot);
}

absl::Status Engine::Handle(const Event& event) {
  JobState& job = jobs_[event.job];
  switch (event.kind) {
    case EventKind::kArrival:
      ++arrived_;
      job.phase = JobPhase::kWaiting;
      if (job.foreground) {
        waiting_foreground_.push_back(event.job);
        smallest_waiting_gang_ = waiting_foreground_.size() == 1
                                     ? job.cost->gpus
                                     : std::min(smallest_waiting_gang_, job.cost->gpus);
        foreground_dirty_ = true;
      } else if (RunsBackground()) {
        waiting_background_.push_back(event.job);
      }
      return absl::OkStatus();
    case EventKind::kStart:
      Begin(event.job);
      for (JobId v : job.stopping) {
        jobs_[v].phase = JobPhase::kWaiting;
        waiting_background_.push_back(v);
      }
      job.stopping.clear();
      return absl::OkStatus();
    case EventKind::kCompletion:
      Complete(event.job);
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

absl::Status Engine::Schedule() {
  WAVEPOOL_RETURN_IF_ERROR(ScheduleForeground());
  return RunsBackground() ? ScheduleBackground() : absl::OkStatus();
}

// Every waiting gang that fits now, in arrival order (a later small gang may pass a large one
// that does not fit: the controller reconciles every waiting job, none holds a place in line).
absl::Status Engine::ScheduleForeground() {
  if (!foreground_dirty_ || waiting_foreground_.empty() ||
      smallest_waiting_gang_ > cluster_.free_for_foreground()) {
    return absl::OkStatus();
  }
  foreground_dirty_ = false;
  const bool exclusive = policy_ != Policy::kWavepool;
  std::vector<JobId> still;
  std::int64_t smallest = std::numeric_limits<std::int64_t>::max();
  for (JobId j : waiting_foreground_) {
    const JobCost& cost = *jobs_[j].cost;
    if (cost.gpus <= cluster_.free_for_foreground()) {
      absl::StatusOr<ForegroundDecision> decision =
          cluster_.PlaceForeground(j, cost.gpus, cost.memory_per_gpu_bytes, exclusive);
      if (decision.ok()) {
        StartGang(j, *decision);
        continue;
      }
      if (!controller::IsNotPlaceable(decision.status())) return decision.status();
    }
    still.push_back(j);
    smallest = std::min(smallest, cost.gpus);
  }
  waiting_foreground_ = std::move(still);
  smallest_waiting_gang_ = smallest;
  return absl::OkStatus();
}

// Background jobs in line while a GPU is open to them; the first that finds no GPU (memory)
// stops the pass until the cluster changes.
absl::Status Engine::ScheduleBackground() {
  while (!waiting_background_.empty() && cluster_.open_for_background() > 0 &&
         background_blocked_at_ != mutations_) {
    const JobId j = waiting_background_.front();
    absl::StatusOr<GpuId> gpu = cluster_.PlaceBackground(j, jobs_[j].cost->memory_per_gpu_bytes);
    if (!gpu.ok()) {
      if (!controller::IsNotPlaceable(gpu.status())) return gpu.status();
      background_blocked_at_ = mutations_;
      break;
    }
    waiting_background_.pop_front();
    StartBackground(j, *gpu);
  }
  return absl::OkStatus();
}

void Engine::StartGang(JobId j, const ForegroundDecision& decision) {
  JobState& job = jobs_[j];
  for (JobId v : decision.preempted) Preempt(v);
  ForegroundTerms terms;
  terms.memory_per_gpu_bytes = job.cost->memory_per_gpu_bytes;
  terms.idle_fraction = job.cost->idle_fraction;
  terms.allow_background = policy_ == Policy::kWavepool;
  terms.max_foreground_slowdown = options_.max_foreground_slowdown;
  cluster_.AssignForeground(j, decision.gpus, terms);
  ++mutations_;
  job.gpus = decision.gpus;
  if (!decision.preempted.empty() && options_.preemption_seconds > 0) {
    // The gang holds its GPUs while its victims checkpoint and exit (controller nominations).
    job.phase = JobPhase::kStarting;
    job.stopping = decision.preempted;
    for (GpuId g : job.gpus) UpdateGpu(g);
    Push(EventKind::kStart, j, now_ + options_.preemption_seconds);
    return;
  }
  for (JobId v : decision.preempted) {
    jobs_[v].phase = JobPhase::kWaiting;
    waiting_background_.push_back(v);
  }
  Begin(j);
}

void Engine::Begin(JobId j) {
  JobState& job = jobs_[j];
  job.phase = JobPhase::kRunning;
  job.started = now_;
  job.updated = now_;
  RefreshGang(j);
}

void Engine::Preempt(JobId v) {
  JobState& victim = jobs_[v];
  SetRate(v, 0);
  victim.phase = JobPhase::kStopping;
  cluster_.ReleaseBackground(victim.gpu);
  ++mutations_;
  UpdateGpu(victim.gpu);
  victim.gpu = -1;
  ++preemptions_;
}

void Engine::StartBackground(JobId j, GpuId gpu) {
  JobState& job = jobs_[j];
  cluster_.AssignBackground(j, gpu, job.cost->memory_per_gpu_bytes);
  ++mutations_;
  ++background_placements_;
  job.phase = JobPhase::kRunning;
  job.gpu = gpu;
  job.updated = now_;
  const JobId fg = cluster_.ForegroundOn(gpu);
  if (fg != kNoJob && jobs_[fg].phase == JobPhase::kRunning) {
    RefreshGang(fg);
  } else {
    SetRate(j, BackgroundRate(j));
    UpdateGpu(gpu);
  }
}

void Engine::Complete(JobId j) {
  JobState& job = jobs_[j];
  job.progress = static_cast<double>(job.spec->steps);
  job.updated = now_;
  job.rate = 0;
  job.phase = JobPhase::kDone;
  job.finished = now_;
  ++job.version;
  ++mutations_;
  if (job.foreground) {
    cluster_.ReleaseForeground(j, job.gpus);
    --foreground_left_;
    foreground_dirty_ = true;
    for (GpuId g : job.gpus) {
      const JobId bg = cluster_.BackgroundOn(g);
      if (bg != kNoJob && jobs_[bg].phase == JobPhase::kRunning) SetRate(bg, BackgroundRate(bg));
      UpdateGpu(g);
    }
    return;
  }
  const GpuId g = job.gpu;
  cluster_.ReleaseBackground(g);
  const JobId fg = cluster_.ForegroundOn(g);
  if (fg != kNoJob && jobs_[fg].phase == JobPhase::kRunning) {
    RefreshGang(fg);
  } else {
    UpdateGpu(g);
  }
}

const SharedGpu& Engine::Shared(JobId fg, JobId bg) {
  const auto key = std::make_pair(jobs_[fg].cost, jobs_[bg].cost);
  auto it = shared_.find(key);
  if (it == shared_.end()) {
    it = shared_
             .emplace(key,
                      collocation_.Share(*key.first, *key.second, options_.max_foreground_slowdown))
             .first;
  }
  return it->second;
}

// A gang runs as fast as its slowest GPU: sigma is the largest group slowdown among its GPUs
// with a background job training beside it (collocation.h).
void Engine::RefreshGang(JobId j) {
  JobState& job = jobs_[j];
  double sigma = 1;
  for (GpuId g : job.gpus) {
    const JobId bg = cluster_.BackgroundOn(g);
    if (bg != kNoJob && jobs_[bg].phase == JobPhase::kRunning) {
      sigma = std::max(sigma, Shared(j, bg).equilibrium.group_slowdown);
    }
  }
  job.gang_slowdown = sigma;
  SetRate(j, 1.0 / (job.cost->iteration_seconds * sigma));
  for (GpuId g : job.gpus) {
    const JobId bg = cluster_.BackgroundOn(g);
    if (bg != kNoJob && jobs_[bg].phase == JobPhase::kRunning) SetRate(bg, BackgroundRate(bg));
    UpdateGpu(g);
  }
}

double Engine::BackgroundRate(JobId j) {
  const JobState& job = jobs_[j];
  const JobId fg = cluster_.ForegroundOn(job.gpu);
  double share = 1;  // alone on its GPU
  if (fg != kNoJob && jobs_[fg].phase == JobPhase::kRunning) {
    const JobState& f = jobs_[fg];
    share =
        CollocationModel::BackgroundRate(Shared(fg, j), 1 - f.cost->idle_fraction, f.gang_slowdown);
  }
  return share / job.cost->iteration_seconds;
}

void Engine::SetRate(JobId j, double rate) {
  JobState& job = jobs_[j];
  job.progress += job.rate * (now_ - job.updated);
  job.updated = now_;
  if (rate == job.rate) return;
  job.rate = rate;
  ++job.version;
  if (rate > 0) {
    const double left = std::max(0.0, static_cast<double>(job.spec->steps) - job.progress);
    Push(EventKind::kCompletion, j, now_ + left / rate);
  }
}

// A GPU's work: a background job trains whenever the foreground leaves the GPU idle (and beside
// it as the feedback loop allows), so a GPU with one is always busy; a foreground alone keeps it
// busy its plan's share of the (stretched) iteration.
void Engine::UpdateGpu(GpuId g) {
  const JobId fg = cluster_.ForegroundOn(g);
  const JobId bg = cluster_.BackgroundOn(g);
  double busy = 0;
  if (bg != kNoJob && jobs_[bg].phase == JobPhase::kRunning) {
    busy = 1;
  } else if (fg != kNoJob && jobs_[fg].phase == JobPhase::kRunning) {
    busy = (1 - jobs_[fg].cost->idle_fraction) / jobs_[fg].gang_slowdown;
  }
  const char held = fg != kNoJob || bg != kNoJob ? 1 : 0;
  busy_sum_ += busy - busy_[g];
  held_sum_ += held - held_[g];
  busy_[g] = busy;
  held_[g] = held;
}

}  // namespace wavepool::simulate::internal
