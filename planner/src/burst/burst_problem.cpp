#include "wavepool/planner/burst_problem.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::planner {
namespace {

// A plan's time is a sum of at most one work entry per layer and one transfer per edge, to which
// the search adds kInfeasible to mark what it cannot reach: keeping every such sum at or below this
// keeps it below kInfeasible and every addition in range. About 36 years.
constexpr double kMaxPlanNanos = static_cast<double>(kInfeasible / 2);

// Saturates at kInfeasible instead of overflowing: the edges' latencies come from a network
// model, and BuildBurstProblem rejects any entry above kMaxPlanNanos.
Nanos ToNanos(Seconds s) {
  return std::llround(std::min(s.count() * 1e9, static_cast<double>(kInfeasible)));
}

// Parses a topologically ordered DAG into series and blocks (deeppool-burst-parallel §4.2,
// "Multi-chain graph reduction": each fork's branches are reduced to one edge to its join).
class SeriesParallelParser {
 public:
  SeriesParallelParser(const std::vector<std::vector<LayerId>>& inputs,
                       const std::vector<std::string>& names)
      : inputs_(inputs), names_(names), successors_(inputs.size()) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      for (LayerId in : inputs[i]) successors_[in].push_back(static_cast<LayerId>(i));
    }
  }

  absl::StatusOr<SpSeries> Parse() {
    LayerId source = -1;
    for (size_t i = 0; i < inputs_.size(); ++i) {
      if (!inputs_[i].empty()) continue;
      if (source >= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("burst search needs one layer reading the model input; ", Name(source),
                         " and ", Name(static_cast<LayerId>(i)), " both do"));
      }
      source = static_cast<LayerId>(i);
    }
    if (source < 0) return absl::InvalidArgumentError("no layer reads the model input");
    SpSeries tree;
    WAVEPOOL_ASSIGN_OR_RETURN(LayerId end, ParseSeries(source, &tree));
    if (end >= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("layer ", Name(end), " joins branches that no single fork opened"));
    }
    if (covered_ != inputs_.size()) {
      return absl::InvalidArgumentError("some layers are not reachable from the model input");
    }
    return tree;
  }

 private:
  std::string Name(LayerId id) const { return names_[id]; }
  const std::vector<LayerId>& Succ(LayerId id) const { return successors_[id]; }
  bool IsJoin(LayerId id) const { return inputs_[id].size() > 1; }

  // Appends the series starting at `first` to `out`; returns the join it runs into (which ends
  // the enclosing branch), or -1 at the model's output.
  absl::StatusOr<LayerId> ParseSeries(LayerId first, SpSeries* out) {
    LayerId u = first;
    while (true) {
      out->elements.push_back(SpElement{false, u, {}});
      ++covered_;
      while (Succ(u).size() > 1) {
        SpElement block;
        WAVEPOOL_ASSIGN_OR_RETURN(LayerId join, ParseBlock(u, &block));
        out->elements.push_back(std::move(block));
        ++covered_;
        u = join;
      }
      if (Succ(u).empty()) return -1;
      const LayerId next = Succ(u).front();
      if (IsJoin(next)) return next;
      u = next;
    }
  }

  absl::StatusOr<LayerId> ParseBlock(LayerId fork, SpElement* block) {
    block->is_block = true;
    LayerId join = -1;
    std::vector<LayerId> outputs;
    for (LayerId start : Succ(fork)) {
      SpSeries branch;
      LayerId end = start;
      if (!IsJoin(start)) {
        WAVEPOOL_ASSIGN_OR_RETURN(LayerId reached, ParseSeries(start, &branch));
        if (reached < 0) {
          return absl::InvalidArgumentError(absl::StrCat("the branch of fork ", Name(fork), " at ",
                                                         Name(start),
                                                         " reaches the model output unjoined"));
        }
        end = reached;
      }
      if (join >= 0 && end != join) {
        return absl::InvalidArgumentError(
            absl::StrCat("graph is not series-parallel: branches of fork ", Name(fork),
                         " end at different joins ", Name(join), " and ", Name(end)));
      }
      join = end;
      outputs.push_back(branch.elements.empty() ? fork : branch.elements.back().layer);
      block->branches.push_back(std::move(branch));
    }
    std::vector<LayerId> join_inputs = inputs_[join];
    std::sort(outputs.begin(), outputs.end());
    std::sort(join_inputs.begin(), join_inputs.end());
    if (outputs != join_inputs) {
      return absl::InvalidArgumentError(absl::StrCat("graph is not series-parallel: join ",
                                                     Name(join),
                                                     " takes inputs from outside the "
                                                     "branches of fork ",
                                                     Name(fork)));
    }
    block->layer = join;
    return join;
  }

  const std::vector<std::vector<LayerId>>& inputs_;
  const std::vector<std::string>& names_;
  std::vector<std::vector<LayerId>> successors_;
  size_t covered_ = 0;
};

