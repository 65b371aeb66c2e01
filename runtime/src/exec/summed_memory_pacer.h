// Replicas of one task that each report the memory they hold (tick-tock's two waves, each a
// StageEngine) to the one pacer of the task: each gets a view whose ReportMemory reports the sum
// of every view's latest figure, so that the node agent sees the task's memory, not the waves'
// figures interleaved, and the view's own figure as its wave's (ReportWaveMemory: view i is wave
// i), from which the agent measures the phase offset between the waves. Everything else passes
// through to the pacer.
//
// Thread safety: views may be used from any threads. Ownership: borrows the pacer, which must
// outlive this; the views live as long as this.
#ifndef WAVEPOOL_RUNTIME_EXEC_SUMMED_MEMORY_PACER_H_
#define WAVEPOOL_RUNTIME_EXEC_SUMMED_MEMORY_PACER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "wavepool/runtime/launch_pacer.h"

namespace wavepool::runtime {

class SummedMemoryPacers {
 public:
  // REQUIRES: 1 <= views <= agent::kMaxWavesPerTask.
  SummedMemoryPacers(LaunchPacer* pacer, int views);
  ~SummedMemoryPacers();
  SummedMemoryPacers(const SummedMemoryPacers&) = delete;
  SummedMemoryPacers& operator=(const SummedMemoryPacers&) = delete;

  // REQUIRES: 0 <= i < views.
  LaunchPacer* view(int i) const;

 private:
  class View;
  LaunchPacer* const pacer_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> bytes_;  // each view's latest figure
  std::vector<std::unique_ptr<View>> views_;
};

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_EXEC_SUMMED_MEMORY_PACER_H_
