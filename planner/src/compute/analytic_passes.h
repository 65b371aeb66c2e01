// The kernels a layer launches, as the analytical compute cost model (compute_cost.h) prices them:
// each layer kind is broken into its forward and backward kernel passes, with the matrix-unit
// FLOPs and the HBM bytes of each. Internal to wavepool::planner.
#ifndef WAVEPOOL_PLANNER_SRC_COMPUTE_ANALYTIC_PASSES_H_
#define WAVEPOOL_PLANNER_SRC_COMPUTE_ANALYTIC_PASSES_H_

#include <cstdint>
#include <vector>

#include "wavepool/planner/compute_cost.h"
#include "wavepool/planner/model.h"

namespace wavepool::planner::internal {

// How a kernel reaches memory. A plain stream (element-wise kernels, casts) runs close to the HBM
// bandwidth; structured access (convolution and GEMM operands, layout transposes, BatchNorm's
// per-channel reductions, pooling windows) does not.
enum class MemoryAccess { kStreaming, kStructured };

// One kernel, or `kernels` launches priced together, of a layer's forward or backward pass.
struct KernelPass {
  int kernels = 1;
  double flops = 0;  // matrix-unit FLOPs; 0 for a memory-bound pass
  double work = 0;   // output elements of a matrix pass: the parallelism u(w) sees
  double bytes = 0;  // HBM bytes read and written
  MemoryAccess access = MemoryAccess::kStreaming;
};

struct LayerPasses {
  std::vector<KernelPass> forward;
  std::vector<KernelPass> backward;
};

// True when the layer's FLOPs run as matrix products (tensor cores, or FP32 GEMM kernels).
bool UsesMatrixUnits(LayerKind kind);

// The kernels `layer` runs on `batch` samples in `precision`.
// REQUIRES: batch >= 1; the layer was built by ModelBuilder (its shapes fit its kind).
LayerPasses PassesOf(const Layer& layer, std::int64_t batch, Precision precision);

}  // namespace wavepool::planner::internal

#endif  // WAVEPOOL_PLANNER_SRC_COMPUTE_ANALYTIC_PASSES_H_
