// The agent's host directory is writable by pods, its helper programs run as root, and any
// process may connect to its socket: no symbolic link is followed in the directory, programs
// come from fixed directories (never PATH) and are killed after their timeout, and a connection
// cannot buffer much or stay long before it registers.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "host_dir/no_follow_fs.h"
#include "tests/agent/socket_test_util.h"
#include "tests/support/status_matchers.h"
#include "wavepool/agent/agent.h"
#include "wavepool/agent/command_runner.h"
#include "wavepool/agent/simulated_gpu.h"

namespace wavepool::agent {
namespace {

using ::testing::HasSubstr;
using ::wavepool::agent::testing::RawClient;
using ::wavepool::agent::testing::RecordingHandler;
using ::wavepool::testing::StatusIs;
using ::wavepool::testing::TempDir;

namespace fs = std::filesystem;

// --- No symbolic link is followed
// ------------------------------------------------------------------

TEST(NoFollowFs, MakesNestedDirectoriesUnderTheRoot) {
  ASSERT_OK_AND_ASSIGN(const TempDir dir, TempDir::Create("wavepool-sock"));
  ASSERT_OK(internal::MakeDirectoriesUnder(dir.path(), "mps/0/pipe", 0755));
  EXPECT_TRUE(fs::is_directory(dir.File("mps/0/pipe")));
  ASSERT_OK(internal::MakeDirectoriesUnder(dir.path(), "mps/0/pipe", 0755));  // exists: fine
}

TEST(NoFollowFs, RefusesASymlinkedComponentAndCreatesNothingThroughIt) {
  ASSERT_OK_AND_ASSIGN(const TempDir dir, TempDir::Create("wavepool-sock"));
  ASSERT_OK_AND_ASSIGN(const TempDir elsewhere, TempDir::Create("wavepool-sock"));
  fs::create_symlink(elsewhere.path(), dir.File("mps"));
  EXPECT_THAT(internal::MakeDirectoriesUnder(dir.path(), "mps/0/pipe", 0755),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr(dir.File("mps") + ": is a symbolic link")));
  EXPECT_FALSE(fs::exists(elsewhere.path() + "/0"));
  EXPECT_THAT(internal::MakeDirectoriesUnder(dir.path(), "a/../b", 0755),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("\"..\"")));
}

TEST(NoFollowFs, RefusesASymlinkedAgentDirectory) {
  ASSERT_OK_AND_ASSIGN(const TempDir dir, TempDir::Create("wavepool-sock"));
  ASSERT_OK_AND_ASSIGN(const TempDir elsewhere, TempDir::Create("wavepool-sock"));
  fs::create_symlink(elsewhere.path(), dir.File("agent"));
  EXPECT_THAT(internal::MakeDirectoryNoFollow(dir.File("agent"), 0755),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("symbolic link")));
  ASSERT_OK(internal::MakeDirectoryNoFollow(dir.File("real"), 0755));
  EXPECT_TRUE(fs::is_directory(dir.File("real")));
}