EdgeCost MakeEdgeCost(const Layer& producer, const CommModel& comm, int max_gpus) {
  // Level 1 is only used by counts beyond one node; price it at the job's scale.
  const Link links[2] = {comm.LinkFor(1),
                         comm.LinkFor(std::max(max_gpus, comm.network().gpus_per_node + 1))};
  EdgeCost edge;
  for (size_t level = 0; level < 2; ++level) {
    // Forward activations and backward gradients both cross (x2).
    edge.base[level] = 2 * ToNanos(links[level].alpha);
    edge.per_sample_ns[level] = 2.0 * static_cast<double>(producer.OutputBytesPerSample()) *
                                links[level].beta_s_per_byte * 1e9;
  }
  return edge;
}

// Removes count indices whose shard equals a smaller count's, when that is exact (see header).
void PruneEqualShards(BurstProblem* problem) {
  const CountSet& counts = problem->counts;
  for (const EdgeCost& edge : problem->out_edges) {
    if (edge.base[1] < edge.base[0] || edge.per_sample_ns[1] < edge.per_sample_ns[0]) return;
  }
  std::vector<int> keep;
  for (int k = 0; k < counts.size(); ++k) {
    if (!keep.empty() && counts.shard[keep.back()] == counts.shard[k]) {
      for (const LayerCost& layer : problem->layers) {
        if (layer.work[k] < layer.work[keep.back()]) return;
      }
      continue;
    }
    keep.push_back(k);
  }
  if (static_cast<int>(keep.size()) == counts.size()) return;
  CountSet pruned;
  for (int k : keep) {
    pruned.gpus.push_back(counts.gpus[k]);
    pruned.shard.push_back(counts.shard[k]);
    pruned.level.push_back(counts.level[k]);
  }
  for (LayerCost& layer : problem->layers) {
    std::vector<Nanos> work;
    for (int k : keep) work.push_back(layer.work[k]);
    layer.work = std::move(work);
  }
  problem->counts = std::move(pruned);
}

// The most a transfer along `edge` can cost: the whole batch at the slower level, in doubles.
double LargestTransferNanos(const EdgeCost& edge, const CountSet& counts) {
  double largest = 0;
  for (size_t level = 0; level < 2; ++level) {
    largest = std::max(largest,
                       static_cast<double>(edge.base[level]) +
                           static_cast<double>(counts.shard.front()) * edge.per_sample_ns[level]);
  }
  return largest;
}

