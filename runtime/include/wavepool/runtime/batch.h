// A block of one step's global batch, as the data path hands it to an executor.
#ifndef WAVEPOOL_RUNTIME_BATCH_H_
#define WAVEPOOL_RUNTIME_BATCH_H_

#include <torch/torch.h>

#include <cstdint>

namespace wavepool::runtime {

// Samples [first_sample, first_sample + rows) of step `step`'s global batch. Plain value; the
// tensors are owned by the batch (contiguous, on the CPU).
struct Batch {
  torch::Tensor inputs;  // {rows, ...SampleSpec::shape}: float32 features or int64 token ids
  torch::Tensor labels;  // {rows} int64
  std::int64_t step = 0;
  std::int64_t first_sample = 0;

  std::int64_t rows() const { return labels.defined() ? labels.size(0) : 0; }
};

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_BATCH_H_
