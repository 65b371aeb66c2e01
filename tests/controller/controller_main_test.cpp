// The wavepool-controller binary's command line: bad flags exit 2 naming the flag, an API server
// that cannot be reached exits 1 saying so.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/apiserver/test_server.h"
#include "tests/support/cluster/crds.h"
#include "tests/support/eventually.h"
#include "tests/support/status_matchers.h"
#include "wavepool/kube/client.h"
#include "wavepool/kube/resource.h"

namespace {

using ::testing::HasSubstr;
using ::wavepool::testing::Eventually;

struct ProcessResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

#ifndef WAVEPOOL_CONTROLLER_BINARY
#define WAVEPOOL_CONTROLLER_BINARY "wavepool-controller"
#endif

ProcessResult RunController(const std::string& arguments) {
  ProcessResult run;
  const std::string command = std::string(WAVEPOOL_CONTROLLER_BINARY) + " " + arguments + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buffer;
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) run.output += buffer.data();
  const int status = pclose(pipe);
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  return run;
}

TEST(ControllerMain, UnknownFlagExitsTwoNamingIt) {
  const ProcessResult run = RunController("--no-such-flag");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.output, HasSubstr("--no-such-flag"));
}

TEST(ControllerMain, BadFlagValueExitsTwoNamingTheFlag) {
  const ProcessResult workers = RunController("--workers 0");
  EXPECT_EQ(workers.exit_code, 2);
  EXPECT_THAT(workers.output, HasSubstr("--workers"));
  const ProcessResult port = RunController("--http-port 70000");
  EXPECT_EQ(port.exit_code, 2);
  EXPECT_THAT(port.output, HasSubstr("--http-port"));
}

TEST(ControllerMain, PodStartTimeoutIsAFlagCheckedAtStartUp) {
  const ProcessResult negative = RunController("--pod-start-timeout -5");
  EXPECT_EQ(negative.exit_code, 2);
  EXPECT_THAT(negative.output, HasSubstr("--pod-start-timeout"));
  const ProcessResult huge = RunController("--pod-start-timeout 99999999");
  EXPECT_EQ(huge.exit_code, 2);
  EXPECT_THAT(huge.output, HasSubstr("--pod-start-timeout"));
  const ProcessResult word = RunController("--pod-start-timeout soon");
  EXPECT_EQ(word.exit_code, 2);
  EXPECT_THAT(word.output, HasSubstr("--pod-start-timeout"));
  const ProcessResult help = RunController("--help");
  EXPECT_THAT(help.output, HasSubstr("--pod-start-timeout"));
}

TEST(ControllerMain, BadTemplatePolicyFlagsExitTwoNamingTheFlag) {
  const ProcessResult field = RunController("--allow-template-field spec.hostPID");
  EXPECT_EQ(field.exit_code, 2);
  EXPECT_THAT(field.output, HasSubstr("--allow-template-field"));
  const ProcessResult host = RunController("--allow-host-path data");
  EXPECT_EQ(host.exit_code, 2);
  EXPECT_THAT(host.output, HasSubstr("--allow-host-path"));
  const ProcessResult account = RunController("--allow-service-account Admin");
  EXPECT_EQ(account.exit_code, 2);
  EXPECT_THAT(account.output, HasSubstr("--allow-service-account"));
  const ProcessResult image = RunController("--default-image Registry/Worker:1");
  EXPECT_EQ(image.exit_code, 2);
  EXPECT_THAT(image.output, HasSubstr("--default-image"));
}

TEST(ControllerMain, HelpExitsZero) {
  const ProcessResult run = RunController("--help");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_THAT(run.output, HasSubstr("--leader-elect"));
}

TEST(ControllerMain, UnreachableApiServerExitsOneSayingSo) {
  // Port 1 on loopback: nothing listens there, so the connection is refused at once.
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
  const ProcessResult run = RunController("--kubeconfig " + path + " --http-port -1");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.output, HasSubstr("cannot reach the API server at http://127.0.0.1:1"));
}

// The binary runs against the test API server, takes the Lease, and on SIGTERM releases it and
// exits 0.
TEST(ControllerMain, RunsUntilSigtermThenReleasesTheLeaseAndExitsZero) {
  namespace kube = ::wavepool::kube;
  ASSERT_OK_AND_ASSIGN(auto server, ::wavepool::testing::apiserver::TestApiServer::Start({}));
  kube::ClientConfig config;
  config.server = server->url();
  ASSERT_OK_AND_ASSIGN(auto client, kube::Client::Connect(config));
  ASSERT_OK(::wavepool::testing::RegisterWavepoolCrds(*client));
  const std::string kubeconfig = ::testing::TempDir() + "/controller-main.kubeconfig";
  std::ofstream(kubeconfig) << server->Kubeconfig();

  std::vector<std::string> args = {
      WAVEPOOL_CONTROLLER_BINARY, "--kubeconfig", kubeconfig,   "--http-port", "-1",
      "--lease-namespace",        "default",      "--identity", "main-test"};
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execv(argv[0], argv.data());
    _exit(127);
  }
  const auto holder = [&]() -> std::string {
    absl::StatusOr<nlohmann::json> lease =
        client->Get(kube::kLeases, "default", "wavepool-controller");
    if (!lease.ok()) return "(none)";
    return lease->value("/spec/holderIdentity"_json_pointer, "");
  };
  Eventually([&] { return holder() == "main-test"; });
  EXPECT_EQ(holder(), "main-test");
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(holder(), "");  // released, as client-go's ReleaseOnCancel leaves it
}

}  // namespace
