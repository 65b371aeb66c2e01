#include "wavepool/agent/simulated_gpu.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gpu/simulated_gpu_engine.h"
#include "wavepool/base/fnv1a.h"
#include "wavepool/base/plural.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::agent {
namespace {

constexpr int kGpuBits = 6;  // ids carry their GPU in the low bits
constexpr std::uint32_t kMaxGpus = 1u << kGpuBits;

// SplitMix64 (Steele et al.): a tiny generator whose sequence is fixed for a seed on every
// platform, unlike the standard distributions.
std::uint64_t SplitMix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

bool NonNegativeFinite(double value) { return std::isfinite(value) && value >= 0; }

absl::Status ValidateOptions(const SimulatedGpuOptions& o) {
  auto bad = [](const char* field, const std::string& valid, auto got) {
    return absl::InvalidArgumentError(
        absl::StrCat("simulated GPU options: ", field, ": must be ", valid, ", got ", got));
  };
  if (o.gpus < 1 || o.gpus > kMaxGpus) return bad("gpus", "in 1..64", o.gpus);
  if (o.name.empty()) return bad("name", "non-empty", "\"\"");
  if (o.memory_bytes == 0) return bad("memory_bytes", "> 0", 0);
  const InterferenceModel& m = o.interference;
  if (!NonNegativeFinite(m.foreground_sharing)) {
    return bad("interference.foreground_sharing", ">= 0", m.foreground_sharing);
  }
  if (!NonNegativeFinite(m.foreground_blocking)) {
    return bad("interference.foreground_blocking", ">= 0", m.foreground_blocking);
  }
  if (!(m.priority_factor >= 0 && m.priority_factor <= 1)) {
    return bad("interference.priority_factor", "in [0, 1]", m.priority_factor);
  }
  if (!NonNegativeFinite(m.background_sharing)) {
    return bad("interference.background_sharing", ">= 0", m.background_sharing);
  }
  if (!(o.duration_jitter >= 0 && o.duration_jitter < 1)) {
    return bad("duration_jitter", "in [0, 1)", o.duration_jitter);
  }
  if (o.sample_window.count() <= 0) return bad("sample_window", "> 0 ns", o.sample_window.count());
  if (o.history < o.sample_window) {
    return bad("history", ">= sample_window", absl::StrCat(o.history.count(), " ns"));
  }
  return absl::OkStatus();
}

absl::Status ValidateGroup(const OpGroupSpec& g) {
  auto bad = [](const char* field, const std::string& valid, auto got) {
    return absl::InvalidArgumentError(
        absl::StrCat("op group: ", field, ": must be ", valid, ", got ", got));
  };
  if (g.solo_duration.count() < 0) return bad("solo_duration", ">= 0 ns", g.solo_duration.count());
  if (!(g.intensity > 0 && g.intensity <= 1)) return bad("intensity", "in (0, 1]", g.intensity);
  if (g.kernel_duration.count() < 0 || g.kernel_duration > g.solo_duration) {
    return bad("kernel_duration",
               absl::StrCat("in [0, solo_duration (", g.solo_duration.count(), " ns)]"),
               absl::StrCat(g.kernel_duration.count(), " ns"));
  }
  return absl::OkStatus();
}

// Hashed with FNV-1a, stable across releases: a node's UUIDs survive an agent upgrade.
std::string SimulatedUuid(std::uint64_t seed, std::string_view node_name, std::uint32_t index) {
  std::uint64_t node = Fnv1a64(node_name);
  std::uint64_t state = SplitMix64(node) ^ seed ^ (0xA24BAED4963EE407ull * (index + 1));
  const std::uint64_t h = SplitMix64(state);
  return absl::StrFormat("GPU-sim-%04x-%04x-%04x-%012x", index, (h >> 48) & 0xFFFF,
                         (h >> 32) & 0xFFFF, h & 0xFFFFFFFFFFFFull);
}

}  // namespace

absl::StatusOr<std::unique_ptr<SimulatedGpus>> SimulatedGpus::Create(
    Clock& clock, const SimulatedGpuOptions& options) {
  WAVEPOOL_RETURN_IF_ERROR(ValidateOptions(options));
  return std::unique_ptr<SimulatedGpus>(new SimulatedGpus(clock, options));
}

