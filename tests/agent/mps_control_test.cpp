#include "wavepool/agent/mps_control.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/files.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace wavepool::agent {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::wavepool::testing::TempDir;

// Records commands; `-d` fails for the GPUs listed in `failing`; a daemon answers
// get_server_list for the GPUs listed in `alive_uuids`.
class FakeRunner final : public CommandRunner {
 public:
  bool exists = true;
  std::vector<std::string> failing_uuids;
  std::vector<std::string> alive_uuids;
  std::vector<std::string> commands;  // "argv | env | input"

  bool Exists(const std::string&) const override { return exists; }
  absl::StatusOr<CommandResult> Run(const std::vector<std::string>& argv,
                                    const std::vector<std::string>& env,
                                    const std::string& input) override {
    commands.push_back(absl::StrJoin(argv, " ") + " | " + absl::StrJoin(env, " ") + " | " + input);
    if (input == "get_server_list\n") {
      for (const std::string& uuid : alive_uuids) {
        if (env.front() == "CUDA_VISIBLE_DEVICES=" + uuid) return CommandResult{0, "\n"};
      }
      return CommandResult{1, "Cannot find MPS control daemon process\n"};
    }
    for (const std::string& uuid : failing_uuids) {
      if (env.front() == "CUDA_VISIBLE_DEVICES=" + uuid) return CommandResult{1, "no GPU\n"};
    }
    return CommandResult{0, ""};
  }
};

TEST(MpsControl, StartsOneDaemonPerGpuWithItsOwnPipes) {
  FakeRunner runner;
  ASSERT_OK_AND_ASSIGN(const TempDir temp_dir, TempDir::Create("mps"));
  const std::string dir = temp_dir.path();
  MpsControl mps({dir, "nvidia-cuda-mps-control", MpsMode::kAuto}, &runner);
  mps.Start({{0, "GPU-a"}, {1, "GPU-b"}});
  EXPECT_EQ(mps.PipeDirectory(1), dir + "/mps/1/pipe");
  EXPECT_EQ(mps.Status(), "MPS on 2 of 2 GPUs");
  EXPECT_THAT(runner.commands,
              Contains("nvidia-cuda-mps-control -d | CUDA_VISIBLE_DEVICES=GPU-b "
                       "CUDA_MPS_PIPE_DIRECTORY=" +
                       dir + "/mps/1/pipe CUDA_MPS_LOG_DIRECTORY=" + dir + "/mps/1/log | "));
  mps.Stop();
  EXPECT_THAT(
      runner.commands,
      Contains(HasSubstr("CUDA_VISIBLE_DEVICES=GPU-a CUDA_MPS_PIPE_DIRECTORY=" + dir +
                         "/mps/0/pipe CUDA_MPS_LOG_DIRECTORY=" + dir + "/mps/0/log | quit\n")));
  EXPECT_THAT(mps.PipeDirectory(0), IsEmpty());
}

TEST(MpsControl, DegradesCleanlyWithoutTheProgram) {
  FakeRunner runner;
  runner.exists = false;
  ASSERT_OK_AND_ASSIGN(const TempDir temp_dir, TempDir::Create("mps"));
  MpsControl mps({temp_dir.path(), "nvidia-cuda-mps-control", MpsMode::kAuto}, &runner);
  mps.Start({{0, "GPU-a"}});
  EXPECT_THAT(mps.PipeDirectory(0), IsEmpty());
  EXPECT_EQ(mps.Status(), "MPS off: nvidia-cuda-mps-control not found");
  EXPECT_THAT(runner.commands, IsEmpty());
}

TEST(MpsControl, AFailingDaemonLeavesThatGpuWithoutMps) {
  FakeRunner runner;
  runner.failing_uuids = {"GPU-b"};
  ASSERT_OK_AND_ASSIGN(const TempDir temp_dir, TempDir::Create("mps"));
  MpsControl mps({temp_dir.path(), "nvidia-cuda-mps-control", MpsMode::kOn}, &runner);
  mps.Start({{0, "GPU-a"}, {1, "GPU-b"}});
  EXPECT_FALSE(mps.PipeDirectory(0).empty());
  EXPECT_TRUE(mps.PipeDirectory(1).empty());
  EXPECT_EQ(mps.Status(),
            "MPS on 1 of 2 GPUs; GPU 1: nvidia-cuda-mps-control -d exited with 1: no GPU");
}

// What a control daemon leaves in its pipe directory.
void PlantControlPipe(const std::string& pipe_directory) {
  std::filesystem::create_directories(pipe_directory);
  ASSERT_EQ(mkfifo((pipe_directory + "/control").c_str(), 0600), 0);
  ASSERT_OK(::wavepool::testing::WriteFile(pipe_directory + "/control_lock", ""));
}

