// Tick-tock's waves report to one pacer (summed_memory_pacer.h): the task's total for the
// agent's memory wave, and each wave's own figure for the phase offset between the waves.
#include "runtime/src/exec/summed_memory_pacer.h"

#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "wavepool/runtime/launch_pacer.h"

namespace wavepool::runtime {
namespace {

// Records the memory reports; everything else does nothing.
class MemoryRecorder final : public LaunchPacer {
 public:
  absl::StatusOr<LaunchTicket> Begin(OpGroup group) override { return LaunchTicket{group}; }
  void End(const LaunchTicket&, std::chrono::nanoseconds) override {}
  void ReportIteration(std::int64_t, double, std::int64_t) override {}
  void ReportMemory(std::uint64_t allocated_bytes) override {
    std::lock_guard<std::mutex> lock(mu);
    totals.push_back(allocated_bytes);
  }
  void ReportWaveMemory(int wave, std::uint64_t allocated_bytes) override {
    std::lock_guard<std::mutex> lock(mu);
    waves.emplace_back(wave, allocated_bytes);
  }
  void Stop() override {}

  std::mutex mu;
  std::vector<std::uint64_t> totals;
  std::vector<std::pair<int, std::uint64_t>> waves;
};

TEST(SummedMemoryPacers, ReportTheTasksTotalAndEachWavesOwnFigure) {
  MemoryRecorder recorder;
  SummedMemoryPacers pacers(&recorder, 2);
  pacers.view(0)->ReportMemory(100);
  pacers.view(1)->ReportMemory(40);
  pacers.view(0)->ReportMemory(10);
  EXPECT_EQ(recorder.totals, (std::vector<std::uint64_t>{100, 140, 50}));
  EXPECT_EQ(recorder.waves,
            (std::vector<std::pair<int, std::uint64_t>>{{0, 100}, {1, 40}, {0, 10}}));
}

}  // namespace
}  // namespace wavepool::runtime
