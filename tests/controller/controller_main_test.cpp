// The wavepool-controller binary's command line: bad flags exit 2 naming the flag, an API server
// that cannot be reached exits 1 saying so.
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/controller/api_server_scene.h"
#include "tests/support/eventually.h"
#include "tests/support/spawn.h"
#include "tests/support/status_matchers.h"
#include "wavepool/kube/client.h"
#include "wavepool/kube/resource.h"

namespace {

using ::testing::AllOf;
using ::testing::Field;
using ::testing::HasSubstr;
using ::wavepool::testing::Eventually;

struct ProcessResult {
  int exit_code = -1;
  std::string output;  // stdout, then stderr
};

void PrintTo(const ProcessResult& run, std::ostream* os) {
  *os << "exit code " << run.exit_code << ", output:\n" << run.output;
}

// A run that exited 2, the usage error, naming `flag`.
::testing::Matcher<ProcessResult> RejectsFlag(const std::string& flag) {
  return AllOf(Field("exit_code", &ProcessResult::exit_code, 2),
               Field("output", &ProcessResult::output, HasSubstr(flag)));
}

#ifndef WAVEPOOL_CONTROLLER_BINARY
#define WAVEPOOL_CONTROLLER_BINARY "wavepool-controller"
#endif

// A safety net for one run of the binary, never a statement about speed.
constexpr std::chrono::seconds kLimit(120);

// Runs the binary with `arguments` (split at spaces), waiting at most kLimit.
ProcessResult RunController(const std::string& arguments) {
  std::vector<std::string> argv = {WAVEPOOL_CONTROLLER_BINARY};
  for (absl::string_view word : absl::StrSplit(arguments, ' ', absl::SkipEmpty())) {
    argv.emplace_back(word);
  }
  const ::wavepool::testing::ProcessResult run = ::wavepool::testing::RunProcess(argv, {}, kLimit);
  ProcessResult result;
  if (run.exited) result.exit_code = run.exit_status;
  result.output = run.out + run.err;
  return result;
}

TEST(ControllerMain, UnknownFlagExitsTwoNamingIt) {
  EXPECT_THAT(RunController("--no-such-flag"), RejectsFlag("--no-such-flag"));
}

TEST(ControllerMain, BadFlagValueExitsTwoNamingTheFlag) {
  EXPECT_THAT(RunController("--workers 0"), RejectsFlag("--workers"));
  EXPECT_THAT(RunController("--http-port 70000"), RejectsFlag("--http-port"));
}

TEST(ControllerMain, PodStartTimeoutIsAFlagCheckedAtStartUp) {
  EXPECT_THAT(RunController("--pod-start-timeout -5"), RejectsFlag("--pod-start-timeout"));
  EXPECT_THAT(RunController("--pod-start-timeout 99999999"), RejectsFlag("--pod-start-timeout"));
  EXPECT_THAT(RunController("--pod-start-timeout soon"), RejectsFlag("--pod-start-timeout"));
  const ProcessResult help = RunController("--help");
  EXPECT_THAT(help.output, HasSubstr("--pod-start-timeout"));
}

TEST(ControllerMain, BadTemplatePolicyFlagsExitTwoNamingTheFlag) {
  EXPECT_THAT(RunController("--allow-template-field spec.hostPID"),
              RejectsFlag("--allow-template-field"));
  EXPECT_THAT(RunController("--allow-host-path data"), RejectsFlag("--allow-host-path"));
  EXPECT_THAT(RunController("--allow-service-account Admin"),
              RejectsFlag("--allow-service-account"));
  EXPECT_THAT(RunController("--default-image Registry/Worker:1"), RejectsFlag("--default-image"));
}

// A kubeconfig naming a server nobody listens on (port 1 on loopback): a run that gets as far as
// the API server exits 1, so an exit 2 says the flag was refused before any request.
std::string UnreachableKubeconfig() {
  const std::string path = ::testing::TempDir() + "/unreachable.kubeconfig";
  std::ofstream(path) << R"(apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "http://127.0.0.1:1"}
users:
- name: u
  user: {}
contexts:
- name: x
  context: {cluster: c, user: u, namespace: default}
current-context: x
)";
  return path;
}

