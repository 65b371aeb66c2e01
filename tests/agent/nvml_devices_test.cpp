// NVML telemetry: loading the library, and NvmlDevices over a fake NVML table (no GPU here).
#include <chrono>
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/fake_nvml.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/status_matchers.h"
#include "wavepool/agent/gpu_device.h"
#include "wavepool/agent/nvml_api.h"

namespace wavepool::agent {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;
using wavepool::testing::FakeGpu;
using wavepool::testing::FakeNvml;
using wavepool::testing::SimulatedClock;
using wavepool::testing::StatusIs;
using namespace std::chrono_literals;

FakeGpu H100(const char* uuid) {
  FakeGpu gpu;
  gpu.uuid = uuid;
  gpu.name = "NVIDIA H100 80GB HBM3";
  gpu.total_bytes = 85'520'809'984ull;
  return gpu;
}

nvml::nvmlProcessUtilizationSample_t ProcessSample(unsigned int pid, unsigned long long time_us,
                                                   unsigned int sm_percent) {
  return {pid, time_us, sm_percent, 0, 0, 0};
}

TEST(NvmlLibrary, MissingLibraryIsUnavailableNamingIt) {
  NvmlOptions options;
  options.library = "libwavepool-no-such-nvml.so.1";
  EXPECT_THAT(OpenNvmlDevices(options),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("libwavepool-no-such-nvml.so.1")));
}

TEST(NvmlLibrary, DefaultLibraryOpensOrIsUnavailableNamingIt) {
  // On a GPU machine this opens NVML; here (no driver) it must name the library, not crash.
  absl::StatusOr<GpuDevicesPtr> devices = OpenNvmlDevices();
  if (devices.ok()) {
    EXPECT_FALSE((*devices)->gpus().empty());
  } else {
    EXPECT_THAT(devices.status(),
                StatusIs(absl::StatusCode::kUnavailable, HasSubstr("libnvidia-ml.so.1")));
  }
}

TEST(NvmlLibrary, LibraryWithoutNvmlIsUnavailableNamingTheSymbol) {
  EXPECT_THAT(
      nvml::LoadNvmlLibrary("libm.so.6"),
      StatusIs(absl::StatusCode::kUnavailable, HasSubstr("libm.so.6: missing symbol nvmlInit_v2")));
}

