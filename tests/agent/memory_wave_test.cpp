// Memory-wave analysis on synthetic waves with known period, peak, trough and offset, on degraded
// inputs (noise, jitter, missing samples, drift), and on inputs that cannot give an answer.
#include "wavepool/agent/memory_wave.h"

#include <chrono>
#include <cstdint>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/wave_test_util.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/status_matchers.h"
#include "wavepool/agent/simulated_gpu.h"

namespace wavepool::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;
using wavepool::testing::kGiB;
using wavepool::testing::kMiB;
using wavepool::testing::MakeWave;
using wavepool::testing::StatusIs;
using wavepool::testing::WaveSpec;
using namespace std::chrono_literals;

double Bytes(std::uint64_t b) { return static_cast<double>(b); }

TEST(MemoryWave, CleanWaveGivesPeriodPeakTroughAndHeadroom) {
  MemoryWaveOptions options;
  options.capacity_bytes = 80ull << 30;
  ASSERT_OK_AND_ASSIGN(MemoryWave wave, AnalyzeMemoryWave(MakeWave(WaveSpec{}), options));
  EXPECT_NEAR(wave.period.count(), 0.8, 0.002);
  EXPECT_GT(wave.confidence, 0.95);
  // The peak and trough are plateaus the 100 Hz samples hit exactly.
  EXPECT_NEAR(Bytes(wave.peak_bytes), 12 * kGiB, 1 * kMiB);
  EXPECT_NEAR(Bytes(wave.trough_bytes), 4 * kGiB, 1 * kMiB);
  // 80 GiB - 12 GiB = 68 GiB.
  EXPECT_THAT(wave.headroom_bytes, Optional(::testing::Ge(std::int64_t{0})));
  EXPECT_NEAR(static_cast<double>(*wave.headroom_bytes), 68 * kGiB, 1 * kMiB);
  EXPECT_EQ(wave.periods, 12);  // floor(9.99 s / 0.8 s)
  EXPECT_NEAR(wave.drift_bytes_per_second, 0, 1 * kMiB);
}

TEST(MemoryWave, FindsThePeriodNotAMultipleOfIt) {
  WaveSpec spec;
  spec.period_s = 0.25;
  ASSERT_OK_AND_ASSIGN(MemoryWave wave, AnalyzeMemoryWave(MakeWave(spec)));
  EXPECT_NEAR(wave.period.count(), 0.25, 0.001);
}

TEST(MemoryWave, NoiseMovesExtremesByAtMostAFewSigma) {
  WaveSpec spec;
  spec.noise_bytes = 100 * kMiB;
  ASSERT_OK_AND_ASSIGN(MemoryWave wave, AnalyzeMemoryWave(MakeWave(spec)));
  EXPECT_NEAR(wave.period.count(), 0.8, 0.008);
  // A period's maximum over noisy samples sits above the true peak (never far below it).
  EXPECT_GT(Bytes(wave.peak_bytes), 12 * kGiB - 100 * kMiB);
  EXPECT_LT(Bytes(wave.peak_bytes), 12 * kGiB + 400 * kMiB);
  EXPECT_LT(Bytes(wave.trough_bytes), 4 * kGiB + 100 * kMiB);
  EXPECT_GT(Bytes(wave.trough_bytes), 4 * kGiB - 400 * kMiB);
}

TEST(MemoryWave, SampleTimeJitterAndIterationJitterAreTolerated) {
  WaveSpec spec;
  spec.time_jitter_s = 0.004;  // +-4 ms on 10 ms samples
  spec.period_jitter = 0.03;   // iterations 0.776..0.824 s
  ASSERT_OK_AND_ASSIGN(MemoryWave wave, AnalyzeMemoryWave(MakeWave(spec)));
  EXPECT_NEAR(wave.period.count(), 0.8, 0.016);
  EXPECT_NEAR(Bytes(wave.peak_bytes), 12 * kGiB, 300 * kMiB);
  EXPECT_NEAR(Bytes(wave.trough_bytes), 4 * kGiB, 300 * kMiB);
}

