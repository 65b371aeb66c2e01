// The configuration of a pod talking to its own cluster (client-go's rest.InClusterConfig).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "wavepool/kube/kubeconfig.h"

namespace wavepool::kube {
namespace {

std::string EnvOr(const std::optional<std::string>& given, const char* name) {
  if (given) return *given;
  const char* value = std::getenv(name);
  return value ? value : "";
}

bool ReadWhole(const std::string& path, std::string& text) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return false;
  std::stringstream buffer;
  buffer << file.rdbuf();
  text = buffer.str();
  return !file.bad();
}

}  // namespace

absl::StatusOr<ClientConfig> InClusterConfig(const InClusterOptions& options) {
  const std::string host = EnvOr(options.service_host, "KUBERNETES_SERVICE_HOST");
  const std::string port = EnvOr(options.service_port, "KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty()) {
    return absl::FailedPreconditionError(
        "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be "
        "set");
  }
  const std::filesystem::path dir(options.service_account_dir);
  ClientConfig config;
  config.source = "in-cluster";
  // An IPv6 address needs brackets in a URL (RFC 3986 §3.2.2), as net.JoinHostPort adds them.
  const bool ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  config.server = absl::StrCat("https://", ipv6 ? "[" + host + "]" : host, ":", port);
  std::string token;
  config.bearer_token_file = (dir / "token").string();
  if (!ReadWhole(config.bearer_token_file, token)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "in-cluster: cannot read the service account token ", config.bearer_token_file));
  }
  const std::string ca_path = (dir / "ca.crt").string();
  if (!ReadWhole(ca_path, config.certificate_authority_pem)) {
    return absl::FailedPreconditionError(
        absl::StrCat("in-cluster: cannot read the cluster CA ", ca_path));
  }
  std::string ns;
  if (ReadWhole((dir / "namespace").string(), ns)) {
    ns = std::string(absl::StripAsciiWhitespace(ns));
    if (!ns.empty()) config.default_namespace = ns;
  }
  return config;
}

}  // namespace wavepool::kube
