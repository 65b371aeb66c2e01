// Per-element FLOP costs shared by ModelBuilder's translation units (model_builder.h documents
// them).
#ifndef WAVEPOOL_PLANNER_SRC_MODEL_BUILDER_INTERNAL_H_
#define WAVEPOOL_PLANNER_SRC_MODEL_BUILDER_INTERNAL_H_

#include <cstdint>

namespace wavepool::planner::internal {

// BatchNorm / LayerNorm in training mode: sum and sum of squares (1 + 2), then x*a + b with
// a = gamma/sigma and b = beta - mu*a folded (2).
inline constexpr double kNormFlopsPerItem = 5;
// x/2 * (1 + erf(x/sqrt(2))) with a polynomial erf.
inline constexpr double kGeluFlopsPerItem = 8;
// max, subtract, exp, sum, divide.
inline constexpr double kSoftmaxFlopsPerItem = 5;

// PyTorch's output size of a window (ceil_mode=false). REQUIRES: n + 2*pad >= kernel, stride >= 1.
inline std::int64_t WindowOutput(std::int64_t n, int kernel, int stride, int pad) {
  return (n + 2 * std::int64_t{pad} - kernel) / stride + 1;
}

}  // namespace wavepool::planner::internal

#endif  // WAVEPOOL_PLANNER_SRC_MODEL_BUILDER_INTERNAL_H_
