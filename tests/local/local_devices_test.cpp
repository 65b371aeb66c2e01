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

TEST(OpenMachineGpus, SimulatedOpensNothingAndTakesACount) {
  ClockPtr clock = MakeRealClock();
  ASSERT_OK_AND_ASSIGN(MachineGpus any, OpenMachineGpus("simulated", *clock));
  EXPECT_EQ(any.nvml, nullptr);
  EXPECT_EQ(any.simulated, 0u);
  ASSERT_OK_AND_ASSIGN(MachineGpus four, OpenMachineGpus("simulated:4", *clock));
  EXPECT_EQ(four.nvml, nullptr);
  EXPECT_EQ(four.simulated, 4u);
  EXPECT_THAT(OpenMachineGpus("simulated:0", *clock),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("GPU count >= 1")));
}

TEST(OpenMachineGpus, AnUnknownSpecIsNamed) {
  ClockPtr clock = MakeRealClock();
  EXPECT_THAT(
      OpenMachineGpus("gpu", *clock),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("--devices: must be simulated, simulated:N, nvml or auto, got 'gpu'")));
}

TEST(OpenMachineGpus, AutoFallsBackToSimulatedAndNvmlSaysWhyItCannot) {
  ClockPtr clock = MakeRealClock();
  ASSERT_OK_AND_ASSIGN(MachineGpus found, OpenMachineGpus("auto", *clock));
  if (found.nvml != nullptr) {  // a machine with GPUs: auto and nvml both open them
    EXPECT_FALSE(found.nvml->gpus().empty());
    ASSERT_OK_AND_ASSIGN(MachineGpus nvml, OpenMachineGpus("nvml", *clock));
    ASSERT_NE(nvml.nvml, nullptr);
    EXPECT_EQ(nvml.nvml->gpus().size(), found.nvml->gpus().size());
    return;
  }
  EXPECT_THAT(OpenMachineGpus("nvml", *clock),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("--devices nvml: ")));
}

}  // namespace
}  // namespace wavepool::local
