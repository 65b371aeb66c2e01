// Launch groups: the unit of work the node agent paces (DESIGN.md "GPU sharing"). Every launch —
// an op group of layers on the CPU, a CUDA-graph piece on a GPU — takes a credit from the GPU's
// launch gate before it starts and returns it when it is done, so that a background task never
// queues more work than the agent allows; a foreground group the agent marks sensitive raises
// the pause flag while it runs; a background task waits while the flag is up. This interface is
// the one seam the CPU and CUDA paths share.
#ifndef WAVEPOOL_RUNTIME_LAUNCH_PACER_H_
#define WAVEPOOL_RUNTIME_LAUNCH_PACER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/agent/client/protocol.h"

namespace wavepool::runtime {

// A launch group's identity within a job: the id the agent learns its solo time under (stable
// across iterations and ranks) and its kind (all-reduces are always sensitive).
struct OpGroup {
  std::uint32_t id = 0;  // < agent::kMaxOpGroups
  agent::OpKind kind = agent::OpKind::kCompute;
};

// A launch group between Begin and End: what End must undo.
struct LaunchTicket {
  OpGroup group;
  bool raised_pause = false;  // a sensitive foreground group raised the pause flag
};

// Thread safety: every method may be called from several threads at once (tick-tock's two
// waves; a GPU path's launching thread and its completion poller).
class LaunchPacer {
 public:
  virtual ~LaunchPacer() = default;

  // Runs `work` as one launch group: Begin, `work`, End with the time `work` took. Cancelled
  // when the pacer was stopped while waiting (`work` did not run). A pacer for a GPU
  // (gpu_launch_pacer.h) returns once `work` has enqueued its kernels and calls End when they
  // complete on the device.
  virtual absl::Status Run(OpGroup group, const std::function<void()>& work);

  // The two halves of Run, for a group whose completion is seen later (a CUDA-graph piece
  // finishes when its completion event fires, runtime/piece_launcher.h). Begin waits for a
  // credit (and, for a background task, while the pause flag is up) and raises the pause for a
  // sensitive foreground group; Cancelled when the pacer was stopped while waiting. End lowers
  // the pause, returns the credit and reports the group's duration to the agent's feedback loop.
  // REQUIRES: exactly one End per ticket Begin returned, from any thread.
  virtual absl::StatusOr<LaunchTicket> Begin(OpGroup group) = 0;
  virtual void End(const LaunchTicket& ticket, std::chrono::nanoseconds duration) = 0;

  // The end of a training iteration (the agent publishes it as the task's progress).
  virtual void ReportIteration(std::int64_t iteration, double seconds, std::int64_t samples) = 0;
  // The bytes of tensors the task holds now, at every layer boundary (an implementation samples:
  // the agent's memory waves need about 100 Hz).
  virtual void ReportMemory(std::uint64_t allocated_bytes) = 0;
  // The bytes one wave of the task holds now (tick-tock's tick is wave 0, its tock wave 1; REQUIRES
  // 0 <= wave < agent::kMaxWavesPerTask), beside ReportMemory's total: the agent measures the
  // phase offset between the waves from them. Sampled like ReportMemory.
  virtual void ReportWaveMemory(int wave, std::uint64_t allocated_bytes) = 0;

  // Makes waiting Begin calls return Cancelled (a stop request during a long pause).
  virtual void Stop() = 0;
};

// A pacer that passes every call to another, for a wrapper that changes one or two of them (how
// a group runs on a GPU, gpu_launch_pacer.h; what memory a task reports). Borrows `paced`, which
// must outlive it.
class ForwardingLaunchPacer : public LaunchPacer {
 public:
  explicit ForwardingLaunchPacer(LaunchPacer& paced) : paced_(paced) {}

  absl::Status Run(OpGroup group, const std::function<void()>& work) override {
    return paced_.Run(group, work);
  }
  absl::StatusOr<LaunchTicket> Begin(OpGroup group) override { return paced_.Begin(group); }
  void End(const LaunchTicket& ticket, std::chrono::nanoseconds duration) override {
    paced_.End(ticket, duration);
  }
  void ReportIteration(std::int64_t iteration, double seconds, std::int64_t samples) override {
    paced_.ReportIteration(iteration, seconds, samples);
  }
  void ReportMemory(std::uint64_t allocated_bytes) override {
    paced_.ReportMemory(allocated_bytes);
  }
  void ReportWaveMemory(int wave, std::uint64_t allocated_bytes) override {
    paced_.ReportWaveMemory(wave, allocated_bytes);
  }
  void Stop() override { paced_.Stop(); }

 private:
  LaunchPacer& paced_;
};

// A pacer for a worker without a node agent: runs every group at once and reports nothing.
std::unique_ptr<LaunchPacer> MakeUnpacedLauncher();

// Op-group ids, the same on every rank of a job. Forward and backward of layer l are 2l and
// 2l+1 (layers beyond kLayerGroups share ids modulo it); a stage's all-reduce and its receives
// get ids above every layer's.
inline constexpr std::uint32_t kLayerGroups = 1800;
OpGroup ForwardGroup(int layer);
OpGroup BackwardGroup(int layer);
OpGroup AllReduceGroup(int stage);
OpGroup ReceiveGroup(int stage);

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_LAUNCH_PACER_H_