SimulatedGpus::SimulatedGpus(Clock& clock, const SimulatedGpuOptions& options)
    : clock_(clock), options_(options), created_(clock.Now()), rng_state_(options.seed) {
  for (std::uint32_t i = 0; i < options.gpus; ++i) {
    const std::string uuid = SimulatedUuid(options.seed, options.node_name, i);
    gpus_.push_back({i, uuid, options.name, options.memory_bytes, {}});
    engines_.push_back(std::make_unique<SimulatedGpuEngine>(
        options.interference, options.memory_bytes, options.history, created_));
  }
}

SimulatedGpus::~SimulatedGpus() = default;

MonotonicTime SimulatedGpus::AdvanceLocked() {
  const MonotonicTime now = clock_.Now();
  for (auto& engine : engines_) engine->AdvanceTo(now);
  return now;
}

absl::StatusOr<SimulatedGpuEngine*> SimulatedGpus::EngineForIdLocked(std::uint64_t id,
                                                                     const char* what) {
  const std::uint64_t gpu = id & (kMaxGpus - 1);
  if (gpu >= engines_.size() || (id >> kGpuBits) == 0) {
    return absl::NotFoundError(absl::StrCat(what, " ", id, ": not from this simulated device"));
  }
  return engines_[gpu].get();
}

double SimulatedGpus::NextJitterLocked() {
  if (options_.duration_jitter == 0) return 1.0;
  const double unit = static_cast<double>(SplitMix64(rng_state_) >> 11) * 0x1.0p-53;  // [0, 1)
  return 1.0 + options_.duration_jitter * (2.0 * unit - 1.0);
}

absl::StatusOr<SimulatedTaskId> SimulatedGpus::AddTask(GpuIndex gpu, const SimulatedTask& task) {
  absl::MutexLock lock(&mu_);
  if (gpu >= engines_.size()) {
    return absl::NotFoundError(
        absl::StrCat("GPU ", gpu, ": the simulated device has ", engines_.size(), " GPUs"));
  }
  AdvanceLocked();
  const SimulatedTaskId id = (next_serial_++ << kGpuBits) | gpu;
  WAVEPOOL_RETURN_IF_ERROR(engines_[gpu]->AddTask(id, task));
  return id;
}

absl::Status SimulatedGpus::RemoveTask(SimulatedTaskId task) {
  absl::MutexLock lock(&mu_);
  WAVEPOOL_ASSIGN_OR_RETURN(SimulatedGpuEngine * engine, EngineForIdLocked(task, "simulated task"));
  AdvanceLocked();
  return engine->RemoveTask(task);
}

absl::StatusOr<OpGroupId> SimulatedGpus::Submit(SimulatedTaskId task, const OpGroupSpec& group) {
  WAVEPOOL_RETURN_IF_ERROR(ValidateGroup(group));
  absl::MutexLock lock(&mu_);
  WAVEPOOL_ASSIGN_OR_RETURN(SimulatedGpuEngine * engine, EngineForIdLocked(task, "simulated task"));
  AdvanceLocked();
  const OpGroupId id = (next_serial_++ << kGpuBits) | (task & (kMaxGpus - 1));
  const double solo_ns = static_cast<double>(group.solo_duration.count()) * NextJitterLocked();
  // A kernel lasts at least 1 ns so that the blocking term's ratio is defined.
  const double kernel_ns = std::max(
      1.0, static_cast<double>(group.kernel_duration.count() > 0 ? group.kernel_duration.count()
                                                                 : group.solo_duration.count()));
  WAVEPOOL_RETURN_IF_ERROR(engine->Submit(task, id, solo_ns, group.intensity, kernel_ns));
  return id;
}

absl::StatusOr<GroupTiming> SimulatedGpus::Timing(OpGroupId group) {
  absl::MutexLock lock(&mu_);
  WAVEPOOL_ASSIGN_OR_RETURN(SimulatedGpuEngine * engine, EngineForIdLocked(group, "op group"));
  AdvanceLocked();
  return engine->Timing(group);
}

