// Per-layer forward and backward times of a model, measured with the runtime's own modules
// (executable_model.h), for `wavepool profile`: the planner's measured cost model
// (planner/profile.h) then plans with what this machine's layers really cost.
//
// Each layer is timed on its own, in training mode, on random inputs of the planner's shapes
// (token ids for an embedding, labels for a loss): forward on inputs detached from any graph and
// requiring gradients, then torch::autograd::backward of its output with a gradient of ones (the
// input and weight gradients), as DeepPool profiles layers (deeppool-burst-parallel §6). Times are
// the median over the repeats that follow the warm-up runs. On the CPU they are wall times with
// LibTorch's intra-op thread pool; on a GPU each layer's forward and backward are captured as
// CUDA graphs after the warm-up and each replay is timed between CUDA events, as DeepPool's
// profiler does: the GPU time of the layer's kernels, without the CPU's launch gaps (a dropout
// layer, whose masks come from the host, is timed eagerly between events).
//
// This header pulls in no LibTorch header, so that the command-line code that uses it compiles
// without it.
#ifndef WAVEPOOL_RUNTIME_LAYER_PROFILER_H_
#define WAVEPOOL_RUNTIME_LAYER_PROFILER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/planner/compute_cost.h"
#include "wavepool/planner/model.h"

namespace wavepool::runtime {

struct ProfileOptions {
  std::vector<std::int64_t> batch_sizes;  // per-GPU batches, strictly ascending, each >= 1
  int warmup = 2;                         // untimed runs before the timed ones, in [0, 1000000]
  int repeats = 5;  // timed runs per (layer, batch), in [1, 1000000]; the median counts
  int threads = 0;  // LibTorch's intra-op threads for the whole process, in [0, 1024] (0: default)
  std::uint64_t seed = 0;      // initial weights and the random inputs
  std::string device = "cpu";  // where to time: cpu, cuda, cuda:N (replica_device.h ParseDevice)
};

// InvalidArgument naming the field ("batch_sizes: ...") when `options` breaks a rule above;
// "device: ..." with ParseDevice's code when the device is not one LibTorch sees.
absl::Status ValidateProfileOptions(const ProfileOptions& options);

// The median times of one layer at each batch.
struct MeasuredLayer {
  planner::LayerId layer = 0;
  std::map<std::int64_t, planner::LayerTime> by_batch;
};

// Called after each batch size is measured (for progress output); may be empty.
using ProfileProgress = std::function<void(std::int64_t batch, const std::vector<MeasuredLayer>&)>;

// Measures every layer of `graph` at every batch of `options`; the result is in graph order.
// InvalidArgument for invalid options or a graph the runtime cannot build (ExecutableModel::Build's
// message, naming the layer); a LibTorch error while timing (a batch too small for a BatchNorm
// over 1x1 maps, memory) is Internal naming the layer and the batch. Not thread-safe with other
// LibTorch work in the process: the timings would include it.
absl::StatusOr<std::vector<MeasuredLayer>> ProfileLayers(const planner::ModelGraph& graph,
                                                         const ProfileOptions& options,
                                                         const ProfileProgress& progress = {});

// `measured` as the planner's profile CSV (planner/profile.h, DeepPool's columns) of model
// graph.name(): one row per (batch, layer the planner can bind), where a layer binds when
// planner::SignatureOf gives it a signature; the rows' layer_idx count those layers in graph
// order, their name and params_json are DeepPool's ("conv2d", "ReLU2d", "maxPool2d", ...), so that
// planner::MakeProfiledCostModel binds row k to the k-th such layer. Layers without a signature
// (joins, norms, transformer blocks, ...) are left out: the planner costs them analytically.
std::string FormatProfileCsv(const planner::ModelGraph& graph,
                             const std::vector<MeasuredLayer>& measured);

// How many of `graph`'s layers FormatProfileCsv writes rows for.
int ProfiledLayerCount(const planner::ModelGraph& graph);

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_LAYER_PROFILER_H_