// Every count's work of `layer`: its compute at the count's shard plus its gradient all-reduce.
absl::StatusOr<std::vector<Seconds>> LayerTimes(const ModelGraph& model, const Layer& layer,
                                                const ComputeCostModel& compute,
                                                const CommModel& comm, const CountSet& counts) {
  std::vector<Seconds> times;
  for (int k = 0; k < counts.size(); ++k) {
    const Seconds time = compute.Time(layer, counts.shard[k]).Total() +
                         comm.AllReduce(layer.ParamBytes(), counts.gpus[k]);
    // The search marks what cannot be reached by adding kInfeasible, which needs costs >= 0.
    if (!(time.count() >= 0) || !std::isfinite(time.count())) {
      return absl::InvalidArgumentError(
          absl::StrCat("model ", model.name(), ", layer ", layer.name, ": the cost model gives ",
                       time.count(), " s at ", counts.shard[k], " samples per GPU"));
    }
    times.push_back(time);
  }
  return times;
}

}  // namespace

Nanos EdgeCost::ShardTime(int level, std::int64_t shard) const {
  const size_t l = static_cast<size_t>(level);
  return base[l] + std::llround(static_cast<double>(shard) * per_sample_ns[l]);
}

Nanos BurstProblem::Transfer(LayerId producer, int g, int x, bool relocated) const {
  if (g == x && !relocated) return 0;
  const int wide = std::max(g, x);  // count indices are ascending in GPUs
  const std::int64_t shard = std::max(counts.shard[g], counts.shard[x]);
  return out_edges[producer].ShardTime(counts.level[wide], shard);
}

Nanos BurstProblem::Ingress(LayerId producer, int g, int x, bool relocated) const {
  if (g == x && !relocated) return 0;
  const int wide = std::max(g, x);
  return out_edges[producer].ShardTime(counts.level[wide], counts.shard[x]);
}

bool BurstProblem::EdgeAllowed(LayerId layer, LayerId producer, int g, int x,
                               bool relocated) const {
  if (producer >= 0 && layers[layer].pinned && (g != x || relocated)) return false;
  return AmplificationOkWithIngress(layer, x,
                                    producer < 0 ? 0 : Ingress(producer, g, x, relocated));
}

bool BurstProblem::AmplificationOkWithIngress(LayerId layer, int x, Nanos ingress) const {
  if (x < min_count) return false;
  const LayerCost& cost = layers[layer];
  if (cost.exempt) return true;
  const double gpu_time = static_cast<double>(cost.work[x] + ingress) * counts.gpus[x];
  return gpu_time <= amp_budget_scale * static_cast<double>(cost.single);
}

int BurstProblem::CountsUpTo(int cap_gpus) const {
  return static_cast<int>(std::upper_bound(counts.gpus.begin(), counts.gpus.end(), cap_gpus) -
                          counts.gpus.begin());
}

namespace {

Nanos SeriesWork(const BurstProblem& problem, const SpSeries& series) {
  Nanos total = 0;
  for (const SpElement& element : series.elements) {
    total += problem.layers[element.layer].single;
    for (const SpSeries& branch : element.branches) total += SeriesWork(problem, branch);
  }
  return total;
}

}  // namespace

std::vector<int> BurstProblem::ParallelCaps(const SpElement& block, int cap_gpus) const {
  const size_t n = block.branches.size();
  std::vector<int> caps(n, 0);
  std::vector<Nanos> weight(n, 0);
  int busy = 0;
  Nanos total = 0;
  for (size_t b = 0; b < n; ++b) {
    if (block.branches[b].elements.empty()) continue;
    caps[b] = 1;
    ++busy;
    weight[b] = SeriesWork(*this, block.branches[b]);
    total += weight[b];
  }
  if (busy > cap_gpus) return {};
  const Nanos spare = cap_gpus - busy;
  if (spare == 0 || busy == 0) return caps;
  // Largest remainder apportionment of the spare GPUs; equal weights when all work is zero.
  std::vector<std::pair<Nanos, size_t>> remainders;
  Nanos given = 0;
  for (size_t b = 0; b < n; ++b) {
    if (caps[b] == 0) continue;
    const Nanos w = total > 0 ? weight[b] : 1;
    const Nanos t = total > 0 ? total : busy;
    const Nanos quota = spare * w / t;
    caps[b] += static_cast<int>(quota);
    given += quota;
    remainders.emplace_back(-(spare * w % t), b);
  }
  std::sort(remainders.begin(), remainders.end());
  for (size_t i = 0; given < spare; ++i, ++given) caps[remainders[i].second] += 1;
  return caps;
}

