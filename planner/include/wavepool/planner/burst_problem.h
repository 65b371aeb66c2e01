// The burst-parallel search's cost model (deeppool-burst-parallel §4.1), precomputed into integer
// nanosecond tables so that the search is exact: every plan's time is a sum of table entries, and
// sums of integers do not depend on the order they are added in.
//
// For a layer l at GPU count g (per-GPU batch s_g = ceil(B / g)):
//   work(l, g)     = compute(l, s_g) + sync(l, g)          (forward+backward, gradient all-reduce)
//   transfer(e, g -> x) = 0 when g == x on the same first rank, else
//                    A_L + F_{e,L}(max(s_g, s_x))           (samples re-sharded, forward + backward)
// where e is the edge's producer, L = level(max(g, x)) is intra-node when the larger count fits
// one node and inter-node otherwise, A_L = 2 alpha_L, F_{e,L}(s) = round(2 * s * bytes_e * beta_L):
// the busiest GPU sends or receives its whole shard (exact when one count is at least twice the
// other; an upper bound otherwise). A layer's GPU-time amplification is
//   amp(l, g -> x) = (work(l, x) + ingress(e, g -> x)) * x / work(l, 1),
//   ingress(e, g -> x) = 0 when g == x, else A_L + F_{e,L}(s_x)   (receiving its own shard),
// and must not exceed the amplification limit unless work(l, 1) is below the exemption threshold.
#ifndef WAVEPOOL_PLANNER_BURST_PROBLEM_H_
#define WAVEPOOL_PLANNER_BURST_PROBLEM_H_

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/api/enums.h"
#include "wavepool/planner/comm.h"
#include "wavepool/planner/compute_cost.h"
#include "wavepool/planner/model.h"

namespace wavepool::planner {

using Nanos = std::int64_t;
// "Unreachable": large enough to dominate any plan, small enough that adding two never overflows.
inline constexpr Nanos kInfeasible = std::numeric_limits<Nanos>::max() / 4;

// Powers of two (DeepPool's artifact) or every integer up to the job's GPUs.
using GpuCounts = api::GpuCounts;

struct BurstOptions {
  int max_gpus = 1;                 // G
  std::int64_t global_batch = 1;    // B
  double amplification_limit = 2.0;
  GpuCounts gpu_counts = GpuCounts::kPowersOfTwo;
  // Layers whose one-GPU work is below this are exempt from the limit (DeepPool's artifact: 300us).
  Seconds amplification_exempt_below = Microseconds(300);
  // Whether a fork's branches may run at the same time on separate GPUs (else one after another).
  bool parallel_branches = true;
};

// The candidate GPU counts of one search, ascending. Index k is a "count index".
struct CountSet {
  std::vector<int> gpus;
  std::vector<std::int64_t> shard;  // ceil(B / gpus[k]): the busiest GPU's samples
  std::vector<int> level;           // 0: fits one node, 1: spans nodes
  int size() const { return static_cast<int>(gpus.size()); }
};

// Transfer cost of a producer's activations (per edge out of that layer), per level.
struct EdgeCost {
  std::array<Nanos, 2> base{0, 0};              // A_L
  std::array<double, 2> per_sample_ns{0, 0};    // F_{e,L}(s) = llround(s * per_sample_ns[L])

