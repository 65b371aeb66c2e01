#include "wavepool/planner/memory_timeline.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::planner {
namespace {

constexpr double kMaxSamples = 1e7;

absl::Status ValidateStep(const std::vector<MemoryStep>& steps, size_t i, Seconds period) {
  const MemoryStep& step = steps[i];
  const std::string field = absl::StrCat("steps[", i, "]");
  if (i == 0 && step.start != Seconds(0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".start: the first step must start at 0, got ", step.start.count()));
  }
  if (i > 0 && !(step.start > steps[i - 1].start)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".start: must be greater than steps[",
                                                   i - 1, "].start (", steps[i - 1].start.count(),
                                                   " s), got ", step.start.count(), " s"));
  }
  if (!(step.start < period)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".start: must be below the period (",
                                                   period.count(), " s), got ", step.start.count(),
                                                   " s"));
  }
  if (step.bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".bytes: must be >= 0, got ", step.bytes));
  }
  return absl::OkStatus();
}

// Appends a step unless it lasts no time: a zero-duration step is overwritten by the next one.
void AppendStep(std::vector<MemoryStep>& steps, Seconds& now, Seconds duration, Bytes bytes,
                LayerId layer, MemoryPhase phase) {
  if (duration <= Seconds(0)) return;
  steps.push_back({now, bytes, layer, phase});
  now += duration;
}