// Options every job's pods (or the Lease) would carry, which the API server would refuse: the
// controller stops before its first request instead of failing every job with PodRejected.
TEST(ControllerMain, PodOptionsTheApiServerWouldRefuseExitTwoBeforeAnyRequest) {
  const std::string base = "--kubeconfig " + UnreachableKubeconfig() + " --http-port -1 ";
  const std::pair<const char*, const char*> cases[] = {
      {"--agent-socket-gid 3000000000", "--agent-socket-gid"},
      {"--agent-dir var/run/wavepool", "--agent-dir"},
      {"--agent-dir /var/run/wavepool --mps-dir /var/run/wavepool", "--mps-dir"},
      {"--mps-dir /dev/shm", "--mps-dir"},
      {"--checkpoint-host-root /", "--checkpoint-host-root"},
      {"--checkpoint-host-root /data/../etc", "--checkpoint-host-root"},
      {"--background-priority-class Low_Priority", "--background-priority-class"},
      {"--lease-name wavepool/controller", "--lease-name"},
      {"--lease-namespace Wavepool-System", "--lease-namespace"},
      {"--namespace ../secrets", "--namespace"},
      {"--default-device h1000", "--default-device"},
  };
  for (const auto& [flags, flag] : cases) {
    EXPECT_THAT(RunController(base + flags), RejectsFlag(flag)) << flags;
  }
  // The same kubeconfig with good flags gets as far as the server.
  EXPECT_EQ(RunController(base + "--agent-socket-gid 2147483647 --background-priority-class "
                                 "wavepool-background")
                .exit_code,
            1);
}

TEST(ControllerMain, HelpExitsZero) {
  const ProcessResult run = RunController("--help");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_THAT(run.output, HasSubstr("--leader-elect"));
}

TEST(ControllerMain, UnreachableApiServerExitsOneSayingSo) {
  // Port 1 on loopback: nothing listens there, so the connection is refused at once.
  const std::string path = UnreachableKubeconfig();
  const ProcessResult run = RunController("--kubeconfig " + path + " --http-port -1");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.output, HasSubstr("cannot reach the API server at http://127.0.0.1:1"));
}

// The binary runs against the test API server, takes the Lease, and on SIGTERM releases it and
// exits 0.
TEST(ControllerMain, RunsUntilSigtermThenReleasesTheLeaseAndExitsZero) {
  namespace kube = ::wavepool::kube;
  ASSERT_OK_AND_ASSIGN(::wavepool::controller::ApiServerScene scene,
                       ::wavepool::controller::StartApiServerScene());
  const std::string kubeconfig = ::testing::TempDir() + "/controller-main.kubeconfig";
  std::ofstream(kubeconfig) << scene.server->Kubeconfig();

  ASSERT_OK_AND_ASSIGN(const pid_t pid,
                       ::wavepool::testing::Spawn(
                           {WAVEPOOL_CONTROLLER_BINARY, "--kubeconfig", kubeconfig, "--http-port",
                            "-1", "--lease-namespace", "default", "--identity", "main-test"}));
  const auto holder = [&]() -> std::string {
    absl::StatusOr<nlohmann::json> lease =
        scene.client->Get(kube::kLeases, "default", "wavepool-controller");
    if (!lease.ok()) return "(none)";
    return lease->value("/spec/holderIdentity"_json_pointer, "");
  };
  Eventually([&] { return holder() == "main-test"; });
  EXPECT_EQ(holder(), "main-test");
  // SIGTERM; SIGKILL (not an exit) if it is still running after kLimit.
  const std::optional<int> status = ::wavepool::testing::StopChild(pid, kLimit);
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFEXITED(*status));
  EXPECT_EQ(WEXITSTATUS(*status), 0);
  EXPECT_EQ(holder(), "");  // released, as client-go's ReleaseOnCancel leaves it
}

}  // namespace