TEST(MpsControl, AdoptsADaemonAPreviousAgentLeftRunning) {
  FakeRunner runner;
  runner.alive_uuids = {"GPU-a"};
  ASSERT_OK_AND_ASSIGN(const TempDir temp_dir, TempDir::Create("mps"));
  const std::string dir = temp_dir.path();
  PlantControlPipe(dir + "/mps/0/pipe");
  MpsControl mps({dir, "nvidia-cuda-mps-control", MpsMode::kAuto}, &runner);
  mps.Start({{0, "GPU-a"}, {1, "GPU-b"}});
  EXPECT_EQ(mps.PipeDirectory(0), dir + "/mps/0/pipe");
  EXPECT_EQ(mps.Status(), "MPS on 2 of 2 GPUs (1 adopted from a previous agent)");
  // GPU 0's daemon answered: no second one is started there; GPU 1 gets its own.
  EXPECT_THAT(runner.commands, Not(Contains(HasSubstr("-d | CUDA_VISIBLE_DEVICES=GPU-a"))));
  EXPECT_THAT(runner.commands, Contains(HasSubstr("-d | CUDA_VISIBLE_DEVICES=GPU-b")));
}

TEST(MpsControl, RestartsADaemonWhosePipeIsLeftButWhichIsGone) {
  FakeRunner runner;  // no daemon answers
  ASSERT_OK_AND_ASSIGN(const TempDir temp_dir, TempDir::Create("mps"));
  const std::string dir = temp_dir.path();
  PlantControlPipe(dir + "/mps/0/pipe");
  MpsControl mps({dir, "nvidia-cuda-mps-control", MpsMode::kAuto}, &runner);
  mps.Start({{0, "GPU-a"}});
  EXPECT_EQ(mps.Status(), "MPS on 1 of 1 GPUs");
  EXPECT_THAT(runner.commands, Contains(HasSubstr("| get_server_list")));
  EXPECT_THAT(runner.commands, Contains(HasSubstr("-d | CUDA_VISIBLE_DEVICES=GPU-a")));
  // The dead daemon's control files are gone, so that the new one can create its own.
  EXPECT_FALSE(std::filesystem::exists(dir + "/mps/0/pipe/control"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/mps/0/pipe/control_lock"));
}

TEST(MpsControl, ASymlinkedPipeDirectoryIsRefusedNotFollowed) {
  FakeRunner runner;
  ASSERT_OK_AND_ASSIGN(const TempDir temp_dir, TempDir::Create("mps"));
  ASSERT_OK_AND_ASSIGN(const TempDir other_dir, TempDir::Create("mps"));
  const std::string dir = temp_dir.path(), elsewhere = other_dir.path();
  std::filesystem::create_directories(dir + "/mps");
  std::filesystem::create_symlink(elsewhere, dir + "/mps/0");
  MpsControl mps({dir, "nvidia-cuda-mps-control", MpsMode::kAuto}, &runner);
  mps.Start({{0, "GPU-a"}});
  EXPECT_THAT(mps.PipeDirectory(0), IsEmpty());
  EXPECT_THAT(mps.Status(), HasSubstr("GPU 0: " + dir + "/mps/0: is a symbolic link"));
  EXPECT_TRUE(std::filesystem::is_empty(elsewhere));
  EXPECT_THAT(runner.commands, IsEmpty());
}

TEST(MpsControl, OffMeansOff) {
  FakeRunner runner;
  ASSERT_OK_AND_ASSIGN(const TempDir temp_dir, TempDir::Create("mps"));
  MpsControl mps({temp_dir.path(), "nvidia-cuda-mps-control", MpsMode::kOff}, &runner);
  mps.Start({{0, "GPU-a"}});
  EXPECT_THAT(runner.commands, IsEmpty());
  EXPECT_EQ(mps.Status(), "MPS off: turned off");
}

TEST(SystemCommandRunner, RunsAProgramWithInputAndEnvironment) {
  SystemCommandRunnerOptions options;
  options.programs = {"sh"};
  CommandRunnerPtr runner = MakeSystemCommandRunner(options);
  EXPECT_TRUE(runner->Exists("sh"));
  EXPECT_FALSE(runner->Exists("wavepool-no-such-program"));
  auto result = runner->Run({"sh", "-c", "read line; echo \"$GREETING $line\"; exit 3"},
                            {"GREETING=hello"}, "world\n");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->exit_status, 3);
  EXPECT_EQ(result->output, "hello world\n");
  EXPECT_FALSE(runner->Run({"wavepool-no-such-program"}, {}, "").ok());
}

}  // namespace
}  // namespace wavepool::agent
