// Generated traces (trace.h): Poisson arrivals, a weighted model mix, sizes from lists and
// log-uniform step counts, all from one seeded generator.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "random.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/planner/zoo.h"
#include "wavepool/simulate/trace.h"

namespace wavepool::simulate {
namespace {

absl::Status Bad(const std::string& field, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", problem));
}

absl::Status PositiveList(const std::string& field, const std::vector<std::int64_t>& values) {
  if (values.empty()) return Bad(field, "must list at least one value");
  for (std::int64_t v : values) {
    if (v < 1) return Bad(field, absl::StrCat("every value must be >= 1, got ", v));
  }
  return absl::OkStatus();
}

absl::Status StepRange(const std::string& field, std::int64_t lo, std::int64_t hi) {
  if (lo < 1 || hi < lo) {
    return Bad(field, absl::StrCat("must be 1 <= min <= max, got ", lo, " and ", hi));
  }
  return absl::OkStatus();
}

absl::Status ValidateModels(const std::vector<WeightedModel>& models) {
  if (models.empty()) return Bad("models", "must list at least one model");
  const std::vector<std::string> known = planner::BuiltinModelNames();
  for (const WeightedModel& m : models) {
    if (std::find(known.begin(), known.end(), m.model) == known.end()) {
      return Bad("models", absl::StrCat("unknown model \"", m.model,
                                        "\"; known: ", absl::StrJoin(known, ", ")));
    }
    if (!(m.weight > 0) || !std::isfinite(m.weight)) {
      return Bad("models", absl::StrCat("the weight of ", m.model, " must be > 0, got ", m.weight));
    }
  }
  return absl::OkStatus();
}

// The batches a foreground job of `gpus` GPUs may draw: those it can split (batch >= GPUs).
std::vector<std::int64_t> BatchesFor(const TraceOptions& o, std::int64_t gpus) {
  std::vector<std::int64_t> fit;
  for (std::int64_t b : o.foreground_batches) {
    if (b >= gpus) fit.push_back(b);
  }
  return fit;
}

const std::string& DrawModel(internal::Random& random, const std::vector<WeightedModel>& models,
                             double total_weight) {
  double u = random.Uniform() * total_weight;
  for (const WeightedModel& m : models) {
    if (u < m.weight) return m.model;
    u -= m.weight;
  }
  return models.back().model;  // u rounded up to the total
}

}  // namespace

absl::Status Validate(const TraceOptions& o) {
  if (o.jobs < 1) return Bad("jobs", absl::StrCat("must be >= 1, got ", o.jobs));
  if (!(o.foreground_share >= 0 && o.foreground_share <= 1)) {
    return Bad("foreground_share", absl::StrCat("must be in [0, 1], got ", o.foreground_share));
  }
  if (!(o.arrival_rate > 0) || !std::isfinite(o.arrival_rate)) {
    return Bad("arrival_rate", absl::StrCat("must be > 0 jobs per second, got ", o.arrival_rate));
  }
  WAVEPOOL_RETURN_IF_ERROR(ValidateModels(o.models));
  for (const absl::Status& s :
       {PositiveList("foreground_gpus", o.foreground_gpus),
        PositiveList("foreground_batches", o.foreground_batches),
        PositiveList("background_batches", o.background_batches),
        StepRange("foreground_steps", o.foreground_steps_min, o.foreground_steps_max),
        StepRange("background_steps", o.background_steps_min, o.background_steps_max)}) {
    WAVEPOOL_RETURN_IF_ERROR(s);
  }
  for (std::int64_t gpus : o.foreground_gpus) {
    if (BatchesFor(o, gpus).empty()) {
      return Bad("foreground_batches", absl::StrCat("no batch is >= ", gpus,
                                                    " GPUs (foreground_gpus): a job must have "
                                                    "at least one sample per GPU"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Trace> GenerateTrace(const TraceOptions& o) {
  WAVEPOOL_RETURN_IF_ERROR(Validate(o));
  internal::Random random(o.seed);
  double total_weight = 0;
  for (const WeightedModel& m : o.models) total_weight += m.weight;
  const int width = static_cast<int>(absl::StrCat(o.jobs - 1).size());
  Trace trace;
  trace.jobs.reserve(static_cast<std::size_t>(o.jobs));
  double now = 0;
  for (std::int64_t i = 0; i < o.jobs; ++i) {
    // Every draw happens for every job, whatever its role, so that changing one option (the
    // foreground share, say) leaves the other draws of the sequence where they were.
    now += random.Exponential(o.arrival_rate);
    const bool foreground = random.Uniform() < o.foreground_share;
    const std::string& model = DrawModel(random, o.models, total_weight);
    const std::int64_t gpus = o.foreground_gpus[random.Index(o.foreground_gpus.size())];
    const std::vector<std::int64_t> batches = BatchesFor(o, gpus);
    const std::int64_t fg_batch = batches[random.Index(batches.size())];
    const std::int64_t fg_steps = random.LogUniform(o.foreground_steps_min, o.foreground_steps_max);
    const std::int64_t bg_batch = o.background_batches[random.Index(o.background_batches.size())];
    const std::int64_t bg_steps = random.LogUniform(o.background_steps_min, o.background_steps_max);
    TraceJob job;
    job.role = foreground ? api::Role::kForeground : api::Role::kBackground;
    job.name = absl::StrFormat("%s-%0*d", foreground ? "fg" : "bg", width, i);
    job.arrival_seconds = now;
    job.model = model;
    job.gpus = foreground ? gpus : 1;
    job.global_batch = foreground ? fg_batch : bg_batch;
    job.steps = foreground ? fg_steps : bg_steps;
    trace.jobs.push_back(std::move(job));
  }
  return trace;
}

}  // namespace wavepool::simulate
