// Random burst-search problems for property tests: random series-parallel graphs with random
// cost tables, and an exhaustive reference search over every assignment.
#ifndef WAVEPOOL_TESTS_PLANNER_BURST_RANDOM_PROBLEMS_H_
#define WAVEPOOL_TESTS_PLANNER_BURST_RANDOM_PROBLEMS_H_

#include <cstdint>
#include <set>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "wavepool/planner/burst_evaluate.h"
#include "wavepool/planner/burst_problem.h"

namespace wavepool::planner::testing {

struct RandomGraphShape {
  int max_layers = 6;
  int max_branches = 3;
  int max_branch_layers = 2;
  bool allow_nested = true;
  bool allow_empty_branches = true;
  bool allow_forks = true;
};

// Appends a random series to `inputs`, fed by `producer`; returns the series' last layer.
inline int AppendRandomSeries(std::mt19937* rng, const RandomGraphShape& shape, int producer,
                              int budget, int depth, std::vector<std::vector<LayerId>>* inputs) {
  auto add = [&](std::vector<LayerId> ins) {
    inputs->push_back(std::move(ins));
    return static_cast<int>(inputs->size()) - 1;
  };
  int last = producer < 0 ? add({}) : add({producer});
  int left = budget - 1;
  while (left > 0) {
    const bool fork = shape.allow_forks && left >= 2 && (depth == 0 || shape.allow_nested) &&
                      depth < 2 && std::uniform_int_distribution<int>(0, 2)(*rng) == 0;
    if (!fork) {
      last = add({last});
      --left;
      continue;
    }
    const int branches = std::uniform_int_distribution<int>(2, shape.max_branches)(*rng);
    std::vector<LayerId> ends;
    for (int b = 0; b < branches; ++b) {
      const int room = std::min(shape.max_branch_layers, left - 1);
      const int lo = shape.allow_empty_branches ? 0 : 1;
      const int len = room < lo ? room : std::uniform_int_distribution<int>(lo, room)(*rng);
      if (len == 0) {
        ends.push_back(last);
        continue;
      }
      ends.push_back(AppendRandomSeries(rng, shape, last, len, depth + 1, inputs));
      left -= len;
    }
    last = add(ends);  // the join
    --left;
  }
  return last;
}

// Random costs over the graph `inputs`: work falls with the count (with noise), sync grows,
// random edge costs and limits. Deterministic for a seed.
inline BurstProblem RandomCosts(std::vector<std::vector<LayerId>> inputs, std::mt19937& rng,
                                GpuCounts mode, int max_gpus) {
  BurstProblem p;
  p.options.max_gpus = max_gpus;
  p.options.global_batch = std::uniform_int_distribution<int>(max_gpus, 4 * max_gpus)(rng);
  p.options.gpu_counts = mode;
  p.options.amplification_limit = std::uniform_real_distribution<double>(1.0, 4.0)(rng);
  p.options.parallel_branches = std::uniform_int_distribution<int>(0, 4)(rng) != 0;
  p.amp_budget_scale = p.options.amplification_limit;
  const int gpus_per_node = std::uniform_int_distribution<int>(1, max_gpus)(rng);
  p.counts = MakeCountSet(max_gpus, p.options.global_batch, mode, gpus_per_node);
  std::uniform_int_distribution<Nanos> big(1000, 100000);
  std::uniform_int_distribution<Nanos> small(0, 20000);
  for (size_t l = 0; l < inputs.size(); ++l) {
    LayerCost cost;
    const Nanos per_sample = big(rng) / 10;
    const Nanos fixed = small(rng);
    const Nanos sync = small(rng) / 4;
    for (int k = 0; k < p.counts.size(); ++k) {
      const Nanos noise = std::uniform_int_distribution<Nanos>(0, 3000)(rng);
      cost.work.push_back(fixed + per_sample * p.counts.shard[k] +
                          sync * (p.counts.gpus[k] - 1) + noise);
    }
    cost.single = cost.work.front();
    cost.exempt = std::uniform_int_distribution<int>(0, 5)(rng) == 0;
    cost.pinned = inputs[l].size() == 1 && std::uniform_int_distribution<int>(0, 4)(rng) == 0;
    p.layers.push_back(cost);
    EdgeCost edge;
    edge.base = {small(rng) / 2, small(rng)};
    edge.per_sample_ns = {static_cast<double>(small(rng)) / 50.0,
                          static_cast<double>(small(rng)) / 20.0};
    p.out_edges.push_back(edge);
    p.layer_names.push_back(absl::StrCat("l", l));
  }
  p.inputs = std::move(inputs);
  p.tree = DecomposeSeriesParallel(p.inputs, p.layer_names).value();
  return p;
}

// A random problem over a random graph of the given shape.
inline BurstProblem RandomProblem(std::uint32_t seed, const RandomGraphShape& shape,
                                  GpuCounts mode, int max_gpus) {
  std::mt19937 rng(seed);
  std::vector<std::vector<LayerId>> inputs;
  const int layers = std::uniform_int_distribution<int>(2, shape.max_layers)(rng);
  AppendRandomSeries(&rng, shape, -1, layers, 0, &inputs);
  return RandomCosts(std::move(inputs), rng, mode, max_gpus);
}

inline void CollectJoins(const SpSeries& series, std::vector<LayerId>* joins) {
  for (const SpElement& element : series.elements) {
    if (!element.is_block) continue;
    joins->push_back(element.layer);
    for (const SpSeries& branch : element.branches) CollectJoins(branch, joins);
  }
}

// The best iteration time over every assignment of counts and branch modes (kInfeasible if none).
inline Nanos ExhaustiveOptimum(const BurstProblem& p) {
  const int n = p.num_layers();
  const int k = p.counts.size();
  std::vector<LayerId> joins;
  CollectJoins(p.tree, &joins);
  BurstAssignment a;
  a.count.assign(static_cast<size_t>(n), 0);
  a.mode.assign(static_cast<size_t>(n), BranchMode::kSerial);
  Nanos best = kInfeasible;
  const int mode_combos = 1 << joins.size();
  while (true) {
    for (int modes = 0; modes < mode_combos; ++modes) {
      for (size_t j = 0; j < joins.size(); ++j) {
        a.mode[joins[j]] = (modes >> j) & 1 ? BranchMode::kParallel : BranchMode::kSerial;
      }
      auto evaluation = EvaluateAssignment(p, a);
      if (evaluation.ok() && evaluation->iteration < best) best = evaluation->iteration;
    }
    int l = 0;
    while (l < n && ++a.count[l] == k) a.count[l++] = 0;
    if (l == n) break;
  }
  return best;
}

}  // namespace wavepool::planner::testing

#endif  // WAVEPOOL_TESTS_PLANNER_BURST_RANDOM_PROBLEMS_H_
