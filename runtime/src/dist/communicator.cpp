#include "wavepool/runtime/communicator.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "torch_compat.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime {
namespace internal {

struct PendingWork {
  compat::WorkPtr work;
  std::chrono::milliseconds timeout{0};
  std::string what;
  // Device tensors sent through host copies (StageThroughHost): after the work, host_tensors[i]
  // goes back to device_tensors[i]; device_tensors stays empty when the operation only reads.
  std::vector<torch::Tensor> device_tensors;
  std::vector<torch::Tensor> host_tensors;
  bool waited = false;
  absl::Status result;
};

struct ProcessGroup {
  compat::GlooGroupPtr group;
  std::vector<int> members;  // ascending global ranks
};

// One Gloo group per rank set; keys are the ascending member lists.
struct ProcessGroups {
  std::map<std::vector<int>, ProcessGroup> by_ranks;
  ProcessGroup world;
};

}  // namespace internal

namespace {

// What a collective does with the caller's tensors.
enum class Access {
  kReads,           // send, a broadcast's root
  kWrites,          // receive, a broadcast's other members
  kReadsAndWrites,  // all-reduce
};

// Gloo moves host memory: device tensors (a replica on a GPU) travel as host copies, made on the
// caller's current stream, so after the kernels that wrote them. Correct on any device, and the
// one copy each way is what Gloo's own CUDA path does too. An operation that only writes gets
// uninitialised host buffers: copying the device values out would be wasted.
std::vector<torch::Tensor> StageThroughHost(std::vector<torch::Tensor>& tensors, Access access,
                                            internal::PendingWork& pending) {
  std::vector<torch::Tensor> sent;
  sent.reserve(tensors.size());
  for (torch::Tensor& t : tensors) {
    if (t.device().is_cpu()) {
      sent.push_back(t);
      continue;
    }
    torch::Tensor host = access == Access::kWrites
                             ? torch::empty(t.sizes(), t.options().device(torch::kCPU))
                             : t.to(torch::kCPU);
    // The host copies live as long as the work, which reads or writes them.
    pending.host_tensors.push_back(host);
    if (access != Access::kReads) pending.device_tensors.push_back(t);
    sent.push_back(std::move(host));
  }
  return sent;
}

absl::Status CopyBackToDevice(internal::PendingWork& pending) {
  try {
    for (std::size_t i = 0; i < pending.device_tensors.size(); ++i) {
      pending.device_tensors[i].copy_(pending.host_tensors[i]);
    }
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat(pending.what, ": copying the result to the device: ", compat::ErrorText(e)));
  }
  return absl::OkStatus();
}

}  // namespace

Pending::Pending() = default;
Pending::Pending(std::shared_ptr<internal::PendingWork> work) : work_(std::move(work)) {}
Pending::~Pending() = default;
Pending::Pending(Pending&&) noexcept = default;
Pending& Pending::operator=(Pending&&) noexcept = default;

absl::Status Pending::Wait() {
  if (work_ == nullptr) return absl::OkStatus();
  if (!work_->waited) {
    work_->result = compat::Wait(work_->work, work_->timeout, work_->what);
    work_->waited = true;
    work_->work.reset();
    if (work_->result.ok()) work_->result = CopyBackToDevice(*work_);
    work_->device_tensors.clear();
    work_->host_tensors.clear();
  }
  return work_->result;
}

namespace {

absl::Status CheckRankSet(const std::vector<int>& ranks, int world_size) {
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= world_size || (i > 0 && ranks[i] <= ranks[i - 1])) {
      return absl::InvalidArgumentError(absl::StrCat("rank set {", absl::StrJoin(ranks, ","),
                                                     "} is not ascending within [0, ", world_size,
                                                     ")"));
    }
  }
  return absl::OkStatus();
}

int IndexIn(const std::vector<int>& members, int rank) {
  return static_cast<int>(std::lower_bound(members.begin(), members.end(), rank) - members.begin());
}

}  // namespace

Communicator::Communicator(int rank, int world_size, Options options)
    : rank_(rank),
      world_size_(world_size),
      options_(options),
      groups_(std::make_unique<internal::ProcessGroups>()) {}

Communicator::~Communicator() = default;