TEST(MemoryWave, MissingSamplesAndAGapAreTolerated) {
  WaveSpec spec;
  spec.drop_fraction = 0.2;
  spec.gap_from_s = 4.0;
  spec.gap_to_s = 4.9;  // more than a whole period lost
  ASSERT_OK_AND_ASSIGN(MemoryWave wave, AnalyzeMemoryWave(MakeWave(spec)));
  EXPECT_NEAR(wave.period.count(), 0.8, 0.004);
  EXPECT_NEAR(Bytes(wave.peak_bytes), 12 * kGiB, 1 * kMiB);
  EXPECT_NEAR(Bytes(wave.trough_bytes), 4 * kGiB, 1 * kMiB);
  EXPECT_LT(wave.periods, 12) << "the periods the gap emptied are not measured";
}

// 200 MiB/s of growth over the 9.99 s between the first and last sample: the extremes are
// reported where the trend ends, 12 GiB + 1998 MiB and 4 GiB + 1998 MiB.
TEST(MemoryWave, DriftIsRemovedAndReportedAtTheEnd) {
  WaveSpec spec;
  spec.drift_bytes_per_s = 200 * kMiB;
  ASSERT_OK_AND_ASSIGN(MemoryWave wave, AnalyzeMemoryWave(MakeWave(spec)));
  EXPECT_NEAR(wave.period.count(), 0.8, 0.004);
  EXPECT_NEAR(wave.drift_bytes_per_second, 200 * kMiB, 4 * kMiB);
  EXPECT_NEAR(Bytes(wave.peak_bytes), 12 * kGiB + 1998 * kMiB, 60 * kMiB);
  EXPECT_NEAR(Bytes(wave.trough_bytes), 4 * kGiB + 1998 * kMiB, 60 * kMiB);
}

TEST(MemoryWave, HeadroomIsNegativeWhenThePeakExceedsTheCapacity) {
  MemoryWaveOptions options;
  options.capacity_bytes = 10ull << 30;
  ASSERT_OK_AND_ASSIGN(MemoryWave wave, AnalyzeMemoryWave(MakeWave(WaveSpec{}), options));
  EXPECT_NEAR(static_cast<double>(*wave.headroom_bytes), -2 * kGiB, 1 * kMiB);
}

// A worker's allocator reports are untrusted and may sit anywhere below 2^64 bytes: the peak and
// the headroom saturate instead of overflowing the conversions.
TEST(MemoryWave, AWaveNear2To64BytesSaturatesInsteadOfOverflowing) {
  constexpr std::uint64_t kBase = 0xF000'0000'0000'0000ull;
  std::vector<MemoryPoint> points = MakeWave(WaveSpec{});
  for (MemoryPoint& p : points) p.bytes += kBase;
  MemoryWaveOptions options;
  options.capacity_bytes = 80ull << 30;
  ASSERT_OK_AND_ASSIGN(MemoryWave wave, AnalyzeMemoryWave(points, options));
  EXPECT_NEAR(Bytes(wave.peak_bytes), Bytes(kBase) + 12 * kGiB, 64 * kMiB);
  EXPECT_NEAR(Bytes(wave.trough_bytes), Bytes(kBase) + 4 * kGiB, 64 * kMiB);
  EXPECT_THAT(wave.headroom_bytes, Optional(std::numeric_limits<std::int64_t>::min()));
}

TEST(MemoryWave, HeadroomSaturatesToTheInt64Range) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(HeadroomBytes(80, 30), 50);
  EXPECT_EQ(HeadroomBytes(30, 80), -50);
  EXPECT_EQ(HeadroomBytes(kMax, 0), kInt64Max);
  EXPECT_EQ(HeadroomBytes(0, kMax), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(HeadroomBytes(0, static_cast<std::uint64_t>(kInt64Max)), -kInt64Max);
}

TEST(MemoryWave, TooFewSamplesIsFailedPrecondition) {
  std::vector<MemoryPoint> points = MakeWave(WaveSpec{});
  points.resize(10);
  EXPECT_THAT(AnalyzeMemoryWave(points), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                  HasSubstr("need at least 16 samples, got 10")));
}