absl::Status ValidateBuildInputs(std::int64_t per_gpu_batch, const TrainingMemoryOptions& options) {
  if (per_gpu_batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("per_gpu_batch: must be >= 1, got ", per_gpu_batch));
  }
  if (options.optimizer_moments < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory.optimizer_moments: must be >= 0 (0 SGD, 1 momentum, 2 Adam), got ",
                     options.optimizer_moments));
  }
  if (options.update_time < Seconds(0)) {
    return absl::InvalidArgumentError(absl::StrCat("memory.update_time: must be >= 0 s, got ",
                                                   options.update_time.count(), " s"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view MemoryPhaseName(MemoryPhase phase) {
  switch (phase) {
    case MemoryPhase::kForward:
      return "forward";
    case MemoryPhase::kBackward:
      return "backward";
    case MemoryPhase::kUpdate:
      return "update";
    case MemoryPhase::kOther:
      break;
  }
  return "other";
}

absl::StatusOr<MemoryTimeline> MemoryTimeline::FromSteps(std::vector<MemoryStep> steps,
                                                         Seconds period) {
  if (!(period > Seconds(0)) || !std::isfinite(period.count())) {
    return absl::InvalidArgumentError(
        absl::StrCat("period: must be a finite time > 0 s, got ", period.count(), " s"));
  }
  if (steps.empty()) return absl::InvalidArgumentError("steps: must hold at least one step");
  for (size_t i = 0; i < steps.size(); ++i) {
    WAVEPOOL_RETURN_IF_ERROR(ValidateStep(steps, i, period));
  }
  return MemoryTimeline(std::move(steps), period);
}

Seconds MemoryTimeline::Duration(size_t i) const {
  const Seconds end = i + 1 < steps_.size() ? steps_[i + 1].start : period_;
  return end - steps_[i].start;
}

Bytes MemoryTimeline::Peak() const { return PeakStep().bytes; }

Bytes MemoryTimeline::Trough() const {
  Bytes trough = steps_.front().bytes;
  for (const MemoryStep& step : steps_) trough = std::min(trough, step.bytes);
  return trough;
}

double MemoryTimeline::MeanBytes() const {
  double weighted = 0;
  for (size_t i = 0; i < steps_.size(); ++i) {
    weighted += static_cast<double>(steps_[i].bytes) * Duration(i).count();
  }
  return weighted / period_.count();
}

const MemoryStep& MemoryTimeline::PeakStep() const {
  // max_element returns the first of equal maxima: the earliest time the peak is reached.
  return *std::max_element(
      steps_.begin(), steps_.end(),
      [](const MemoryStep& a, const MemoryStep& b) { return a.bytes < b.bytes; });
}

Bytes MemoryTimeline::At(Seconds t) const {
  double phase = std::fmod(t.count(), period_.count());
  if (phase < 0) phase += period_.count();
  if (!(phase < period_.count())) phase = 0;  // fmod rounding on a negative t
  const auto after =
      std::upper_bound(steps_.begin(), steps_.end(), Seconds(phase),
                       [](Seconds value, const MemoryStep& step) { return value < step.start; });
  return std::prev(after)->bytes;
}

absl::StatusOr<std::vector<MemorySample>> MemoryTimeline::Sample(double rate_hz, Seconds duration,
                                                                 Seconds phase) const {
  if (!(rate_hz > 0) || !std::isfinite(rate_hz)) {
    return absl::InvalidArgumentError(absl::StrCat("rate_hz: must be > 0, got ", rate_hz));
  }
  if (!(duration >= Seconds(0))) {
    return absl::InvalidArgumentError(
        absl::StrCat("duration: must be >= 0 s, got ", duration.count(), " s"));
  }
  // The epsilon keeps 0.29 s * 100 Hz at 29 samples despite rounding.
  const double count = std::floor(duration.count() * rate_hz + 1e-9);
  if (count > kMaxSamples) {
    return absl::InvalidArgumentError(absl::StrCat("duration: ", duration.count(), " s at ",
                                                   rate_hz, " Hz exceeds ", kMaxSamples,
                                                   " samples"));
  }
  std::vector<MemorySample> samples;
  samples.reserve(static_cast<size_t>(count));
  for (std::int64_t k = 0; k < static_cast<std::int64_t>(count); ++k) {
    const Seconds t = phase + Seconds(static_cast<double>(k) / rate_hz);
    samples.push_back({t, At(t)});
  }
  return samples;
}

Bytes ResidentStateBytes(std::int64_t params, int optimizer_moments) {
  return params * kBytesPerItem * (2 + optimizer_moments);
}

Bytes LayerActivationBytes(const Layer& layer, std::int64_t batch) {
  const std::int64_t output_items = layer.reuses_input_memory ? 0 : layer.output.Elements();
  return batch * kBytesPerItem * (output_items + layer.internal_activation_items);
}

Bytes InputBatchBytes(const ModelGraph& graph, std::int64_t batch) {
  return batch * kBytesPerItem * graph.input_shape().Elements();
}

Seconds IterationComputeTime(const ModelGraph& graph, const ComputeCostModel& cost,
                             std::int64_t per_gpu_batch) {
  Seconds total{0};
  for (const Layer& layer : graph.layers()) total += cost.Time(layer, per_gpu_batch).Total();
  return total;
}

absl::StatusOr<MemoryTimeline> BuildMemoryTimeline(const ModelGraph& graph,
                                                   const ComputeCostModel& cost,
                                                   std::int64_t per_gpu_batch,
                                                   const TrainingMemoryOptions& options) {
  WAVEPOOL_RETURN_IF_ERROR(ValidateBuildInputs(per_gpu_batch, options));
  std::vector<LayerTime> times;
  times.reserve(static_cast<size_t>(graph.size()));
  for (const Layer& layer : graph.layers()) {
    const LayerTime time = cost.Time(layer, per_gpu_batch);
    if (time.forward < Seconds(0) || time.backward < Seconds(0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model ", graph.name(), ", layer ", layer.id, " (", layer.name, "): the cost model (",
          cost.Description(), ") gives a negative time at batch ", per_gpu_batch));
    }
    times.push_back(time);
  }
  const Bytes resident = ResidentStateBytes(graph.TotalParams(), options.optimizer_moments);
  Bytes level = resident + (options.hold_input_batch ? InputBatchBytes(graph, per_gpu_batch) : 0);
  std::vector<MemoryStep> steps;
  Seconds now{0};
  // Forward: layer i's output is allocated when its forward starts.
  for (const Layer& layer : graph.layers()) {
    level += LayerActivationBytes(layer, per_gpu_batch);
    AppendStep(steps, now, times[static_cast<size_t>(layer.id)].forward, level, layer.id,
               MemoryPhase::kForward);
  }
  // Backward in reverse: layer i's activation is freed when its backward ends.
  for (LayerId id = graph.size() - 1; id >= 0; --id) {
    AppendStep(steps, now, times[static_cast<size_t>(id)].backward, level, id,
               MemoryPhase::kBackward);
    level -= LayerActivationBytes(graph.layer(id), per_gpu_batch);
  }
  AppendStep(steps, now, options.update_time, resident, MemoryStep::kNoLayer, MemoryPhase::kUpdate);
  if (steps.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("model ", graph.name(), ": the cost model (", cost.Description(),
                     ") gives a zero iteration time at batch ", per_gpu_batch,
                     "; a memory timeline needs a positive period"));
  }
  return MemoryTimeline::FromSteps(std::move(steps), now);
}

}  // namespace wavepool::planner