absl::StatusOr<SpSeries> DecomposeSeriesParallel(const std::vector<std::vector<LayerId>>& inputs,
                                                 const std::vector<std::string>& names) {
  return SeriesParallelParser(inputs, names).Parse();
}

CountSet MakeCountSet(int max_gpus, std::int64_t global_batch, GpuCounts mode, int gpus_per_node) {
  CountSet counts;
  const std::int64_t limit = std::min<std::int64_t>(max_gpus, global_batch);
  for (std::int64_t g = 1; g <= limit; g = (mode == GpuCounts::kPowersOfTwo) ? g * 2 : g + 1) {
    counts.gpus.push_back(static_cast<int>(g));
    counts.shard.push_back((global_batch + g - 1) / g);
    counts.level.push_back(g <= gpus_per_node ? 0 : 1);
  }
  return counts;
}

absl::StatusOr<BurstProblem> BuildBurstProblem(const ModelGraph& model,
                                               const ComputeCostModel& compute,
                                               const CommModel& comm, const BurstOptions& options) {
  if (options.max_gpus < 1) {
    return absl::InvalidArgumentError(absl::StrCat("gpus: must be >= 1, got ", options.max_gpus));
  }
  if (options.global_batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("global batch: must be >= 1, got ", options.global_batch));
  }
  if (!(options.amplification_limit >= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("amplification limit: must be >= 1.0, got ", options.amplification_limit));
  }
  BurstProblem problem;
  problem.options = options;
  problem.amp_budget_scale = options.amplification_limit;
  problem.counts = MakeCountSet(options.max_gpus, options.global_batch, options.gpu_counts,
                                comm.network().gpus_per_node);
  const Nanos exempt_below = ToNanos(options.amplification_exempt_below);
  double bound_ns = 0;  // the most one plan's work and transfer entries can add up to
  for (const Layer& layer : model.layers()) {
    problem.layer_names.push_back(layer.name);
    problem.inputs.push_back(layer.inputs);
    problem.out_edges.push_back(MakeEdgeCost(layer, comm, options.max_gpus));
    WAVEPOOL_ASSIGN_OR_RETURN(std::vector<Seconds> times,
                              LayerTimes(model, layer, compute, comm, problem.counts));
    double largest_ns = 0;  // this layer's work and what its inputs' transfers may cost
    for (Seconds time : times) largest_ns = std::max(largest_ns, time.count() * 1e9);
    for (LayerId in : layer.inputs) {
      largest_ns += LargestTransferNanos(problem.out_edges[in], problem.counts);
    }
    bound_ns += largest_ns;
    // Checked while the times are still doubles: a larger one would overflow the nanoseconds.
    if (!(bound_ns <= kMaxPlanNanos)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model ", model.name(), ", layer ", layer.name,
          ": the iteration up to this layer may take ", bound_ns * 1e-9,
          " s (this layer and its inputs' transfers up to ", largest_ns * 1e-9, " s at up to ",
          problem.counts.shard.front(), " samples per GPU), more than the ", kMaxPlanNanos * 1e-9,
          " s the burst search can count"));
    }
    LayerCost cost;
    for (Seconds time : times) cost.work.push_back(ToNanos(time));
    cost.single = cost.work.front();
    cost.exempt = cost.single < exempt_below;
    cost.pinned = layer.WorksInPlace();
    problem.layers.push_back(std::move(cost));
  }
  absl::StatusOr<SpSeries> tree = DecomposeSeriesParallel(problem.inputs, problem.layer_names);
  if (!tree.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model ", model.name(), ": ", tree.status().message()));
  }
  problem.tree = *std::move(tree);
  PruneEqualShards(&problem);
  return problem;
}

}  // namespace wavepool::planner