TEST(NoFollowFs, ChmodRefusesALinkAndAReplacedFile) {
  ASSERT_OK_AND_ASSIGN(const TempDir dir, TempDir::Create("wavepool-sock"));
  std::ofstream(dir.File("target")) << "x";
  chmod(dir.File("target").c_str(), 0600);
  fs::create_symlink(dir.File("target"), dir.File("link"));
  EXPECT_THAT(internal::ChmodChownNoFollow(dir.File("link"), 0666, static_cast<gid_t>(-1)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("symbolic link")));
  struct stat st;
  ASSERT_EQ(stat(dir.File("target").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);  // the link's target is untouched
  ASSERT_OK(internal::ChmodChownNoFollow(dir.File("target"), 0640, static_cast<gid_t>(-1),
                                         internal::FileId{st.st_dev, st.st_ino}));
  ASSERT_EQ(stat(dir.File("target").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_THAT(internal::ChmodChownNoFollow(dir.File("target"), 0600, static_cast<gid_t>(-1),
                                           internal::FileId{st.st_dev, st.st_ino + 1}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("another file")));
}

TEST(NoFollowFs, TheAgentRefusesToStartInASymlinkedDirectory) {
  ASSERT_OK_AND_ASSIGN(const TempDir dir, TempDir::Create("wavepool-sock"));
  ASSERT_OK_AND_ASSIGN(const TempDir elsewhere, TempDir::Create("wavepool-sock"));
  fs::create_symlink(elsewhere.path(), dir.File("agent"));
  ClockPtr clock = MakeRealClock();
  CommandRunnerPtr runner = MakeSystemCommandRunner();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SimulatedGpus> devices,
                       SimulatedGpus::Create(*clock, SimulatedGpuOptions{}));
  AgentOptions options;
  options.directory = dir.File("agent");
  options.hostname = "node-a";
  options.mps.mode = MpsMode::kOff;
  options.trust_register = true;
  EXPECT_THAT(Agent::Start(options, std::move(devices), clock.get(), runner.get()).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("symbolic link")));
  EXPECT_TRUE(fs::is_empty(elsewhere.path()));  // no socket, no gate through the link
}

// --- Commands ----------------------------------------------------------------------------------

// A directory with one executable script.
std::string Script(const TempDir& dir, const std::string& name, const std::string& body) {
  const std::string path = dir.File(name);
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  chmod(path.c_str(), 0755);
  return path;
}

TEST(SystemCommandRunner, ResolvesProgramsOnceFromItsDirectoriesNeverFromPath) {
  ASSERT_OK_AND_ASSIGN(const TempDir fixed, TempDir::Create("wavepool-sock"));
  ASSERT_OK_AND_ASSIGN(const TempDir on_path, TempDir::Create("wavepool-sock"));
  Script(fixed, "nvidia-smi", "echo fixed");
  Script(on_path, "nvidia-smi", "echo from-path");
  Script(on_path, "nvidia-cuda-mps-control", "echo from-path");
  const std::string saved_path = std::getenv("PATH") != nullptr ? std::getenv("PATH") : "";
  setenv("PATH", (on_path.path() + ":" + saved_path).c_str(), 1);
  SystemCommandRunnerOptions options;
  options.directories = {fixed.path()};
  CommandRunnerPtr runner = MakeSystemCommandRunner(options);
  setenv("PATH", saved_path.c_str(), 1);
  EXPECT_TRUE(runner->Exists("nvidia-smi"));
  EXPECT_FALSE(runner->Exists("nvidia-cuda-mps-control"));  // only on PATH
  ASSERT_OK_AND_ASSIGN(CommandResult result, runner->Run({"nvidia-smi"}, {}, ""));
  EXPECT_EQ(result.output, "fixed\n");
  EXPECT_THAT(runner->Run({"nvidia-cuda-mps-control"}, {}, "").status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(fixed.path())));
  // Resolved at start: a program planted later is not picked up.
  Script(fixed, "nvidia-cuda-mps-control", "echo late");
  EXPECT_FALSE(runner->Exists("nvidia-cuda-mps-control"));
}

