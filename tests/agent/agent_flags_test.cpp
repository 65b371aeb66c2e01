// The wavepool-agent binary's duration flags: a value that is not a number of seconds in the
// flag's range (NaN, infinity, one so large that its nanoseconds overflow, one so small that it
// rounds to none) stops the agent at start, naming the flag, instead of starting it with the
// feature the flag times silently turned off.
#include <chrono>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/spawn.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace wavepool::agent {
namespace {

using ::testing::HasSubstr;
using ::wavepool::testing::ProcessResult;
using ::wavepool::testing::RunProcess;
using ::wavepool::testing::SpawnOptions;
using ::wavepool::testing::TempDir;

class AgentFlags : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK_AND_ASSIGN(dir_, TempDir::Create("wavepool-flags")); }

  // The agent with `flags` (each "--flag=value": CLI11 would take "-inf" or "-1" for options of
  // their own) on simulated GPUs, needing nothing from outside. Flags it accepts start it:
  // RunProcess then kills it at the limit (timed_out).
  ProcessResult Run(const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {WAVEPOOL_AGENT_BINARY,
                                     "--devices",
                                     "simulated:1",
                                     "--trust-register",
                                     "--no-publish",
                                     "--mps=off",
                                     "--metrics-address",
                                     "",
                                     "--dir",
                                     dir_.File("run")};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return RunProcess(argv, SpawnOptions{}, std::chrono::seconds(3));
  }

  TempDir dir_;
};

TEST_F(AgentFlags, DurationsOutsideTheirRangeAreRefusedNamingTheFlag) {
  for (const std::string flag : {"--publish-interval", "--cheat-quiet-period"}) {
    // 1e10 s overflows int64 nanoseconds; 1e-12 s is 0 ns.
    for (const std::string value : {"1e10", "nan", "inf", "-inf", "1e-12", "0", "-1", "ten"}) {
      const ProcessResult run = Run({flag + "=" + value});
      EXPECT_TRUE(run.exited && run.exit_status == 2) << flag << " " << value << ": " << run;
      EXPECT_THAT(run.err,
                  HasSubstr(flag + ": must be a number of seconds in [0.001, 86400], got " + value))
          << run;
    }
  }
}

TEST_F(AgentFlags, DurationsAtTheEndsOfTheirRangeStartTheAgent) {
  const ProcessResult run = Run({"--publish-interval=86400", "--cheat-quiet-period=0.001"});
  EXPECT_TRUE(run.timed_out) << run;  // still running: it started
  EXPECT_THAT(run.out, HasSubstr("wavepool-agent ")) << run;
}

}  // namespace
}  // namespace wavepool::agent
