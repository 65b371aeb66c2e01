// The samples each step trains on, and their pre-loading (scalednn-data-movement §IV-B).
//
// SampleOrder fixes which dataset sample sits at each position of each step's global batch: a
// pure function of (seed, epoch) that shuffles every epoch without materialising a permutation,
// so that a resumed job reads exactly what the uninterrupted one would have, from the step alone.
//
// A BatchLoader reads the blocks of the global batch one rank needs, step after step, and with
// preload on prepares the next step's blocks on a background thread while the current one trains.
#ifndef WAVEPOOL_RUNTIME_BATCH_LOADER_H_
#define WAVEPOOL_RUNTIME_BATCH_LOADER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "wavepool/runtime/batch.h"
#include "wavepool/runtime/sample_source.h"

namespace wavepool::runtime {

// Thread-compatible value; Index is const and may be called concurrently. Epoch e's order is a
// keyed Feistel permutation (key = (seed, e)) restricted to [0, dataset_size) by cycle walking:
// O(1) memory and a few hashes per index, whatever the dataset's size.
class SampleOrder {
 public:
  // REQUIRES: dataset_size >= 1, samples_per_step >= 1 (BatchLoader::Create checks both).
  SampleOrder(std::uint64_t seed, std::int64_t dataset_size, std::int64_t samples_per_step);

  // The dataset index of position `position` (in [0, samples_per_step)) of step `step` (>= 0):
  // the (step * samples_per_step + position)-th sample of an endless sequence of epochs, each a
  // different pseudo-random permutation of [0, dataset_size).
  // REQUIRES: (step + 1) * samples_per_step < 2^63.
  std::int64_t Index(std::int64_t step, std::int64_t position) const;
  std::int64_t samples_per_step() const { return samples_per_step_; }
  std::int64_t dataset_size() const { return dataset_size_; }

 private:
  std::uint64_t seed_;
  std::int64_t dataset_size_;
  std::int64_t samples_per_step_;
};

// A contiguous block of every step's global batch: positions [first, first + count).
struct BatchBlock {
  std::int64_t first = 0;
  std::int64_t count = 0;
};

// Thread safety: Next is called by one thread (the one training); wait_seconds may be read from
// any thread. Ownership: the loader shares the source and owns its pre-loading thread, which the
// destructor stops and joins: promptly even mid-step, since the thread checks for it between
// samples (one sample's Read is the longest it may take).
//
// Pre-loading (scalednn-data-movement §IV-B): with preload on, the thread starts reading the first
// step at Create and keeps at most one step ready ahead of the caller, so that step s+stride is
// read while step s trains. The rows of every Batch are the samples the SampleOrder puts at the
// block's positions, so the blocks of all ranks together are exactly one process's global batch
// (the CPU-centric split, scalednn-data-movement §IV-A): each rank reads only its own samples.
class BatchLoader {
 public:
  struct Options {
    bool preload = true;  // prepare step s+stride while step s trains
    // Steps this loader serves: first_step, first_step + step_stride, ... (tick-tock's waves
    // each read every other step).
    std::int64_t first_step = 0;
    std::int64_t step_stride = 1;
    // Where the batches go. On a CUDA device samples are read into pinned host memory and copied
    // on a copy stream of the loader's own as soon as a step is read, so that with preload on
    // the copy of step s+stride overlaps step s's kernels; Next makes the caller's current
    // stream wait for the copy (an event), never the CPU.
    torch::Device device = torch::kCPU;
  };

  // FailedPrecondition for a CUDA device LibTorch does not see. InvalidArgument when a block is
  // empty, negative or reaches past order.samples_per_step(), when
  // the order's dataset_size or samples_per_step is < 1 or its dataset_size exceeds the source's
  // size, when first_step < 0 or step_stride < 1, or when the source is null. No blocks is valid
  // (every Next returns none).
  static absl::StatusOr<std::unique_ptr<BatchLoader>> Create(SampleSourcePtr source,
                                                             SampleOrder order,
                                                             std::vector<BatchBlock> blocks,
                                                             Options options);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // The blocks of the next step, in the order given to Create (inputs {count, ...spec.shape},
  // labels {count}, step, first_sample = block.first), on Options::device and ready for work
  // on the calling thread's current stream there; the source's error, with the step, position
  // and sample index, if a sample could not be read (then every later call returns it too).
  absl::StatusOr<std::vector<Batch>> Next();

  // Seconds Next spent waiting for samples that were not ready (0 when pre-loading keeps up).
  double wait_seconds() const;

 private:
  class Impl;
  explicit BatchLoader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_BATCH_LOADER_H_
