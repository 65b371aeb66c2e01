// Adds the wall time of a scope to a seconds counter.
#ifndef WAVEPOOL_RUNTIME_SRC_EXEC_STEP_TIMER_H_
#define WAVEPOOL_RUNTIME_SRC_EXEC_STEP_TIMER_H_

#include <chrono>

#include "wavepool/base/seconds.h"

namespace wavepool::runtime {

class StepTimer {
 public:
  explicit StepTimer(double* seconds) : seconds_(seconds), start_(Clock::now()) {}
  ~StepTimer() { *seconds_ += Seconds(Clock::now() - start_).count(); }
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

 private:
  using Clock = std::chrono::steady_clock;
  double* const seconds_;
  const Clock::time_point start_;
};

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_RUNTIME_SRC_EXEC_STEP_TIMER_H_
