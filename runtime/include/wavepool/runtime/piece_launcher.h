// Launches CUDA-graph pieces through the launch gate (deeppool-burst-parallel §5): each piece
// takes a credit before it is launched (a background piece also waits while the foreground holds
// the pause, which is how the pause is honoured between pieces) and gives it back when its
// completion event fires. A polling thread watches the events, so the launching thread never
// blocks on the GPU; each piece's GPU time (between events recorded before and after it) goes to
// the agent's slowdown feedback loop through LaunchPacer::End.
//
// Thread safety: Launch, LaunchWork and Drain are called by one thread (the one that owns the
// stream); the poller is internal. Ownership: borrows the pacer and the stream, which must outlive
// the launcher; owns its events and its thread.
#ifndef WAVEPOOL_RUNTIME_PIECE_LAUNCHER_H_
#define WAVEPOOL_RUNTIME_PIECE_LAUNCHER_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "wavepool/runtime/launch_pacer.h"

namespace wavepool::runtime {

class PieceLauncher {
 public:
  // `max_pending` bounds the pieces launched and not yet reported (the gate bounds them further;
  // this is the launcher's own event pool). Internal naming the CUDA call when events cannot be
  // created; InvalidArgument when max_pending is 0.
  static absl::StatusOr<std::unique_ptr<PieceLauncher>> Create(LaunchPacer& pacer,
                                                               cudaStream_t stream,
                                                               std::size_t max_pending = 8);
  // Waits for every launched piece to be reported, then stops the poller.
  ~PieceLauncher();
  PieceLauncher(const PieceLauncher&) = delete;
  PieceLauncher& operator=(const PieceLauncher&) = delete;

  // Launches `piece` as launch group `group`: LaunchPacer::Begin (waits for a credit), an event,
  // the piece, an event; the poller calls End when it completes. Cancelled when the pacer was
  // stopped while waiting (nothing launched); Internal naming the CUDA call otherwise (the credit
  // is returned). An earlier piece's failure (its events could not be read) is returned here
  // too, once.
  absl::Status Launch(OpGroup group, cudaGraphExec_t piece);
  // The same for any work: `enqueue` puts the group's work on the stream (a layer's kernels
  // launched eagerly, gpu_launch_pacer.h); its error is returned and the credit given back.
  absl::Status LaunchWork(OpGroup group, const std::function<absl::Status()>& enqueue);
  // Blocks until every piece launched so far has completed and been reported; the first error
  // the poller met since the last call.
  absl::Status Drain();

  // Pieces reported so far, and the GPU time they took.
  std::int64_t completed() const;
  std::chrono::nanoseconds gpu_time() const;

 private:
  struct Slot {
    cudaEvent_t start = nullptr;
    cudaEvent_t end = nullptr;
    LaunchTicket ticket;
  };
  PieceLauncher(LaunchPacer& pacer, cudaStream_t stream);
  void Poll() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status TakeError() ABSL_LOCKS_EXCLUDED(mu_);

  LaunchPacer& pacer_;
  const cudaStream_t stream_;
  std::vector<Slot> slots_;  // constant size after Create

  mutable absl::Mutex mu_;
  std::deque<std::size_t> free_ ABSL_GUARDED_BY(mu_);     // slots ready for a launch
  std::deque<std::size_t> pending_ ABSL_GUARDED_BY(mu_);  // launched, in stream order
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status error_ ABSL_GUARDED_BY(mu_);  // the poller's first unreported error
  std::int64_t completed_ ABSL_GUARDED_BY(mu_) = 0;
  std::chrono::nanoseconds gpu_time_ ABSL_GUARDED_BY(mu_){0};
  std::thread poller_;
};

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_PIECE_LAUNCHER_H_
