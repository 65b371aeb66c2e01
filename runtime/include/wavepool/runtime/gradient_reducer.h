// Gradient all-reduce in buckets, started as backward produces them (the scheme of PyTorch's
// DistributedDataParallel): a stage's layers are grouped, in the order backward reaches them, into
// buckets of about bucket_bytes; when every layer of a bucket has its final gradient, the bucket
// is flattened and summed over the stage's sync group asynchronously, so communication overlaps
// the rest of backward. Finish waits and writes the sums back into the gradients.
//
// Thread safety: not synchronised; the thread running backward calls LayerReady and Finish.
#ifndef WAVEPOOL_RUNTIME_GRADIENT_REDUCER_H_
#define WAVEPOOL_RUNTIME_GRADIENT_REDUCER_H_

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <vector>

#include "absl/status/status.h"
#include "wavepool/runtime/communicator.h"

namespace wavepool::runtime {

class GradientReducer {
 public:
  // `layers` in the order backward finishes them, each with its parameters; `group` the ranks
  // that sum (this rank among them). The communicator must outlive the reducer.
  GradientReducer(Communicator* communicator, std::vector<int> group,
                  std::vector<std::pair<int, std::vector<torch::Tensor>>> layers,
                  std::int64_t bucket_bytes);

  // Layer `layer`'s gradients are final for this step; starts its bucket's all-reduce when the
  // bucket is complete. A parameter without a gradient counts as zeros.
  absl::Status LayerReady(int layer);
  // Waits for every bucket (starting any not yet started) and writes the sums into the
  // parameters' gradients. Resets for the next step.
  absl::Status Finish();

  int bucket_count() const { return static_cast<int>(buckets_.size()); }

 private:
  struct Bucket {
    std::vector<torch::Tensor> params;
    std::vector<int> layers;
    int ready = 0;
    torch::Tensor flat;  // the sums, while in flight
    Pending pending;
    bool started = false;
  };

  absl::Status Start(Bucket& bucket);

  Communicator* const communicator_;
  const std::vector<int> group_;
  std::vector<Bucket> buckets_;
  std::map<int, int> bucket_of_layer_;
};

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_GRADIENT_REDUCER_H_