TEST(MemoryWave, TooFewPeriodsIsFailedPrecondition) {
  WaveSpec spec;
  spec.duration_s = 2.0;  // 2.5 periods of 0.8 s; 3 are needed
  EXPECT_THAT(AnalyzeMemoryWave(MakeWave(spec)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("no periodic pattern")));
  MemoryWaveOptions options;
  options.min_period = 1s;
  EXPECT_THAT(AnalyzeMemoryWave(MakeWave(spec), options),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("need at least 3 periods of min_period 1.000 s")));
}

TEST(MemoryWave, FlatLineIsFailedPrecondition) {
  WaveSpec spec;
  spec.peak_bytes = spec.trough_bytes;
  spec.noise_bytes = 0.5 * kMiB;
  EXPECT_THAT(AnalyzeMemoryWave(MakeWave(spec)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("flat")));
  spec.noise_bytes = 0;
  spec.drift_bytes_per_s = 100 * kMiB;  // a straight ramp is flat around its trend
  EXPECT_THAT(AnalyzeMemoryWave(MakeWave(spec)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("flat")));
}

TEST(MemoryWave, NoiseWithoutAWaveIsFailedPrecondition) {
  WaveSpec spec;
  spec.peak_bytes = spec.trough_bytes;
  spec.noise_bytes = 500 * kMiB;
  EXPECT_THAT(AnalyzeMemoryWave(MakeWave(spec)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("no periodic pattern")));
}

TEST(MemoryWave, UndersampledWaveAsksForFasterSampling) {
  WaveSpec spec;
  spec.period_s = 0.1;
  spec.rate_hz = 50;  // 5 samples per period
  EXPECT_THAT(AnalyzeMemoryWave(MakeWave(spec)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("sample faster")));
}

TEST(MemoryWave, RejectsUnorderedSamplesAndBadOptions) {
  std::vector<MemoryPoint> points = MakeWave(WaveSpec{});
  points[5].time = points[4].time;
  EXPECT_THAT(AnalyzeMemoryWave(points),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("samples[5].time_ns")));
  MemoryWaveOptions options;
  options.min_confidence = 1.5;
  EXPECT_THAT(AnalyzeMemoryWave(MakeWave(WaveSpec{}), options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("min_confidence")));
  options = MemoryWaveOptions{};
  options.min_periods = 1;
  EXPECT_THAT(AnalyzeMemoryWave(MakeWave(WaveSpec{}), options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("min_periods: must be >= 2")));
}

TEST(MemoryWave, ConvertsAllocatorAndDeviceSamples) {
  const std::vector<MemorySample> reports = {{10, 100, 300}, {20, 150, 400}};
  const auto allocated = PointsFromAllocatorSamples(reports, AllocatorField::kAllocated);
  const auto reserved = PointsFromAllocatorSamples(reports, AllocatorField::kReserved);
  ASSERT_EQ(allocated.size(), 2u);
  EXPECT_EQ(allocated[1].time, MonotonicTimeFromNanos(20));
  EXPECT_EQ(allocated[1].bytes, 150u);
  EXPECT_EQ(reserved[1].bytes, 400u);
  GpuSample sample;
  sample.time = MonotonicTimeFromNanos(5);
  sample.memory_used_bytes = 77;
  const auto device = PointsFromGpuSamples({sample});
  ASSERT_EQ(device.size(), 1u);
  EXPECT_EQ(device[0].time, MonotonicTimeFromNanos(5));
  EXPECT_EQ(device[0].bytes, 77u);
}

