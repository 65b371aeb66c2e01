// A LaunchPacer for tests of the GPU launch path: grants `limit` credits, a pause holds Begin,
// and it records the most groups ever in flight and every reported duration.
#ifndef WAVEPOOL_TESTS_RUNTIME_COUNTING_PACER_H_
#define WAVEPOOL_TESTS_RUNTIME_COUNTING_PACER_H_

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "wavepool/runtime/launch_pacer.h"

namespace wavepool::runtime {

class CountingPacer final : public LaunchPacer {
 public:
  explicit CountingPacer(int limit) : limit_(limit) {}
  absl::StatusOr<LaunchTicket> Begin(OpGroup group) override {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return stopped_ || (!paused_ && in_flight_ < limit_); });
    if (stopped_) return absl::CancelledError("stopped");
    max_in_flight_ = std::max(max_in_flight_, ++in_flight_);
    ++begun_;
    return LaunchTicket{group};
  }
  void End(const LaunchTicket&, std::chrono::nanoseconds duration) override {
    std::lock_guard<std::mutex> lock(mu_);
    --in_flight_;
    ++ended_;
    if (duration.count() <= 0) ++zero_durations_;
    changed_.notify_all();
  }
  void ReportIteration(std::int64_t, double, std::int64_t) override {}
  void ReportMemory(std::uint64_t) override {}
  void ReportWaveMemory(int, std::uint64_t) override {}
  void Stop() override {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    changed_.notify_all();
  }
  void SetPaused(bool paused) {
    std::lock_guard<std::mutex> lock(mu_);
    paused_ = paused;
    changed_.notify_all();
  }
  int max_in_flight() const {
    std::lock_guard<std::mutex> l(mu_);
    return max_in_flight_;
  }
  int begun() const {
    std::lock_guard<std::mutex> l(mu_);
    return begun_;
  }
  int ended() const {
    std::lock_guard<std::mutex> l(mu_);
    return ended_;
  }
  int zero_durations() const {
    std::lock_guard<std::mutex> l(mu_);
    return zero_durations_;
  }

 private:
  const int limit_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  bool paused_ = false;
  bool stopped_ = false;
  int in_flight_ = 0;
  int max_in_flight_ = 0;
  int begun_ = 0;
  int ended_ = 0;
  int zero_durations_ = 0;
};

}  // namespace wavepool::runtime

#endif  // WAVEPOOL_TESTS_RUNTIME_COUNTING_PACER_H_