absl::StatusOr<std::unique_ptr<Communicator>> Communicator::Create(
    StorePtr store, int rank, int world_size, std::vector<std::vector<int>> rank_sets,
    Options options) {
  for (const std::vector<int>& set : rank_sets) {
    WAVEPOOL_RETURN_IF_ERROR(CheckRankSet(set, world_size));
  }
  std::sort(rank_sets.begin(), rank_sets.end());
  rank_sets.erase(std::unique(rank_sets.begin(), rank_sets.end()), rank_sets.end());
  std::unique_ptr<Communicator> comm(new Communicator(rank, world_size, options));
  std::vector<int> everyone(static_cast<std::size_t>(world_size));
  for (int r = 0; r < world_size; ++r) everyone[static_cast<std::size_t>(r)] = r;
  WAVEPOOL_ASSIGN_OR_RETURN(
      compat::GlooGroupPtr world,
      compat::MakeGlooGroup(compat::WithPrefix(options.name + "/world", store), rank, world_size,
                            options.timeout));
  comm->groups_->world = {world, everyone};
  // In one sorted order on every rank: see Create's contract.
  for (const std::vector<int>& set : rank_sets) {
    if (set.size() < 2 || set == everyone || !std::binary_search(set.begin(), set.end(), rank)) {
      continue;
    }
    WAVEPOOL_ASSIGN_OR_RETURN(
        compat::GlooGroupPtr group,
        compat::MakeGlooGroup(
            compat::WithPrefix(absl::StrCat(options.name, "/", absl::StrJoin(set, ",")), store),
            IndexIn(set, rank), static_cast<int>(set.size()), options.timeout));
    comm->groups_->by_ranks[set] = {group, set};
  }
  return comm;
}

namespace {

// Runs `issue` (a c10d call that may throw) on host copies of `tensors` and wraps its Work.
template <typename Issue>
absl::StatusOr<Pending> Start(std::string what, std::chrono::milliseconds timeout,
                              std::vector<torch::Tensor> tensors, Access access, Issue issue) {
  try {
    auto pending = std::make_shared<internal::PendingWork>();
    std::vector<torch::Tensor> staged = StageThroughHost(tensors, access, *pending);
    pending->work = issue(staged);
    pending->timeout = timeout;
    pending->what = std::move(what);
    return Pending(std::move(pending));
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(what, ": ", compat::ErrorText(e)));
  }
}

}  // namespace

const internal::ProcessGroup* Communicator::FindGroup(const std::vector<int>& ranks) const {
  if (ranks == groups_->world.members) return &groups_->world;
  auto it = groups_->by_ranks.find(ranks);
  return it == groups_->by_ranks.end() ? nullptr : &it->second;
}

absl::StatusOr<Pending> Communicator::AllReduceSum(const std::vector<int>& ranks,
                                                   std::vector<torch::Tensor> tensors) {
  const internal::ProcessGroup* group = FindGroup(ranks);
  if (group == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("no group {", absl::StrJoin(ranks, ","), "} on rank ", rank_));
  }
  return Start(absl::StrCat("all-reduce in {", absl::StrJoin(ranks, ","), "}"), options_.timeout,
               std::move(tensors), Access::kReadsAndWrites,
               [&](std::vector<torch::Tensor>& staged) {
                 c10d::AllreduceOptions options;
                 options.reduceOp = c10d::ReduceOp::SUM;
                 return group->group->allreduce(staged, options);
               });
}

absl::StatusOr<Pending> Communicator::Broadcast(const std::vector<int>& ranks, int root,
                                                std::vector<torch::Tensor> tensors) {
  const internal::ProcessGroup* group = FindGroup(ranks);
  if (group == nullptr || !std::binary_search(ranks.begin(), ranks.end(), root)) {
    return absl::InvalidArgumentError(absl::StrCat("no group {", absl::StrJoin(ranks, ","),
                                                   "} with root ", root, " on rank ", rank_));
  }
  return Start(absl::StrCat("broadcast from rank ", root, " in {", absl::StrJoin(ranks, ","), "}"),
               options_.timeout, std::move(tensors),
               root == rank_ ? Access::kReads : Access::kWrites,
               [&](std::vector<torch::Tensor>& staged) {
                 c10d::BroadcastOptions options;
                 options.rootRank = IndexIn(group->members, root);
                 return group->group->broadcast(staged, options);
               });
}

absl::StatusOr<Pending> Communicator::Send(torch::Tensor tensor, int peer, int tag) {
  return Start(absl::StrCat("send to rank ", peer, " (tag ", tag, ")"), options_.timeout,
               {std::move(tensor)}, Access::kReads, [&](std::vector<torch::Tensor>& staged) {
                 return groups_->world.group->send(staged, peer, tag);
               });
}

absl::StatusOr<Pending> Communicator::Recv(torch::Tensor tensor, int peer, int tag) {
  return Start(absl::StrCat("receive from rank ", peer, " (tag ", tag, ")"), options_.timeout,
               {std::move(tensor)}, Access::kWrites, [&](std::vector<torch::Tensor>& staged) {
                 return groups_->world.group->recv(staged, peer, tag);
               });
}

absl::Status Communicator::Barrier() {
  WAVEPOOL_ASSIGN_OR_RETURN(Pending pending, Start("barrier", options_.timeout, {}, Access::kReads,
                                                   [&](std::vector<torch::Tensor>&) {
                                                     return groups_->world.group->barrier();
                                                   }));
  return pending.Wait();
}

}  // namespace wavepool::runtime