// The whole path on the simulated device: a task allocates a 0.5 s mountain between 2 and 6 GiB
// every millisecond, the agent samples the GPU at 100 Hz.
TEST(MemoryWave, FindsTheWaveInSimulatedDeviceSamples) {
  wavepool::testing::SimulatedClock clock;
  ASSERT_OK_AND_ASSIGN(auto gpus, SimulatedGpus::Create(clock, SimulatedGpuOptions{}));
  ASSERT_OK_AND_ASSIGN(SimulatedTaskId task, gpus->AddTask(0, {Role::kForeground, 42}));
  std::vector<GpuSample> samples;
  for (int ms = 0; ms < 6000; ++ms) {
    const double phase = (ms % 500) / 500.0;
    const auto bytes =
        static_cast<std::uint64_t>(wavepool::testing::Mountain(phase, 2 * kGiB, 6 * kGiB));
    ASSERT_OK(gpus->SetAllocatedBytes(task, bytes));
    clock.Advance(1ms);
    if (ms % 10 == 0) {
      ASSERT_OK_AND_ASSIGN(GpuSample sample, gpus->Sample(0));
      samples.push_back(sample);
    }
  }
  MemoryWaveOptions options;
  options.capacity_bytes = gpus->gpus()[0].memory_total_bytes;
  ASSERT_OK_AND_ASSIGN(MemoryWave wave, AnalyzeMemoryWave(PointsFromGpuSamples(samples), options));
  EXPECT_NEAR(wave.period.count(), 0.5, 0.002);
  EXPECT_NEAR(Bytes(wave.peak_bytes), 6 * kGiB, 1 * kMiB);
  EXPECT_NEAR(Bytes(wave.trough_bytes), 2 * kGiB, 1 * kMiB);
  EXPECT_NEAR(static_cast<double>(*wave.headroom_bytes), 74 * kGiB, 1 * kMiB);
}

// Tick-tock: the tock wave runs the same pattern `delay` later (wavelet-tick-tock §3.2.1).
class PhaseOffsetTest : public ::testing::TestWithParam<double> {};

TEST_P(PhaseOffsetTest, RecoversTheDelayAsSecondsAndFraction) {
  const double fraction = GetParam();
  WaveSpec tick;
  tick.noise_bytes = 50 * kMiB;
  tick.time_jitter_s = 0.002;
  WaveSpec tock = tick;
  tock.delay_s = fraction * tick.period_s;
  tock.seed = 2;
  tock.trough_bytes = 3 * kGiB;  // a different level or amplitude does not matter
  tock.peak_bytes = 9 * kGiB;
  ASSERT_OK_AND_ASSIGN(PhaseOffset offset, MeasurePhaseOffset(MakeWave(tick), MakeWave(tock)));
  EXPECT_NEAR(offset.period.count(), 0.8, 0.008);
  // Circular distance, so that 0.999 and 0.001 are close.
  const double error = std::abs(offset.fraction - fraction);
  EXPECT_LT(std::min(error, 1 - error), 0.0125) << "fraction " << offset.fraction;
  EXPECT_NEAR(offset.offset.count(), offset.fraction * offset.period.count(), 1e-9);
  EXPECT_GT(offset.confidence, 0.9);
}

INSTANTIATE_TEST_SUITE_P(Fractions, PhaseOffsetTest, ::testing::Values(0.0, 0.25, 0.5, 0.7, 0.95));

TEST(PhaseOffset, DifferentPeriodsAreFailedPrecondition) {
  WaveSpec tock;
  tock.period_s = 1.0;
  EXPECT_THAT(MeasurePhaseOffset(MakeWave(WaveSpec{}), MakeWave(tock)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("periods differ")));
}

TEST(PhaseOffset, WavesThatBarelyOverlapAreFailedPrecondition) {
  WaveSpec tock;
  tock.start_s = 9.5;  // overlaps the tick wave for 1.5 s, less than 3 periods
  EXPECT_THAT(MeasurePhaseOffset(MakeWave(WaveSpec{}), MakeWave(tock)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("overlap")));
}

TEST(PhaseOffset, NamesTheWaveThatIsNotAWave) {
  WaveSpec flat;
  flat.peak_bytes = flat.trough_bytes;
  EXPECT_THAT(MeasurePhaseOffset(MakeWave(WaveSpec{}), MakeWave(flat)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("second wave: ")));
}

}  // namespace
}  // namespace wavepool::agent