absl::Status SimulatedGpus::WaitForCompletion(OpGroupId group) {
  while (true) {
    std::chrono::nanoseconds wait{0};
    {
      absl::MutexLock lock(&mu_);
      WAVEPOOL_ASSIGN_OR_RETURN(SimulatedGpuEngine * engine, EngineForIdLocked(group, "op group"));
      const MonotonicTime now = AdvanceLocked();
      WAVEPOOL_ASSIGN_OR_RETURN(GroupTiming timing, engine->Timing(group));
      if (timing.complete) return absl::OkStatus();
      wait =
          std::max<std::chrono::nanoseconds>(std::chrono::nanoseconds(1), timing.completion - now);
    }
    clock_.SleepFor(wait);
  }
}

absl::Status SimulatedGpus::SetAllocatedBytes(SimulatedTaskId task, std::uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  WAVEPOOL_ASSIGN_OR_RETURN(SimulatedGpuEngine * engine, EngineForIdLocked(task, "simulated task"));
  AdvanceLocked();
  return engine->SetAllocated(task, bytes);
}

absl::StatusOr<std::uint64_t> SimulatedGpus::MemoryUsedAt(GpuIndex gpu, MonotonicTime time) {
  absl::MutexLock lock(&mu_);
  if (gpu >= engines_.size()) return absl::NotFoundError(absl::StrCat("GPU ", gpu, ": unknown"));
  const MonotonicTime now = AdvanceLocked();
  if (time > now) {
    return absl::InvalidArgumentError(absl::StrCat("memory at ", ToMonotonicNanos(time),
                                                   " ns: in the future (now ",
                                                   ToMonotonicNanos(now), " ns)"));
  }
  return engines_[gpu]->MemoryUsedAt(time);
}

absl::StatusOr<WindowStats> SimulatedGpus::Window(GpuIndex gpu, MonotonicTime from,
                                                  MonotonicTime to) {
  absl::MutexLock lock(&mu_);
  if (gpu >= engines_.size()) return absl::NotFoundError(absl::StrCat("GPU ", gpu, ": unknown"));
  const MonotonicTime now = AdvanceLocked();
  if (!(from < to && to <= now)) {
    return absl::InvalidArgumentError(
        absl::StrCat("window [", ToMonotonicNanos(from), ", ", ToMonotonicNanos(to),
                     ") ns: must satisfy from < to <= now (", ToMonotonicNanos(now), " ns)"));
  }
  const MonotonicTime oldest = std::max(created_, now - options_.history);
  if (from < oldest) {
    return absl::FailedPreconditionError(
        absl::StrCat("window from ", ToMonotonicNanos(from),
                     " ns: older than the simulated GPU's history, which starts at ",
                     ToMonotonicNanos(oldest), " ns"));
  }
  return engines_[gpu]->Window(from, to);
}

absl::StatusOr<GpuSample> SimulatedGpus::Sample(GpuIndex index) {
  absl::MutexLock lock(&mu_);
  if (index >= engines_.size()) {
    return absl::NotFoundError(
        absl::StrCat("GPU ", index, ": the simulated device has ", engines_.size(), " GPUs"));
  }
  const MonotonicTime now = AdvanceLocked();
  GpuSample sample;
  sample.time = now;
  sample.memory_used_bytes = engines_[index]->memory_used();
  const MonotonicTime from = std::max(created_, now - options_.sample_window);
  WindowStats stats;  // an empty window (the device was just created): idle
  if (from < now) {
    WAVEPOOL_ASSIGN_OR_RETURN(WindowStats window, engines_[index]->Window(from, now));
    stats = std::move(window);
  }
  sample.utilization = stats.utilization;
  sample.sm_occupancy = stats.sm_occupancy.foreground + stats.sm_occupancy.background;
  sample.processes = std::move(stats.processes);
  return sample;
}

std::string SimulatedGpus::Describe() const {
  return absl::StrCat("simulated, ", Plural(gpus_.size(), "GPU"), " (seed ", options_.seed, ")");
}

}  // namespace wavepool::agent
