#include "wavepool/runtime/gradient_reducer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime {

GradientReducer::GradientReducer(Communicator* communicator, std::vector<int> group,
                                 std::vector<std::pair<int, std::vector<torch::Tensor>>> layers,
                                 std::int64_t bucket_bytes)
    : communicator_(communicator), group_(std::move(group)) {
  std::int64_t bytes = 0;
  for (auto& [layer, params] : layers) {
    if (params.empty()) continue;
    if (buckets_.empty() || bytes >= bucket_bytes) {
      buckets_.emplace_back();
      bytes = 0;
    }
    Bucket& bucket = buckets_.back();
    bucket_of_layer_[layer] = static_cast<int>(buckets_.size()) - 1;
    bucket.layers.push_back(layer);
    for (torch::Tensor& p : params) {
      bytes += p.numel() * static_cast<std::int64_t>(p.element_size());
      bucket.params.push_back(p);
    }
  }
}

absl::Status GradientReducer::Start(Bucket& bucket) {
  std::vector<torch::Tensor> flat;
  flat.reserve(bucket.params.size());
  for (torch::Tensor& p : bucket.params) {
    const torch::Tensor& grad = p.grad();
    flat.push_back(grad.defined() ? grad.reshape({-1}) : torch::zeros({p.numel()}, p.options()));
  }
  bucket.flat = torch::cat(flat);
  WAVEPOOL_ASSIGN_OR_RETURN(Pending pending, communicator_->AllReduceSum(group_, {bucket.flat}));
  bucket.pending = std::move(pending);
  bucket.started = true;
  return absl::OkStatus();
}

absl::Status GradientReducer::LayerReady(int layer) {
  auto it = bucket_of_layer_.find(layer);
  if (it == bucket_of_layer_.end()) return absl::OkStatus();  // no parameters
  Bucket& bucket = buckets_[static_cast<std::size_t>(it->second)];
  if (++bucket.ready < static_cast<int>(bucket.layers.size())) return absl::OkStatus();
  return Start(bucket);
}

absl::Status GradientReducer::Finish() {
  absl::Status first_error;
  for (Bucket& bucket : buckets_) {
    if (!bucket.started) {
      if (absl::Status s = Start(bucket); !s.ok() && first_error.ok()) first_error = s;
    }
  }
  for (Bucket& bucket : buckets_) {
    absl::Status waited = bucket.pending.Wait();
    if (!waited.ok() && first_error.ok()) first_error = waited;
    if (waited.ok() && bucket.flat.defined()) {
      std::int64_t offset = 0;
      for (torch::Tensor& p : bucket.params) {
        torch::Tensor sum = bucket.flat.narrow(0, offset, p.numel()).view(p.sizes());
        offset += p.numel();
        if (p.grad().defined()) {
          p.mutable_grad().copy_(sum);
        } else {
          p.mutable_grad() = sum.clone();
        }
      }
    }
    bucket.ready = 0;
    bucket.started = false;
    bucket.flat = torch::Tensor();
    bucket.pending = Pending();
  }
  return first_error;
}

}  // namespace wavepool::runtime
