// The jobs a cluster simulation runs: foreground gangs and one-GPU background jobs arriving over
// time, either generated from a seed (Poisson arrivals, a model mix, sizes and step counts drawn
// from lists and ranges) or read from a CSV file (docs/simulate.md gives the format).
//
// All types are plain values: copyable, not synchronised. Generation is deterministic for a seed
// on every platform: it uses its own generator and distributions, never the standard library's
// (whose distributions differ between implementations).
#ifndef WAVEPOOL_SIMULATE_TRACE_H_
#define WAVEPOOL_SIMULATE_TRACE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/api/enums.h"

namespace wavepool::simulate {

// One job of a trace. A foreground job is a gang that asks for `gpus` GPUs and trains `steps`
// iterations of `global_batch` samples; the policy's plan decides how many GPUs it really holds
// (a burst-parallel plan may use fewer, deeppool-burst-parallel §4). A background job trains on
// one GPU, best effort, and may be preempted.
struct TraceJob {
  std::string name;  // unique within the trace
  api::Role role = api::Role::kForeground;
  double arrival_seconds = 0;     // >= 0
  std::string model;              // a built-in model (planner/zoo.h)
  std::int64_t gpus = 1;          // >= 1; exactly 1 for a background job
  std::int64_t global_batch = 1;  // >= gpus
  std::int64_t steps = 1;         // >= 1
};

// Jobs in arrival order (ties keep their order in the file or the generation).
struct Trace {
  std::vector<TraceJob> jobs;
};

// A model of the mix and its relative weight (> 0).
struct WeightedModel {
  std::string model;
  double weight = 1;
};

// How GenerateTrace draws a trace. Every list is a set of choices drawn uniformly; step counts
// are drawn log-uniformly from [min, max] (jobs of every order of magnitude are equally common).
struct TraceOptions {
  std::int64_t jobs = 1000;  // >= 1
  std::uint64_t seed = 1;
  double foreground_share = 0.5;  // in [0, 1]: the probability that a job is foreground
  // Jobs per second (> 0): Poisson arrivals. The default keeps 16 nodes of 8 A100s about
  // saturated with the default mix (an offered foreground load near 1, simulator.h); scale it
  // with the cluster.
  double arrival_rate = 0.2;
  std::vector<WeightedModel> models = {{"vgg16", 1},
                                       {"resnet50", 1},
                                       {"wide_resnet101_2", 1},
                                       {"inception_v3", 1},
                                       {"bert_base", 1}};
  std::vector<std::int64_t> foreground_gpus = {2, 4, 8, 16, 32};
  // Global batches of foreground jobs; a job draws among those >= its GPUs (strong scaling: the
  // batch is the job's, whatever the GPUs, deeppool-burst-parallel §2).
  std::vector<std::int64_t> foreground_batches = {32, 64, 128};
  std::int64_t foreground_steps_min = 1000;
  std::int64_t foreground_steps_max = 10000;
  // Background jobs train small batches so that their kernels stay short (deeppool §5, §7.3).
  std::vector<std::int64_t> background_batches = {8, 16};
  std::int64_t background_steps_min = 20000;
  std::int64_t background_steps_max = 200000;
};

// InvalidArgument naming the option (as `field: problem`) for an empty list, an unknown model,
// a non-positive weight, size or rate, min > max, or a foreground GPU count larger than every
// batch (no batch could train it).
absl::Status Validate(const TraceOptions& options);

// Jobs named "fg-<i>" and "bg-<i>" (i counts every job from 0, zero-padded to the width of the
// last index). REQUIRES nothing: errors as Validate.
absl::StatusOr<Trace> GenerateTrace(const TraceOptions& options);

// The column names of a CSV trace, in order.
inline constexpr std::string_view kTraceCsvHeader =
    "name,role,arrival_seconds,model,gpus,global_batch,steps";

// Reads a CSV trace: the header line above, then one job per line. Lines that are empty or start
// with '#' are skipped; CRLF line ends are accepted; fields are not quoted. Strict:
// InvalidArgument "<source>:<line>:<column>: <field>: <problem>" (column: 1-based, where the
// field starts) for a wrong header, a wrong field count, a role other than Foreground or
// Background, a number that is not one (or not finite, or out of range), an unknown model, a
// background job with gpus other than 1, a batch smaller than the GPUs, an arrival before the
// previous job's, or a repeated name; InvalidArgument "<source>: ..." for a trace with no job.
absl::StatusOr<Trace> ParseTraceCsv(std::string_view source, std::string_view text);

// The trace as ParseTraceCsv reads it (arrivals printed to round-trip exactly).
std::string FormatTraceCsv(const Trace& trace);

}  // namespace wavepool::simulate

#endif  // WAVEPOOL_SIMULATE_TRACE_H_
