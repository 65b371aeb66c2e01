// wavepool-test-apiserver: the test API server standalone, for kubectl, helm and people.
//
//   wavepool-test-apiserver --port 0 --data-dir /tmp/api --kubeconfig-out /tmp/kubeconfig
//   KUBECONFIG=/tmp/kubeconfig kubectl get namespaces
//   curl -X POST http://127.0.0.1:<port>/wavepool-test/drop-watches   # also compact, restart
//
//   wavepool-test-apiserver --tls --authorization-mode=RBAC --kubeconfig-out /tmp/admin-kubeconfig
//   KUBECONFIG=/tmp/admin-kubeconfig kubectl create token <serviceaccount> -n <namespace>
//
// With --authorization-mode=RBAC every request needs a bearer token (the kubeconfig's admin
// token, or a ServiceAccount's from the TokenRequest API) and is allowed only by the stored RBAC
// objects; --admin-token-out writes the admin token alone (for curl). kubectl sends tokens only to
// an https:// server: --tls serves HTTPS (a self-signed certificate made at start, written into the
// kubeconfig as its CA).
//
// Runs until SIGINT or SIGTERM. Exit status: 0 after a signal, 1 when the server cannot start or
// a file cannot be written, 2 for bad flags.
#include <pthread.h>
#include <signal.h>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "tests/support/apiserver/test_server.h"
#include "tests/support/files.h"

namespace {

using wavepool::testing::apiserver::TestApiServer;

// Writes one of the files the caller asked for; false, with the error on stderr, when it fails.
bool WriteOutputFile(const std::string& path, const std::string& contents) {
  if (absl::Status written = wavepool::testing::WriteFile(path, contents); !written.ok()) {
    std::cerr << "wavepool-test-apiserver: " << written.message() << "\n";
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"The wavepool test API server: kube-apiserver semantics on a loopback port"};
  TestApiServer::Options options;
  std::string kubeconfig_out;
  std::string port_file;
  std::size_t history_size = options.store.history_size;
  std::string authorization_mode = "AlwaysAllow";
  std::string admin_token_out;
  bool tls = false;
  app.add_option("--address", options.address, "Address to listen on")->capture_default_str();
  app.add_option("--port", options.port, "Port to listen on; 0 picks a free one (printed)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--data-dir", options.store.data_dir,
                 "Directory that keeps objects across restarts (empty: memory only)");
  app.add_option("--history-size", history_size, "Watch events kept for resuming watches")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--kubeconfig-out", kubeconfig_out, "Write a kubeconfig for this server here");
  app.add_option("--port-file", port_file, "Write the chosen port here");
  app.add_option("--authorization-mode", authorization_mode,
                 "AlwaysAllow (no credentials needed), or RBAC (bearer tokens, and the stored "
                 "Roles, ClusterRoles and bindings decide)")
      ->check(CLI::IsMember({"AlwaysAllow", "RBAC"}))
      ->capture_default_str();
  app.add_flag("--tls", tls,
               "Serve HTTPS with a self-signed certificate (the kubeconfig carries it as the CA)");
  app.add_option("--admin-token-out", admin_token_out,
                 "Write the admin token (group system:masters) here");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    app.exit(error);
    return 2;
  }
  options.store.history_size = history_size;
  options.tls = tls;
  options.authorization_mode = authorization_mode == "RBAC"
                                   ? wavepool::testing::apiserver::AuthorizationMode::kRbac
                                   : wavepool::testing::apiserver::AuthorizationMode::kAlwaysAllow;

  // Block the signals before any thread starts, so that only sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto server = TestApiServer::Start(options);
  if (!server.ok()) {
    std::cerr << "wavepool-test-apiserver: " << server.status() << "\n";
    return 1;
  }
  const std::string url = (*server)->url();
  const std::string port = url.substr(url.rfind(':') + 1);
  if (!kubeconfig_out.empty() && !WriteOutputFile(kubeconfig_out, (*server)->Kubeconfig()))
    return 1;
  if (!port_file.empty() && !WriteOutputFile(port_file, port + "\n")) return 1;
  if (!admin_token_out.empty() &&
      !WriteOutputFile(admin_token_out, (*server)->AdminToken() + "\n")) {
    return 1;
  }
  std::cout << "serving on " << url << std::endl;

  int received = 0;
  sigwait(&signals, &received);
  std::cout << "wavepool-test-apiserver: signal " << received << ", stopping" << std::endl;
  server->reset();
  return 0;
}
