// `wavepool run --devices`: simulated GPUs are the default, NVML is used only when asked for or
// found, and a spelling the flag does not know is an error naming it.
#include "local_devices.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace wavepool::local {
namespace {

using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

TEST(OpenMachineGpus, SimulatedOpensNothing) {
  ClockPtr clock = MakeRealClock();
  ASSERT_OK_AND_ASSIGN(agent::GpuDevicesPtr devices, OpenMachineGpus("simulated", *clock));
  EXPECT_EQ(devices, nullptr);
}

TEST(OpenMachineGpus, AnUnknownSpecIsNamed) {
  ClockPtr clock = MakeRealClock();
  EXPECT_THAT(OpenMachineGpus("gpu", *clock),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--devices: must be simulated, nvml or auto, got 'gpu'")));
}

TEST(OpenMachineGpus, AutoFallsBackToSimulatedAndNvmlSaysWhyItCannot) {
  ClockPtr clock = MakeRealClock();
  ASSERT_OK_AND_ASSIGN(agent::GpuDevicesPtr found, OpenMachineGpus("auto", *clock));
  if (found != nullptr) {  // a machine with GPUs: auto and nvml both open them
    EXPECT_FALSE(found->gpus().empty());
    ASSERT_OK_AND_ASSIGN(agent::GpuDevicesPtr nvml, OpenMachineGpus("nvml", *clock));
    EXPECT_EQ(nvml->gpus().size(), found->gpus().size());
    return;
  }
  EXPECT_THAT(OpenMachineGpus("nvml", *clock),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("--devices nvml: ")));
}

}  // namespace
}  // namespace wavepool::local
