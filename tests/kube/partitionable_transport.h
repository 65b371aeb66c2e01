// A Transport that forwards to another until told to fail: a client cut off from the API server
// (a network partition), for the informer's and leader election's fault tests.
#ifndef WAVEPOOL_TESTS_KUBE_PARTITIONABLE_TRANSPORT_H_
#define WAVEPOOL_TESTS_KUBE_PARTITIONABLE_TRANSPORT_H_

#include <atomic>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/kube/transport.h"

namespace wavepool::kube::testing {

class PartitionableTransport final : public Transport {
 public:
  explicit PartitionableTransport(std::unique_ptr<Transport> inner) : inner_(std::move(inner)) {}

  // While partitioned every request fails with Unavailable, as a refused connection does.
  void set_partitioned(bool partitioned) { partitioned_ = partitioned; }

  absl::StatusOr<HttpResponse> Send(const HttpRequest& request) override {
    if (partitioned_) return absl::UnavailableError("partitioned");
    return inner_->Send(request);
  }

  absl::StatusOr<std::unique_ptr<LineReader>> Stream(const HttpRequest& request) override {
    if (partitioned_) return absl::UnavailableError("partitioned");
    return inner_->Stream(request);
  }

 private:
  std::unique_ptr<Transport> inner_;
  std::atomic<bool> partitioned_{false};
};

}  // namespace wavepool::kube::testing

#endif  // WAVEPOOL_TESTS_KUBE_PARTITIONABLE_TRANSPORT_H_
