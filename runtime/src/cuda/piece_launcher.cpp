#include "wavepool/runtime/piece_launcher.h"

#include <utility>

#include "cuda_status.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime {
namespace {

// How long the poller sleeps between queries of a piece that has not finished: short next to a
// piece (>= 250 us), so that a credit comes back soon after its piece ends.
constexpr std::chrono::microseconds kPollInterval{20};

}  // namespace

PieceLauncher::PieceLauncher(LaunchPacer& pacer, cudaStream_t stream)
    : pacer_(pacer), stream_(stream) {}

absl::StatusOr<std::unique_ptr<PieceLauncher>> PieceLauncher::Create(LaunchPacer& pacer,
                                                                     cudaStream_t stream,
                                                                     std::size_t max_pending) {
  if (max_pending == 0) return absl::InvalidArgumentError("max_pending must be positive");
  std::unique_ptr<PieceLauncher> launcher(new PieceLauncher(pacer, stream));
  launcher->slots_.resize(max_pending);
  for (std::size_t i = 0; i < max_pending; ++i) {
    Slot& slot = launcher->slots_[i];
    absl::Status s = CudaStatus(cudaEventCreate(&slot.start), "cudaEventCreate");
    if (s.ok()) s = CudaStatus(cudaEventCreate(&slot.end), "cudaEventCreate");
    WAVEPOOL_RETURN_IF_ERROR(s);           // the destructor frees what was created
    absl::MutexLock lock(&launcher->mu_);  // uncontended: the poller starts below
    launcher->free_.push_back(i);
  }
  launcher->poller_ = std::thread([l = launcher.get()] { l->Poll(); });
  return launcher;
}

PieceLauncher::~PieceLauncher() {
  if (poller_.joinable()) {
    (void)Drain();
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    poller_.join();
  }
  for (Slot& slot : slots_) {
    if (slot.start != nullptr) cudaEventDestroy(slot.start);
    if (slot.end != nullptr) cudaEventDestroy(slot.end);
  }
}

absl::Status PieceLauncher::Launch(OpGroup group, cudaGraphExec_t piece) {
  return LaunchWork(group,
                    [&] { return CudaStatus(cudaGraphLaunch(piece, stream_), "cudaGraphLaunch"); });
}

absl::Status PieceLauncher::LaunchWork(OpGroup group,
                                       const std::function<absl::Status()>& enqueue) {
  WAVEPOOL_RETURN_IF_ERROR(TakeError());
  std::size_t index = 0;
  {
    absl::MutexLock lock(&mu_);
    const auto slot_free = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !free_.empty(); };
    mu_.Await(absl::Condition(&slot_free));
    index = free_.front();
    free_.pop_front();
  }
  Slot& slot = slots_[index];
  absl::StatusOr<LaunchTicket> ticket = pacer_.Begin(group);
  absl::Status s = ticket.status();
  if (s.ok()) {
    slot.ticket = *ticket;
    s = CudaStatus(cudaEventRecord(slot.start, stream_), "cudaEventRecord");
    if (s.ok()) s = enqueue();
    if (s.ok()) s = CudaStatus(cudaEventRecord(slot.end, stream_), "cudaEventRecord");
    if (!s.ok()) pacer_.End(*ticket, std::chrono::nanoseconds(0));
  }
  {
    absl::MutexLock lock(&mu_);
    (s.ok() ? pending_ : free_).push_back(index);
  }
  return s;
}

void PieceLauncher::Poll() {
  absl::MutexLock lock(&mu_);
  const auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !pending_.empty();
  };
  while (true) {
    mu_.Await(absl::Condition(&woken));
    if (pending_.empty()) return;  // stopping, nothing left
    const std::size_t index = pending_.front();
    Slot& slot = slots_[index];
    mu_.Unlock();
    cudaError_t done = cudaEventQuery(slot.end);
    while (done == cudaErrorNotReady) {
      std::this_thread::sleep_for(kPollInterval);
      done = cudaEventQuery(slot.end);
    }
    float ms = 0;
    absl::Status s = CudaStatus(done, "cudaEventQuery");
    if (s.ok())
      s = CudaStatus(cudaEventElapsedTime(&ms, slot.start, slot.end), "cudaEventElapsedTime");
    const std::chrono::nanoseconds duration(static_cast<std::int64_t>(ms * 1e6));
    pacer_.End(slot.ticket, duration);
    mu_.Lock();
    pending_.pop_front();
    free_.push_back(index);
    ++completed_;
    gpu_time_ += duration;
    if (!s.ok() && error_.ok()) error_ = s;
  }
}

absl::Status PieceLauncher::Drain() {
  absl::MutexLock lock(&mu_);
  const auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return pending_.empty(); };
  mu_.Await(absl::Condition(&drained));
  return std::exchange(error_, absl::OkStatus());
}

absl::Status PieceLauncher::TakeError() {
  absl::MutexLock lock(&mu_);
  return std::exchange(error_, absl::OkStatus());
}

std::int64_t PieceLauncher::completed() const {
  absl::MutexLock lock(&mu_);
  return completed_;
}

std::chrono::nanoseconds PieceLauncher::gpu_time() const {
  absl::MutexLock lock(&mu_);
  return gpu_time_;
}

}  // namespace wavepool::runtime
