// Collectives and point-to-point transfers among the ranks of a gang, over c10d process groups
// (Gloo; tensors on a GPU travel through host copies). One group spans the world; one more exists
// for every distinct set of ranks that must all-reduce together (a burst-parallel stage's sync
// group, a tick-tock wave), so that each set's collectives never wait for ranks outside it.
//
// Every operation is asynchronous: it returns a Pending that the caller waits on, so that sends,
// receives and all-reduces of one iteration overlap with compute. Messages between two ranks
// with the same tag arrive in the order they were sent.
//
// Thread safety: a Communicator is safe for concurrent use, but the collectives of one group must
// be issued in the same order on all its members (c10d's rule). Ownership: it owns its groups and
// shares the store; a Pending keeps what it needs alive.
#ifndef WAVEPOOL_RUNTIME_COMMUNICATOR_H_
#define WAVEPOOL_RUNTIME_COMMUNICATOR_H_

#include <torch/torch.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/runtime/rendezvous.h"

namespace wavepool::runtime {

namespace internal {
struct PendingWork;
struct ProcessGroups;
struct ProcessGroup;
}  // namespace internal

// An operation in flight. Move-only; waiting twice returns the first result.
class Pending {
 public:
  Pending();
  explicit Pending(std::shared_ptr<internal::PendingWork> work);
  ~Pending();
  Pending(Pending&&) noexcept;
  Pending& operator=(Pending&&) noexcept;

  // OK when done; Unavailable when a peer failed (its connection closed), DeadlineExceeded when
  // the operation did not finish within the communicator's timeout. A default Pending is done.
  absl::Status Wait();

 private:
  std::shared_ptr<internal::PendingWork> work_;
};

class Communicator {
 public:
  struct Options {
    // How long any one operation may take before the gang is declared broken.
    std::chrono::milliseconds timeout{std::chrono::minutes(5)};
    // The groups' keys in the store live under this name, so that two communicators on one
    // store (tick-tock's waves) never share a group.
    std::string name = "default";
  };

  // Joins the world group and a group for each distinct set in `rank_sets` that contains `rank`
  // and has at least two ranks; every rank must pass the same sets (they are created in one
  // sorted order everywhere, so that no two ranks wait for each other in different groups).
  // InvalidArgument for a rank set that is not ascending within [0, world_size).
  static absl::StatusOr<std::unique_ptr<Communicator>> Create(
      StorePtr store, int rank, int world_size, std::vector<std::vector<int>> rank_sets,
      Options options);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }

  // Sums `tensors` element-wise over the ranks of `ranks` (a set given to Create, or every rank)
  // in place. REQUIRES: this rank is in `ranks`. InvalidArgument for an unknown set.
  absl::StatusOr<Pending> AllReduceSum(const std::vector<int>& ranks,
                                       std::vector<torch::Tensor> tensors);
  // Copies `tensors` of rank `root` to every rank of `ranks`, in place.
  absl::StatusOr<Pending> Broadcast(const std::vector<int>& ranks, int root,
                                    std::vector<torch::Tensor> tensors);
  // Sends `tensor` (contiguous) to rank `peer`; Recv fills `tensor` (contiguous, the sent size)
  // from `peer`. tag >= 0.
  absl::StatusOr<Pending> Send(torch::Tensor tensor, int peer, int tag);
  absl::StatusOr<Pending> Recv(torch::Tensor tensor, int peer, int tag);
  // Every rank of the world, waited for.
  absl::Status Barrier();

 private:
  Communicator(int rank, int world_size, Options options);
  // The group of exactly `ranks`, or nullptr.
  const internal::ProcessGroup* FindGroup(const std::vector<int>& ranks) const;

  const int rank_;
  const int world_size_;
  const Options options_;
  std::unique_ptr<internal::ProcessGroups> groups_;  // constant after Create
};

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_COMMUNICATOR_H_