TEST(SystemCommandRunner, KillsAProgramThatRunsPastItsTimeout) {
  ASSERT_OK_AND_ASSIGN(const TempDir dir, TempDir::Create("wavepool-sock"));
  const std::string marker = dir.File("survived");
  Script(dir, "hang", "sleep 30; touch " + marker);
  SystemCommandRunnerOptions options;
  options.directories = {dir.path()};
  options.programs = {"hang"};
  options.timeout = std::chrono::milliseconds(200);
  CommandRunnerPtr runner = MakeSystemCommandRunner(options);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(
      runner->Run({"hang"}, {}, "").status(),
      StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("hang: killed after 200 ms")));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(SystemCommandRunner, ADaemonKeepingTheOutputOpenDoesNotHoldTheCaller) {
  ASSERT_OK_AND_ASSIGN(const TempDir dir, TempDir::Create("wavepool-sock"));
  // Like `nvidia-cuda-mps-control -d`: forks a long-lived child that inherits stdout, exits 0.
  Script(dir, "daemonize", "echo started; (sleep 30 &) ; exit 0");
  SystemCommandRunnerOptions options;
  options.directories = {dir.path()};
  options.programs = {"daemonize"};
  options.timeout = std::chrono::seconds(20);
  CommandRunnerPtr runner = MakeSystemCommandRunner(options);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_OK_AND_ASSIGN(CommandResult result, runner->Run({"daemonize"}, {}, ""));
  EXPECT_EQ(result.exit_status, 0);
  EXPECT_THAT(result.output, HasSubstr("started"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// --- Connections before Register -----------------------------------------------------------------

TEST(SocketServerLimits, AnUnregisteredConnectionCannotBufferMuch) {
  ASSERT_OK_AND_ASSIGN(const TempDir dir, TempDir::Create("wavepool-sock"));
  RecordingHandler handler;
  SocketServer::Options options;
  options.path = dir.File("agent.sock");
  options.max_unregistered_bytes = 4096;
  options.log = nullptr;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SocketServer> server,
                       SocketServer::Start(options, &handler));
  RawClient client(options.path);
  ASSERT_TRUE(client.connected());
  // The start of a frame that claims a large body, then bytes that never complete it.
  absl::StatusOr<std::string> frame = EncodeFrame(ReportIteration{1, 1.0, 1}, 1);
  ASSERT_OK(frame.status());
  std::string header = frame->substr(0, 16);
  header[12] = '\xff';  // body length: far beyond a Register
  header[13] = '\xff';
  header[14] = '\x0f';
  header[15] = '\0';
  ASSERT_TRUE(client.SendBytes(header + std::string(8192, 'x')));
  EXPECT_TRUE(client.ClosedByPeer());
  EXPECT_TRUE(testing::WaitUntil([&] { return server->connection_count() == 0; }));
}

// Connections that never register must not keep a worker from registering: at the limit a new
// connection closes the oldest unregistered one instead of being refused.
TEST(SocketServerLimits, AConnectionBeyondTheUnregisteredLimitClosesTheOldest) {
  ASSERT_OK_AND_ASSIGN(const TempDir dir, TempDir::Create("wavepool-sock"));
  RecordingHandler handler;
  SocketServer::Options options;
  options.path = dir.File("agent.sock");
  options.max_unregistered = 2;
  options.register_timeout = std::chrono::seconds(60);  // none expires during the test
  options.log = nullptr;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SocketServer> server,
                       SocketServer::Start(options, &handler));
  RawClient a(options.path);
  ASSERT_TRUE(testing::WaitUntil([&] { return server->connection_count() == 1; }));
  RawClient b(options.path);
  ASSERT_TRUE(testing::WaitUntil([&] { return server->connection_count() == 2; }));
  RawClient c(options.path);
  absl::StatusOr<Frame> closed = a.Receive();
  ASSERT_OK(closed.status());
  const auto* error = std::get_if<ErrorReply>(&closed->message);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(error->code, absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(error->message, HasSubstr("have not registered yet; closing the oldest"));
  // The newest registers; the second oldest is still open.
  ASSERT_TRUE(c.Register());
  absl::StatusOr<Frame> registered = c.Receive();
  ASSERT_OK(registered.status());
  EXPECT_TRUE(std::holds_alternative<Registered>(registered->message));
  ASSERT_TRUE(b.Register());
  registered = b.Receive();
  ASSERT_OK(registered.status());
  EXPECT_TRUE(std::holds_alternative<Registered>(registered->message));
}

}  // namespace
}  // namespace wavepool::agent
