// The burst search's inner kernels: min-plus steps across one edge of the model graph.
//
// A transfer from count index g to x costs A_L + F_L(max(s_g, s_x)), with shards s non-increasing
// in the index and the level L fixed by the larger index. So for a destination x, every smaller
// source g pays A_L(x) + F_L(x)(s_g) (a prefix minimum over g of in[g] + F(s_g)), and every larger
// source g pays A_L(g) + F_L(g)(s_x) (a suffix minimum over g of in[g], per level). The
// amplification test charges x its ingress A_L + F_L(s_x), which depends on the source only
// through L and whether the count changed, so it is a mask on x. Each step is therefore linear in
// the number of counts instead of quadratic, and a matrix step is quadratic instead of cubic.
#ifndef WAVEPOOL_PLANNER_SRC_BURST_BURST_STEPS_H_
#define WAVEPOOL_PLANNER_SRC_BURST_BURST_STEPS_H_

#include <array>
#include <cstdint>
#include <vector>

#include "wavepool/planner/burst_problem.h"

namespace wavepool::planner::burst {

// A dense count-indexed matrix of times; kInfeasible marks what cannot be reached.
struct Matrix {
  int rows = 0;
  int cols = 0;
  std::vector<Nanos> data;

  Matrix() = default;
  Matrix(int r, int c)
      : rows(r), cols(c), data(static_cast<size_t>(r) * static_cast<size_t>(c), kInfeasible) {}
  Nanos* Row(int r) { return data.data() + static_cast<size_t>(r) * static_cast<size_t>(cols); }
  const Nanos* Row(int r) const {
    return data.data() + static_cast<size_t>(r) * static_cast<size_t>(cols);
  }
  Nanos At(int r, int c) const { return Row(r)[c]; }
};

inline Nanos SaturatingAdd(Nanos a, Nanos b) {
  return (a >= kInfeasible || b >= kInfeasible) ? kInfeasible : a + b;
}

// Everything one edge (producer -> layer) needs, computed once and reused for every row.
// `layer` < 0 prices a bare transfer (into a join): no amplification test, no work.
struct StepTable {
  int n_in = 0;   // source counts: indices [0, n_in)
  int n_out = 0;  // destination counts: indices [0, n_out)
  int split = 0;  // first index at level 1 (== counts.size() when none)
  std::array<Nanos, 2> base{0, 0};
  std::array<std::vector<Nanos>, 2> f_in;   // F_L(s_g), g < n_in
  std::array<std::vector<Nanos>, 2> f_out;  // F_L(s_x), x < n_out
  std::vector<std::uint8_t> same_ok;        // x reached without a transfer passes the limit
  std::vector<std::uint8_t> up_ok;          // x reached from a smaller count passes
  std::array<std::vector<std::uint8_t>, 2> down_ok;  // x reached from a larger count of level L
  std::vector<Nanos> work;  // added to every reachable x (0 for a bare transfer)
  // The masks as additive costs, for the steps' branch-free loops: arriving from the same count
  // (0, or a full re-shard when relocated; kInfeasible when over the limit), and
  // A_L + F_L(s_x) (or kInfeasible) for arriving from a larger count of level L.
  std::vector<Nanos> same_cost, up_cost;
  std::array<std::vector<Nanos>, 2> down_cost;
};

// `relocated`: the layer's GPUs start at another rank than the producer's, so an equal count
// still moves every sample (BurstProblem::Transfer).
StepTable MakeStepTable(const BurstProblem& problem, LayerId producer, LayerId layer, int n_in,
                        int n_out, bool relocated = false);

// Reusable buffers so that steps do not allocate.
struct StepScratch {
  std::vector<Nanos> suffix_all, suffix_level0;
};

// out[x] = work[x] + min over g < n_in of in[g] + transfer(g -> x), over allowed edges.
void ForwardStep(const StepTable& table, const Nanos* in, Nanos* out, StepScratch* scratch);

// ForwardStep from a single source count g (in[g] = 0, every other entry unreachable).
void ForwardStepFrom(const StepTable& table, int g, Nanos* out);

// The same step applied on the left of a matrix: `right` has one row per destination count x
// (n_out rows, work[x] already included by the caller through AddWorkToRows); the result has one
// row per source count g (n_in rows) with right's columns.
Matrix LeftStep(const StepTable& table, const Matrix& right);

// Adds table.work[x] to row x of `m` (rows that fail the limit for every source stay reachable
// here; LeftStep applies the masks).
void AddWorkToRows(const StepTable& table, Matrix* m);

// Plain min-plus product (a * b), for branches holding more than one nested fork.
Matrix MinPlus(const Matrix& a, const Matrix& b);

}  // namespace wavepool::planner::burst

#endif  // WAVEPOOL_PLANNER_SRC_BURST_BURST_STEPS_H_