  Nanos ShardTime(int level, std::int64_t shard) const;
};

struct LayerCost {
  std::vector<Nanos> work;  // by count index
  Nanos single = 0;         // work at one GPU (the whole batch)
  bool exempt = false;      // from the amplification limit
  // Runs on its producer's GPUs: an in-place layer (ReLU or BatchNorm writing into its input,
  // a flatten view) cannot move its input to other GPUs. DeepPool's artifact penalises changing
  // the count before these layers; here it is a constraint.
  bool pinned = false;
};

// A series-parallel decomposition of the model graph: a series of elements, each a layer or a
// block (a fork's branches running to their join). Branch series may be empty (an edge straight
// from the fork to the join, e.g. a residual connection).
struct SpSeries;
struct SpElement {
  bool is_block = false;
  LayerId layer = 0;                // a layer element: the layer; a block: its join layer
  std::vector<SpSeries> branches;   // a block's branches, in the join's input order
};
struct SpSeries {
  std::vector<SpElement> elements;
};

// Everything the search and the evaluator need, immutable once built.
// Invariants: layers.size() == model.size(); every work vector has counts.size() entries.
struct BurstProblem {
  BurstOptions options;
  CountSet counts;
  std::vector<LayerCost> layers;    // by LayerId
  std::vector<EdgeCost> out_edges;  // by producer LayerId
  std::vector<std::string> layer_names;
  std::vector<std::vector<LayerId>> inputs;  // by LayerId
  SpSeries tree;                    // the whole model
  double amp_budget_scale = 0;      // == options.amplification_limit
  // No layer may run at a count index below this: a memory bound (a smaller count gives a GPU
  // more samples than fit; MakePlan's fallback). 0 allows every count.
  int min_count = 0;

  int num_layers() const { return static_cast<int>(layers.size()); }
  // Transfer from count index g to x along `producer`'s edge. `relocated`: the receiving GPUs
  // start at another rank than the sending ones (a branch running beside others), so even an
  // equal count moves every sample.
  Nanos Transfer(LayerId producer, int g, int x, bool relocated = false) const;
  // What the receiving layer is charged in its amplification.
  Nanos Ingress(LayerId producer, int g, int x, bool relocated = false) const;
  // Whether `layer` may run at count index x when reached from count index g over `producer`'s
  // edge (producer < 0: no transfer, as for the first layer or a join): x >= min_count, it
  // respects the amplification limit, and a pinned layer stays on its producer's GPUs.
  bool EdgeAllowed(LayerId layer, LayerId producer, int g, int x, bool relocated = false) const;
  // The same test (min_count and the limit) for a given ingress time.
  bool AmplificationOkWithIngress(LayerId layer, int x, Nanos ingress) const;
  // Number of count indices whose GPU count is <= cap (a prefix of the counts).
  int CountsUpTo(int cap_gpus) const;
  // GPUs each branch of `block` may use when the branches run at the same time inside a group of
  // `cap_gpus` GPUs: every non-empty branch gets at least one, the rest is shared in proportion to
  // the branches' one-GPU work (largest remainder, ties to the earlier branch); empty branches get
  // 0. Branch b runs on the ranks after those the branches before it use. Empty result when
  // there are more non-empty branches than GPUs.
  std::vector<int> ParallelCaps(const SpElement& block, int cap_gpus) const;
};

// Decomposes `inputs` (per layer, topologically ordered) into a series-parallel tree.
// InvalidArgument when the graph is not series-parallel (a join of branches from different
// forks), has several layers reading the model input, or several outputs.
absl::StatusOr<SpSeries> DecomposeSeriesParallel(const std::vector<std::vector<LayerId>>& inputs,
                                                 const std::vector<std::string>& names);

// Candidate counts: powers of two up to G, or every integer 1..G, without counts above B (a GPU
// without a sample).
CountSet MakeCountSet(int max_gpus, std::int64_t global_batch, GpuCounts mode, int gpus_per_node);

// Prices every layer of `model` at every candidate count. Of several counts with the same shard,
// only the smallest is kept when that is exact: when every layer's work is non-decreasing in the
// count at an equal shard and the inter-node level costs at least the intra-node one (then any
// plan using the larger count is matched by one using the smaller). InvalidArgument for a bad
// request (B < 1, G < 1, limit < 1), a negative or non-finite cost, costs whose largest entries
// could add up past what the int64 nanoseconds count (kInfeasible / 2, about 36 years; the message
// names the layer where they do), or a graph the search does not support.
absl::StatusOr<BurstProblem> BuildBurstProblem(const ModelGraph& model,
                                               const ComputeCostModel& compute,
                                               const CommModel& comm, const BurstOptions& options);

}  // namespace wavepool::planner

#endif  // WAVEPOOL_PLANNER_BURST_PROBLEM_H_
