// The Agent's control loop (agent.h): samples the GPUs, records each role's SM occupancy and
// judges background processes against their gates, beats the gates, finds each GPU's memory wave
// and advises background tasks on their batch size. Runs on the Agent's loop thread.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <iterator>
#include <map>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/agent_state.h"
#include "wavepool/agent/agent.h"

namespace wavepool::agent {
namespace {

// The memory a worker's allocator reports holding, as points for the memory-wave analysis.
std::vector<MemoryPoint> AllocatedPoints(const std::deque<MemorySample>& reports) {
  return PointsFromAllocatorSamples(std::vector<MemorySample>(reports.begin(), reports.end()),
                                    AllocatorField::kAllocated);
}

}  // namespace

// Samples every sample_period and applies the policy every control_period. Waiting is on the
// wall clock (so that Stop wakes it); timestamps come from the agent's Clock.
void Agent::Loop() {
  // The clock's epoch stands for "never".
  MonotonicTime last_control, last_telemetry;
  const auto period = absl::FromChrono(options_.sample_period);
  auto due = [](MonotonicTime now, MonotonicTime last, std::chrono::milliseconds every) {
    return last == MonotonicTime() || now - last >= every;
  };
  do {
    const MonotonicTime now = clock_->Now();
    const bool telemetry = due(now, last_telemetry, options_.telemetry_period);
    Sample(now, telemetry);
    if (telemetry) last_telemetry = now;
    if (due(now, last_control, options_.control_period)) {
      Control(now);
      last_control = now;
    }
  } while (!stopping_.WaitForNotificationWithTimeout(period));
}

// Memory at every tick (the waves need 100 Hz), everything else every telemetry_period: a full
// NVML sample costs several calls, memory one.
void Agent::Sample(MonotonicTime now, bool full) {
  for (const GpuInfo& info : devices_->gpus()) {
    absl::StatusOr<GpuSample> sample =
        full ? devices_->Sample(info.index) : devices_->SampleMemory(info.index);
    if (!sample.ok()) continue;  // the device says what it cannot measure in its limitations
    absl::MutexLock lock(&mu_);
    Gpu& gpu = *gpus_[info.index];
    gpu.metrics->SetMemory(static_cast<std::int64_t>(sample->memory_used_bytes),
                           static_cast<std::int64_t>(info.memory_total_bytes));
    if (full) RecordUtilization(gpu, *sample);
    gpu.samples.push_back(*std::move(sample));
    while (!gpu.samples.empty() && gpu.samples.front().time < now - options_.wave_window) {
      gpu.samples.pop_front();
    }
  }
}

void Agent::RecordUtilization(Gpu& gpu, const GpuSample& sample) {
  if (sample.utilization) gpu.metrics->SetUtilization(*sample.utilization);
  if (sample.sm_occupancy) gpu.metrics->SetSmOccupancy(*sample.sm_occupancy);
  if (!Measures(gpu.info, "processes")) return;
  double foreground = 0, background = 0;
  for (const ProcessUtilization& p : sample.processes) {
    for (const auto& [session, task] : tasks_) {
      if (task->labels.gpu != gpu.info.index || task->pid != p.pid) continue;
      (task->labels.role == Role::kForeground ? foreground : background) += p.sm_utilization;
    }
  }
  gpu.foreground_occupancy = std::min(1.0, foreground);
  gpu.background_occupancy = std::min(1.0, background);
  gpu.metrics->SetRoleSmOccupancy(*gpu.foreground_occupancy, *gpu.background_occupancy);
  JudgeBackground(gpu, sample);
}

// What each background process used over the last telemetry period against what the gate let it
// do (cheat_detector.h); a process NVML does not list used nothing.
void Agent::JudgeBackground(Gpu& gpu, const GpuSample& sample) {
  for (const auto& [session, task] : tasks_) {
    if (task->labels.gpu != gpu.info.index || task->labels.role != Role::kBackground) continue;
    // Workers that are threads of one process (trust_register, local mode) share a pid: NVML
    // cannot tell their work apart, so none of them is judged.
    // An init-capture: C++17 does not let a lambda capture a structured binding itself.
    const bool shared_pid =
        std::any_of(tasks_.begin(), tasks_.end(), [&, &judged = task](const auto& other) {
          return other.second != judged && other.second->labels.gpu == gpu.info.index &&
                 other.second->pid == judged->pid;
        });
    if (shared_pid) continue;
    double used = 0;
    for (const ProcessUtilization& p : sample.processes) {
      used += p.pid == task->pid ? p.sm_utilization : 0;
    }
    switch (cheats_.ObserveUtilization(sample.time, task->pid, Role::kBackground, used)) {
      case CheatTransition::kFlagged:
        metrics_->CountCheatingDetection();
        task->metrics->SetCheating(true);
        break;
      case CheatTransition::kCleared:
        task->metrics->SetCheating(false);
        break;
      case CheatTransition::kNone:
        break;
    }
  }
}

void Agent::Control(MonotonicTime now) {
  absl::MutexLock lock(&mu_);
  for (auto& gpu_ptr : gpus_) {
    Gpu& gpu = *gpu_ptr;
    gpu.gate->Beat(ToMonotonicNanos(now));  // shared memory holds integers
    gpu.metrics->SetBackgroundHold(gpu.gate->ForegroundHold() > 0);
    if (now - gpu.last_wave >= options_.wave_interval) {
      AnalyzeWaves(gpu);
      gpu.last_wave = now;
    }
    if (now - gpu.last_advice >= options_.advisor_interval) {
      AdviseBackground(gpu);
      gpu.last_advice = now;
    }
  }
  for (const auto& [session, task] : tasks_) {
    const Gpu& gpu = *gpus_[task->labels.gpu];
    const SlotSnapshot slot = gpu.gate->Read(task->slot.slot);
    if (task->labels.role == Role::kBackground) {
      cheats_.ObserveGate(task->pid, {now, slot.pause || gpu.gate->ForegroundHold() > 0,
                                      slot.credit_limit, slot.in_flight, slot.acquired_total});
    }
    task->metrics->ObserveGate({slot.credit_limit, slot.in_flight, slot.acquired_total,
                                slot.wait_ns_total, slot.paused_ns_total});
    if (task->feedback != nullptr) {
      task->metrics->SetForegroundSlowdown(task->feedback->SlowdownRatio());
      task->metrics->SetSensitiveOpGroups(
          static_cast<std::uint32_t>(task->feedback->SensitiveCount()));
    }
  }
  metrics_->SetHeartbeat(clock_->WallNow());
}

void Agent::AnalyzeWaves(Gpu& gpu) {
  MemoryWaveOptions options;
  options.capacity_bytes = gpu.info.memory_total_bytes;
  const std::vector<GpuSample> samples(gpu.samples.begin(), gpu.samples.end());
  absl::StatusOr<MemoryWave> wave = AnalyzeMemoryWave(PointsFromGpuSamples(samples), options);
  if (!wave.ok()) wave = AnalyzeForegroundAllocatorWave(gpu, samples, options);
  if (!wave.ok()) return;  // no wave yet: keep the last one
  gpu.wave = *wave;
  MemoryWaveSummary summary;
  summary.peak_bytes = SaturatedBytes(wave->peak_bytes);
  summary.trough_bytes = SaturatedBytes(wave->trough_bytes);
  summary.period = wave->period;
  summary.headroom_bytes = wave->headroom_bytes.value_or(0);
  // Tick-tock (wavelet-tick-tock §3.2): the offset between the waves' memory, from a foreground
  // task's first two waves (both in one worker), or from two foreground tasks of one job.
  const auto measure = [&](const std::deque<MemorySample>& first,
                           const std::deque<MemorySample>& second) {
    absl::StatusOr<PhaseOffset> offset =
        MeasurePhaseOffset(AllocatedPoints(first), AllocatedPoints(second));
    if (!offset.ok()) return;
    summary.phase_offset = offset->offset;
    summary.phase_offset_ratio = offset->fraction;
    gpu.phase_offset = offset->offset;
    gpu.phase_offset_ratio = offset->fraction;
  };
  std::vector<const Task*> foregrounds;
  for (const auto& [session, task] : tasks_) {
    if (task->labels.gpu != gpu.info.index || task->feedback == nullptr) continue;
    if (task->wave_memory.size() >= 2) {
      measure(task->wave_memory.begin()->second, std::next(task->wave_memory.begin())->second);
    }
    if (!task->memory.empty()) foregrounds.push_back(task.get());
  }
  for (size_t a = 0; a + 1 < foregrounds.size(); ++a) {
    for (size_t b = a + 1; b < foregrounds.size(); ++b) {
      if (foregrounds[a]->labels.job == foregrounds[b]->labels.job &&
          foregrounds[a]->labels.namespace_name == foregrounds[b]->labels.namespace_name) {
        measure(foregrounds[a]->memory, foregrounds[b]->memory);
      }
    }
  }
  gpu.metrics->SetMemoryWave(summary);
}

absl::StatusOr<MemoryWave> Agent::AnalyzeForegroundAllocatorWave(
    const Gpu& gpu, const std::vector<GpuSample>& samples, const MemoryWaveOptions& options) {
  // A caching allocator (LibTorch's) keeps the memory it reserved, so the device's used memory
  // stays flat while the tensors training holds rise and fall every iteration; the foreground's
  // own allocator reports show that wave. Of several foregrounds, the one holding the most.
  const Task* largest = nullptr;
  for (const auto& [session, task] : tasks_) {
    if (task->labels.gpu != gpu.info.index || task->labels.role != Role::kForeground ||
        task->memory.empty()) {
      continue;
    }
    if (largest == nullptr ||
        task->memory.back().allocated_bytes > largest->memory.back().allocated_bytes) {
      largest = task.get();
    }
  }
  if (largest == nullptr) return absl::NotFoundError("no foreground allocator reports");
  absl::StatusOr<MemoryWave> wave = AnalyzeMemoryWave(AllocatedPoints(largest->memory), options);
  // The headroom others may use is under what the device has handed out, reserved included.
  if (wave.ok() && options.capacity_bytes.has_value() && !samples.empty()) {
    std::uint64_t used = 0;
    for (const GpuSample& sample : samples) used = std::max(used, sample.memory_used_bytes);
    wave->headroom_bytes =
        HeadroomBytes(*options.capacity_bytes, std::max<std::uint64_t>(used, wave->peak_bytes));
  }
  return wave;
}

void Agent::AdviseBackground(Gpu& gpu) {
  double worst = 1, limit = options_.feedback.default_max_slowdown;
  bool foreground = false;
  for (const auto& [session, task] : tasks_) {
    if (task->labels.gpu != gpu.info.index || task->feedback == nullptr) continue;
    foreground = true;
    if (task->feedback->SlowdownRatio() / task->feedback->max_slowdown() >= worst / limit) {
      worst = task->feedback->SlowdownRatio();
      limit = task->feedback->max_slowdown();
    }
  }
  if (!foreground) return;
  for (const auto& [session, task] : tasks_) {
    if (task->labels.gpu != gpu.info.index || task->labels.role != Role::kBackground ||
        task->batch_size == 0) {
      continue;
    }
    const std::uint32_t recommended = task->advisor->Check(worst, limit, task->batch_size);
    if (recommended == 0) continue;
    task->recommended_batch_size = recommended;
    task->metrics->SetRecommendedBatchSize(recommended);
    SendPolicy(*task);
  }
}

}  // namespace wavepool::agent