TEST(NvmlDevices, TableWithoutARequiredFunctionIsInvalidArgument) {
  FakeNvml fake;
  nvml::NvmlApi api = fake.Api();
  api.nvmlDeviceGetMemoryInfo = nullptr;
  EXPECT_THAT(nvml::OpenNvmlDevicesWithApi(api, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nvmlDeviceGetMemoryInfo")));
  EXPECT_EQ(fake.init_calls, 0);
}

TEST(NvmlDevices, InitFailureIsUnavailableWithNvmlsText) {
  FakeNvml fake;
  fake.init_result = nvml::NVML_ERROR_DRIVER_NOT_LOADED;
  EXPECT_THAT(
      nvml::OpenNvmlDevicesWithApi(fake.Api(), nullptr),
      StatusIs(absl::StatusCode::kUnavailable, HasSubstr("nvmlInit_v2: Driver Not Loaded (9)")));
  EXPECT_EQ(fake.shutdown_calls, 0) << "shutdown only balances a successful init";
}

TEST(NvmlDevices, NoGpuIsUnavailableAndShutsDown) {
  FakeNvml fake;
  EXPECT_THAT(nvml::OpenNvmlDevicesWithApi(fake.Api(), nullptr),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("NVML sees no GPU")));
  EXPECT_EQ(fake.shutdown_calls, 1);
}

TEST(NvmlDevices, ListsGpusAndDescribesFeatures) {
  FakeNvml fake;
  fake.gpus = {H100("GPU-0a1b"), H100("GPU-2c3d")};
  fake.gpus[1].gpm_supported = false;
  ASSERT_OK_AND_ASSIGN(GpuDevicesPtr devices, nvml::OpenNvmlDevicesWithApi(fake.Api(), nullptr));
  ASSERT_EQ(devices->gpus().size(), 2u);
  const GpuInfo& gpu = devices->gpus()[0];
  EXPECT_EQ(gpu.index, 0u);
  EXPECT_EQ(gpu.uuid, "GPU-0a1b");
  EXPECT_EQ(gpu.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpu.memory_total_bytes, 85'520'809'984ull);
  EXPECT_THAT(gpu.limitations, IsEmpty());
  EXPECT_THAT(devices->gpus()[1].limitations,
              ElementsAre(HasSubstr("sm_occupancy: GPM not supported")));
  EXPECT_EQ(devices->Describe(),
            "NVML 12.580.159 (driver 580.159), 2 GPUs, GPM on 1, per-process utilisation on 2");
}

TEST(NvmlDevices, GpuThatCannotBeOpenedIsSkippedAndNamed) {
  FakeNvml fake;
  fake.gpus = {H100("GPU-0"), H100("GPU-1")};
  fake.gpus[0].handle_result = nvml::NVML_ERROR_NO_PERMISSION;
  ASSERT_OK_AND_ASSIGN(GpuDevicesPtr devices, nvml::OpenNvmlDevicesWithApi(fake.Api(), nullptr));
  ASSERT_EQ(devices->gpus().size(), 1u);
  EXPECT_EQ(devices->gpus()[0].index, 1u);
  EXPECT_THAT(devices->Describe(),
              HasSubstr("skipped GPU 0: nvmlDeviceGetHandleByIndex_v2: Insufficient Permissions"));
  EXPECT_THAT(devices->Sample(0), StatusIs(absl::StatusCode::kNotFound, HasSubstr("GPU 0")));
}

TEST(NvmlDevices, AllGpusUnusableIsUnavailable) {
  FakeNvml fake;
  fake.gpus = {H100("GPU-0")};
  fake.gpus[0].memory_result = nvml::NVML_ERROR_GPU_IS_LOST;
  EXPECT_THAT(nvml::OpenNvmlDevicesWithApi(fake.Api(), nullptr),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("none is usable: GPU 0: nvmlDeviceGetMemoryInfo: GPU is lost")));
}

TEST(NvmlDevices, SampleReportsMemoryAndUtilization) {
  FakeNvml fake;
  fake.gpus = {H100("GPU-0")};
  SimulatedClock clock(MonotonicTimeFromNanos(1'000));
  ASSERT_OK_AND_ASSIGN(GpuDevicesPtr devices, nvml::OpenNvmlDevicesWithApi(fake.Api(), &clock));
  fake.gpus[0].used_bytes = 12ull << 30;
  fake.gpus[0].utilization_percent = 37;
  ASSERT_OK_AND_ASSIGN(GpuSample sample, devices->Sample(0));
  EXPECT_EQ(sample.time, MonotonicTimeFromNanos(1'000));
  EXPECT_EQ(sample.memory_used_bytes, 12ull << 30);
  EXPECT_THAT(sample.utilization, Optional(DoubleNear(0.37, 1e-12)));
  EXPECT_EQ(sample.sm_occupancy, std::nullopt) << "one GPM sample is not a window";
}

TEST(NvmlDevices, LostGpuMakesSampleUnavailable) {
  FakeNvml fake;
  fake.gpus = {H100("GPU-0")};
  ASSERT_OK_AND_ASSIGN(GpuDevicesPtr devices, nvml::OpenNvmlDevicesWithApi(fake.Api(), nullptr));
  fake.gpus[0].memory_result = nvml::NVML_ERROR_GPU_IS_LOST;
  EXPECT_THAT(devices->Sample(0), StatusIs(absl::StatusCode::kUnavailable,
                                           HasSubstr("nvmlDeviceGetMemoryInfo (GPU 0): GPU is "
                                                     "lost (15)")));
}

TEST(NvmlDevices, UtilizationFailureLeavesOnlyThatFieldEmpty) {
  FakeNvml fake;
  fake.gpus = {H100("GPU-0")};
  fake.gpus[0].utilization_result = nvml::NVML_ERROR_NOT_SUPPORTED;
  ASSERT_OK_AND_ASSIGN(GpuDevicesPtr devices, nvml::OpenNvmlDevicesWithApi(fake.Api(), nullptr));
  EXPECT_THAT(devices->gpus()[0].limitations,
              ElementsAre(HasSubstr("utilization: nvmlDeviceGetUtilizationRates: Not Supported")));
  ASSERT_OK_AND_ASSIGN(GpuSample sample, devices->Sample(0));
  EXPECT_EQ(sample.utilization, std::nullopt);
}

// GPM: the first window opens when the devices open; a window closes only when it is at least
// 100 ms long, and the occupancy is the counters' growth over it.
TEST(NvmlDevices, GpmOccupancyIsTheRateOverWindowsOfAtLeast100Ms) {
  FakeNvml fake;
  fake.gpus = {H100("GPU-0")};
  SimulatedClock clock;
  ASSERT_OK_AND_ASSIGN(GpuDevicesPtr devices, nvml::OpenNvmlDevicesWithApi(fake.Api(), &clock));
  FakeGpu& gpu = fake.gpus[0];

  gpu.Run(50'000'000, 40);
  clock.Advance(50ms);
  ASSERT_OK_AND_ASSIGN(GpuSample early, devices->Sample(0));
  EXPECT_EQ(early.sm_occupancy, std::nullopt) << "a 50 ms window is below NVML's 100 ms floor";
  EXPECT_EQ(fake.metrics_get_calls, 0);

  // Window 1 = 150 ms: 100 ms at 40% then 50 ms at 10%: (100*40 + 50*10) / 150 = 30%.
  gpu.Run(50'000'000, 40);
  gpu.Run(50'000'000, 10);
  clock.Advance(100ms);
  ASSERT_OK_AND_ASSIGN(GpuSample first, devices->Sample(0));
  EXPECT_THAT(first.sm_occupancy, Optional(DoubleNear(0.30, 1e-12)));

  // 60 ms later the window is still open: the last closed window's value stands.
  gpu.Run(60'000'000, 80);
  clock.Advance(60ms);
  ASSERT_OK_AND_ASSIGN(GpuSample between, devices->Sample(0));
  EXPECT_THAT(between.sm_occupancy, Optional(DoubleNear(0.30, 1e-12)));

  // Window 2 = 120 ms: 60 ms at 80% then 60 ms at 20%: 50%.
  gpu.Run(60'000'000, 20);
  clock.Advance(60ms);
  ASSERT_OK_AND_ASSIGN(GpuSample second, devices->Sample(0));
  EXPECT_THAT(second.sm_occupancy, Optional(DoubleNear(0.50, 1e-12)));
  EXPECT_EQ(fake.metrics_get_calls, 2);
}

TEST(NvmlDevices, GpmUnsupportedIsALimitationNotAnError) {
  FakeNvml fake;
  fake.gpus = {H100("GPU-0")};
  fake.gpus[0].gpm_supported = false;
  SimulatedClock clock;
  ASSERT_OK_AND_ASSIGN(GpuDevicesPtr devices, nvml::OpenNvmlDevicesWithApi(fake.Api(), &clock));
  clock.Advance(200ms);
  ASSERT_OK_AND_ASSIGN(GpuSample sample, devices->Sample(0));
  EXPECT_EQ(sample.sm_occupancy, std::nullopt);
  EXPECT_EQ(fake.live_gpm_samples, 0);
  EXPECT_THAT(devices->Describe(), HasSubstr("GPM on 0"));
}

TEST(NvmlDevices, DriverWithoutGpmFunctionsIsALimitation) {
  FakeNvml fake;
  fake.gpus = {H100("GPU-0")};
  nvml::NvmlApi api = fake.Api();
  api.nvmlGpmMetricsGet = nullptr;
  api.nvmlSystemGetNVMLVersion = nullptr;
  ASSERT_OK_AND_ASSIGN(GpuDevicesPtr devices, nvml::OpenNvmlDevicesWithApi(api, nullptr));
  EXPECT_THAT(devices->gpus()[0].limitations,
              ElementsAre(HasSubstr("the library has no GPM functions")));
  EXPECT_THAT(devices->Describe(), HasSubstr("NVML ? (driver 580.159), 1 GPU, GPM on 0"));
}

TEST(NvmlDevices, ProcessUtilizationIsReadSinceTheLastSeenTimestamp) {
  FakeNvml fake;
  fake.gpus = {H100("GPU-0")};
  FakeGpu& gpu = fake.gpus[0];
  gpu.process_samples = {ProcessSample(200, 1'000, 30), ProcessSample(100, 1'100, 60),
                         ProcessSample(200, 1'200, 50)};
  ASSERT_OK_AND_ASSIGN(GpuDevicesPtr devices, nvml::OpenNvmlDevicesWithApi(fake.Api(), nullptr));
  ASSERT_OK_AND_ASSIGN(GpuSample first, devices->Sample(0));
  // pid 200: (30% + 50%) / 2 = 40%.
  ASSERT_EQ(first.processes.size(), 2u);
  EXPECT_EQ(first.processes[0].pid, 100);
  EXPECT_DOUBLE_EQ(first.processes[0].sm_utilization, 0.60);
  EXPECT_EQ(first.processes[1].pid, 200);
  EXPECT_DOUBLE_EQ(first.processes[1].sm_utilization, 0.40);

  ASSERT_OK_AND_ASSIGN(GpuSample nothing_new, devices->Sample(0));
  EXPECT_THAT(nothing_new.processes, IsEmpty()) << "NOT_FOUND means no process ran since";

  gpu.process_samples.push_back(ProcessSample(100, 1'300, 90));
  ASSERT_OK_AND_ASSIGN(GpuSample third, devices->Sample(0));
  ASSERT_EQ(third.processes.size(), 1u);
  EXPECT_DOUBLE_EQ(third.processes[0].sm_utilization, 0.90);
  EXPECT_THAT(gpu.last_seen_arguments, ElementsAre(0ull, 1'200ull));
}

TEST(NvmlDevices, ProcessUtilizationUnsupportedIsALimitation) {
  FakeNvml fake;
  fake.gpus = {H100("GPU-0")};
  fake.gpus[0].process_result = nvml::NVML_ERROR_NOT_SUPPORTED;
  ASSERT_OK_AND_ASSIGN(GpuDevicesPtr devices, nvml::OpenNvmlDevicesWithApi(fake.Api(), nullptr));
  EXPECT_THAT(devices->gpus()[0].limitations,
              ElementsAre(HasSubstr("processes: nvmlDeviceGetProcessUtilization: Not Supported")));
  EXPECT_THAT(devices->Describe(), HasSubstr("per-process utilisation on 0"));
  ASSERT_OK_AND_ASSIGN(GpuSample sample, devices->Sample(0));
  EXPECT_THAT(sample.processes, IsEmpty());
}

TEST(NvmlDevices, ClosingFreesGpmSamplesAndShutsNvmlDown) {
  FakeNvml fake;
  fake.gpus = {H100("GPU-0"), H100("GPU-1")};
  {
    ASSERT_OK_AND_ASSIGN(GpuDevicesPtr devices, nvml::OpenNvmlDevicesWithApi(fake.Api(), nullptr));
    EXPECT_EQ(fake.live_gpm_samples, 4) << "two buffers per GPU";
  }
  EXPECT_EQ(fake.live_gpm_samples, 0);
  EXPECT_EQ(fake.init_calls, 1);
  EXPECT_EQ(fake.shutdown_calls, 1);
}

TEST(NvmlProcessSamples, MergeAveragesPerPidDropsSeenSamplesAndClamps) {
  const nvml::nvmlProcessUtilizationSample_t samples[] = {
      ProcessSample(7, 500, 99),   // not newer than last_seen 500: dropped
      ProcessSample(9, 600, 20),   // pid 9: (20 + 40) / 2 = 30%
      ProcessSample(7, 650, 150),  // clamped to 100%
      ProcessSample(9, 700, 40),
  };
  const nvml::MergedProcessUtilization merged = nvml::MergeProcessSamples(samples, 4, 500);
  ASSERT_EQ(merged.processes.size(), 2u);
  EXPECT_EQ(merged.processes[0].pid, 7);
  EXPECT_DOUBLE_EQ(merged.processes[0].sm_utilization, 1.0);
  EXPECT_EQ(merged.processes[1].pid, 9);
  EXPECT_DOUBLE_EQ(merged.processes[1].sm_utilization, 0.30);
  EXPECT_EQ(merged.last_seen_timestamp_us, 700u);
}

TEST(NvmlProcessSamples, NothingNewKeepsTheLastSeenTimestamp) {
  const nvml::nvmlProcessUtilizationSample_t samples[] = {ProcessSample(7, 400, 10)};
  const nvml::MergedProcessUtilization merged = nvml::MergeProcessSamples(samples, 1, 500);
  EXPECT_THAT(merged.processes, IsEmpty());
  EXPECT_EQ(merged.last_seen_timestamp_us, 500u);
}

TEST(NvmlGpm, PercentBecomesRatioAndNonsenseIsDropped) {
  EXPECT_THAT(nvml::GpmPercentToRatio(42.5), Optional(DoubleNear(0.425, 1e-12)));
  EXPECT_THAT(nvml::GpmPercentToRatio(100.3), Optional(1.0)) << "counter skew";
  EXPECT_EQ(nvml::GpmPercentToRatio(-1), std::nullopt);
  EXPECT_EQ(nvml::GpmPercentToRatio(250), std::nullopt);
  EXPECT_EQ(nvml::GpmPercentToRatio(std::nan("")), std::nullopt);
}

}  // namespace
}  // namespace wavepool::agent
