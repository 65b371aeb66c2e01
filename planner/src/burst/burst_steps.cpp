#include "burst/burst_steps.h"

#include <algorithm>
#include <cmath>

// The steps' inner loops vectorise well with AVX2; on x86-64 the loader picks that clone when the
// CPU has it (GCC function multiversioning) and the baseline one otherwise.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define WAVEPOOL_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define WAVEPOOL_VECTOR_CLONES
#endif

namespace wavepool::planner::burst {
namespace {

Nanos Normalize(Nanos t) { return t >= kInfeasible ? kInfeasible : t; }

int FirstInterNodeIndex(const CountSet& counts) {
  const auto it = std::find(counts.level.begin(), counts.level.end(), 1);
  return static_cast<int>(it - counts.level.begin());
}

void FillCosts(StepTable* t, bool relocated);

}  // namespace

StepTable MakeStepTable(const BurstProblem& problem, LayerId producer, LayerId layer, int n_in,
                        int n_out, bool relocated) {
  const CountSet& counts = problem.counts;
  const EdgeCost& edge = problem.out_edges[producer];
  StepTable t;
  t.n_in = n_in;
  t.n_out = n_out;
  t.split = FirstInterNodeIndex(counts);
  t.base = edge.base;
  for (size_t level = 0; level < 2; ++level) {
    // Same expression as EdgeCost::ShardTime, so that sums agree with the evaluator exactly.
    auto shard_time = [&](int k) {
      return std::llround(static_cast<double>(counts.shard[k]) * edge.per_sample_ns[level]);
    };
    for (int g = 0; g < n_in; ++g) t.f_in[level].push_back(shard_time(g));
    for (int x = 0; x < n_out; ++x) t.f_out[level].push_back(shard_time(x));
  }
  t.same_ok.assign(n_out, 1);
  t.up_ok.assign(n_out, 1);
  t.down_ok[0].assign(n_out, 1);
  t.down_ok[1].assign(n_out, 1);
  t.work.assign(n_out, 0);
  if (layer < 0) {
    FillCosts(&t, relocated);
    return t;
  }
  const bool pinned = problem.layers[layer].pinned;
  for (int x = 0; x < n_out; ++x) {
    const size_t own_level = x >= t.split ? 1 : 0;
    t.same_ok[x] = problem.AmplificationOkWithIngress(layer, x, 0);
    t.up_ok[x] =
        problem.AmplificationOkWithIngress(layer, x, t.base[own_level] + t.f_out[own_level][x]);
    for (size_t level = 0; level < 2; ++level) {
      t.down_ok[level][x] =
          problem.AmplificationOkWithIngress(layer, x, t.base[level] + t.f_out[level][x]);
    }
    t.work[x] = problem.layers[layer].work[x];
    if (pinned) t.up_ok[x] = t.down_ok[0][x] = t.down_ok[1][x] = 0;  // only the same GPUs
  }
  FillCosts(&t, relocated);
  return t;
}

namespace {

void FillCosts(StepTable* t, bool relocated) {
  const auto penalty = [](std::uint8_t ok) { return ok ? Nanos{0} : kInfeasible; };
  for (int x = 0; x < t->n_out; ++x) {
    // A relocated "same count" move is priced like a move to a larger count: x's level, x's
    // shard, and the same ingress test.
    const size_t own_level = x >= t->split ? 1 : 0;
    t->same_cost.push_back(
        relocated ? (t->up_ok[x] ? t->base[own_level] + t->f_out[own_level][x] : kInfeasible)
                  : penalty(t->same_ok[x]));
    t->up_cost.push_back(penalty(t->up_ok[x]));
    for (size_t level = 0; level < 2; ++level) {
      t->down_cost[level].push_back(t->down_ok[level][x] ? t->base[level] + t->f_out[level][x]
                                                         : kInfeasible);
    }
  }
}

}  // namespace

WAVEPOOL_VECTOR_CLONES void ForwardStep(const StepTable& t, const Nanos* in, Nanos* out,
                                        StepScratch* scratch) {
  const int n_in = t.n_in;
  const int n_out = t.n_out;
  const int split = std::min(t.split, n_out);
  // suffix_all[g] = min in[g..n_in); suffix_level0[g] = min in[g..min(split, n_in)); both are
  // kInfeasible past their ends up to n_out.
  const size_t size = static_cast<size_t>(std::max(n_in, n_out)) + 2;
  if (scratch->suffix_all.size() < size) {
    scratch->suffix_all.resize(size);
    scratch->suffix_level0.resize(size);
  }
  Nanos* suffix_all = scratch->suffix_all.data();
  Nanos* suffix_level0 = scratch->suffix_level0.data();
  const int level0_end = std::min(t.split, n_in);
  for (int g = n_in; g < n_out + 2; ++g) suffix_all[g] = kInfeasible;
  for (int g = level0_end; g < std::max(n_out, level0_end) + 2; ++g) suffix_level0[g] = kInfeasible;
  for (int g = n_in - 1; g >= 0; --g) suffix_all[g] = std::min(suffix_all[g + 1], in[g]);
  for (int g = level0_end - 1; g >= 0; --g)
    suffix_level0[g] = std::min(suffix_level0[g + 1], in[g]);
  const Nanos* same = t.same_cost.data();
  const Nanos* up = t.up_cost.data();
  const Nanos* down0 = t.down_cost[0].data();
  const Nanos* down1 = t.down_cost[1].data();
  const Nanos* f_in0 = t.f_in[0].data();
  const Nanos* f_in1 = t.f_in[1].data();
  const Nanos* work = t.work.data();
  // Destinations within one node: sources below pay level 0 on their own shard, sources above
  // pay their level on x's shard.
  Nanos prefix0 = kInfeasible, prefix1 = kInfeasible;
  const Nanos from_level1 = suffix_all[level0_end];  // every level-1 source is above x
  for (int x = 0; x < split; ++x) {
    Nanos best = (x < n_in ? in[x] : kInfeasible) + same[x];
    best = std::min(best, t.base[0] + prefix0 + up[x]);
    best = std::min(best, suffix_level0[x + 1] + down0[x]);
    best = std::min(best, from_level1 + down1[x]);
    out[x] = best >= kInfeasible ? kInfeasible : best + work[x];
    if (x < n_in) {
      prefix0 = std::min(prefix0, in[x] + f_in0[x]);
      prefix1 = std::min(prefix1, in[x] + f_in1[x]);
    }
  }
  if (split >= n_out) return;
  // Destinations spanning nodes: every transfer is level 1. Three passes, so that the last one
  // has no loop-carried dependency and vectorises.
  for (int g = split; g < level0_end; ++g) prefix1 = std::min(prefix1, in[g] + f_in1[g]);
  Nanos* prefix = suffix_level0;  // free again: level 0 is done
  const int shared = std::min(n_in, n_out);
  for (int x = split; x < n_out; ++x) {
    prefix[x] = prefix1;
    if (x < shared) prefix1 = std::min(prefix1, in[x] + f_in1[x]);
  }
  const Nanos base1 = t.base[1];
  for (int x = split; x < shared; ++x) {
    Nanos best = std::min(in[x] + same[x], base1 + prefix[x] + up[x]);
    best = std::min(best, suffix_all[x + 1] + down1[x]);
    out[x] = best >= kInfeasible ? kInfeasible : best + work[x];
  }
  for (int x = std::max(split, shared); x < n_out; ++x) {
    const Nanos best = std::min(base1 + prefix[x] + up[x], suffix_all[x + 1] + down1[x]);
    out[x] = best >= kInfeasible ? kInfeasible : best + work[x];
  }
}

WAVEPOOL_VECTOR_CLONES void ForwardStepFrom(const StepTable& t, int g, Nanos* out) {
  const size_t source_level = g >= t.split ? 1 : 0;
  for (int x = 0; x < t.n_out; ++x) {
    Nanos cost;
    if (x == g) {
      cost = t.same_cost[x];
    } else if (x < g) {  // to a smaller count: x's shard, at the source's level
      cost = t.down_cost[source_level][x];
    } else {  // to a larger count: the source's shard, at x's level
      const size_t level = x >= t.split ? 1 : 0;
      cost = t.base[level] + t.f_in[level][g] + t.up_cost[x];
    }
    out[x] = cost >= kInfeasible ? kInfeasible : cost + t.work[x];
  }
}

void AddWorkToRows(const StepTable& t, Matrix* m) {
  for (int x = 0; x < m->rows; ++x) {
    Nanos* row = m->Row(x);
    for (int h = 0; h < m->cols; ++h) row[h] = SaturatingAdd(row[h], t.work[x]);
  }
}

WAVEPOOL_VECTOR_CLONES Matrix LeftStep(const StepTable& t, const Matrix& right) {
  const int cols = right.cols;
  Matrix result(t.n_in, cols);
  // Ascending sweep: destinations y < g (smaller counts) at the source's level L(g).
  std::array<std::vector<Nanos>, 2> below{std::vector<Nanos>(cols, kInfeasible),
                                          std::vector<Nanos>(cols, kInfeasible)};
  for (int g = 0; g < t.n_in; ++g) {
    Nanos* row = result.Row(g);
    if (g < t.n_out && t.same_cost[g] < kInfeasible) {
      const Nanos same = t.same_cost[g];
      const Nanos* src = right.Row(g);
      for (int h = 0; h < cols; ++h) row[h] = src[h] + same;
    }
    const size_t level = g >= t.split ? 1 : 0;
    const Nanos base = t.base[level];
    const Nanos* acc = below[level].data();
    for (int h = 0; h < cols; ++h) row[h] = std::min(row[h], base + acc[h]);
    if (g >= t.n_out) continue;
    for (size_t l = 0; l < 2; ++l) {
      if (!t.down_ok[l][g]) continue;
      const Nanos f = t.f_out[l][g];
      const Nanos* src = right.Row(g);
      Nanos* dst = below[l].data();
      for (int h = 0; h < cols; ++h) dst[h] = std::min(dst[h], src[h] + f);
    }
  }
  // Descending sweep: destinations y > g (larger counts) at the destination's level L(y).
  std::array<std::vector<Nanos>, 2> above{std::vector<Nanos>(cols, kInfeasible),
                                          std::vector<Nanos>(cols, kInfeasible)};
  auto absorb = [&](int y) {
    if (!t.up_ok[y]) return;
    const Nanos* src = right.Row(y);
    Nanos* dst = above[y >= t.split ? 1 : 0].data();
    for (int h = 0; h < cols; ++h) dst[h] = std::min(dst[h], src[h]);
  };
  for (int y = t.n_out - 1; y >= t.n_in; --y) absorb(y);
  for (int g = t.n_in - 1; g >= 0; --g) {
    Nanos* row = result.Row(g);
    for (size_t l = 0; l < 2; ++l) {
      const Nanos add = t.base[l] + t.f_in[l][g];
      const Nanos* acc = above[l].data();
      for (int h = 0; h < cols; ++h) row[h] = std::min(row[h], acc[h] + add);
    }
    if (g < t.n_out) absorb(g);
  }
  for (Nanos& v : result.data) v = Normalize(v);
  return result;
}

Matrix MinPlus(const Matrix& a, const Matrix& b) {
  Matrix c(a.rows, b.cols);
  for (int i = 0; i < a.rows; ++i) {
    Nanos* out = c.Row(i);
    for (int k = 0; k < a.cols; ++k) {
      const Nanos left = a.At(i, k);
      if (left >= kInfeasible) continue;
      const Nanos* right = b.Row(k);
      for (int j = 0; j < b.cols; ++j) out[j] = std::min(out[j], left + right[j]);
    }
    for (int j = 0; j < c.cols; ++j) out[j] = Normalize(out[j]);
  }
  return c;
}

}  // namespace wavepool::planner::burst
