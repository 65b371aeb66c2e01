// Where a ClientConfig comes from: a kubeconfig file, kubectl's search for one, or the pod's
// service account.
//
//   DefaultConfigOptions options;
//   options.explicit_path = kubeconfig_flag;
//   absl::StatusOr<ClientConfig> config = LoadDefaultConfig(options);
//
// Kubeconfig support: clusters (server, certificate-authority / -data,
// insecure-skip-tls-verify), users (token, tokenFile, client-certificate / -data,
// client-key / -data), contexts (cluster, user, namespace) and current-context. Relative file
// paths are resolved against the directory of the kubeconfig that names them, as kubectl does.
// Users that need exec or auth-provider plugins, or basic auth, are refused with a message
// naming the user (wavepool cannot run plugins). All functions are thread-safe; the
// environment-reading ones read it when called.
#ifndef WAVEPOOL_KUBE_KUBECONFIG_H_
#define WAVEPOOL_KUBE_KUBECONFIG_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "wavepool/kube/config.h"

namespace wavepool::kube {

// The configuration of `context` in the kubeconfig at `path` (its current-context when `context`
// is empty). NotFound: no such file, or no such context; InvalidArgument: the file is not a
// kubeconfig (the message names the field, "users[admin].user.client-key-data: not base64").
absl::StatusOr<ClientConfig> LoadKubeconfig(const std::string& path, std::string_view context = "");

// The same for a kubeconfig given as text; relative paths are resolved against `base_dir`, and
// `source` names it in messages.
absl::StatusOr<ClientConfig> ParseKubeconfig(std::string_view text, std::string_view source,
                                             const std::string& base_dir,
                                             std::string_view context = "");

struct InClusterOptions {
  // Where the service account's token, ca.crt and namespace are mounted.
  std::string service_account_dir = "/var/run/secrets/kubernetes.io/serviceaccount";
  // nullopt: $KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT.
  std::optional<std::string> service_host;
  std::optional<std::string> service_port;
};

// The configuration of a pod talking to its own cluster: https://<host>:<port> (an IPv6 host in
// brackets), the CA from ca.crt, the token file (read again when kubelet rotates it) and the
// namespace file (the pod's namespace; "default" when absent). FailedPrecondition when not in a
// cluster (no service host or port, no token).
absl::StatusOr<ClientConfig> InClusterConfig(const InClusterOptions& options = {});

struct DefaultConfigOptions {
  std::string explicit_path;  // --kubeconfig; wins over everything else
  std::string context;        // --context; empty: the current-context
  // nullopt: the environment's $KUBECONFIG and $HOME.
  std::optional<std::string> kubeconfig_env;
  std::optional<std::string> home;
  InClusterOptions in_cluster;
};

// kubectl's precedence: explicit_path; else the files of $KUBECONFIG (':'-separated; missing
// ones skipped; merged, the first file to define a cluster, user or context or to set
// current-context wins); else $HOME/.kube/config. When none of these exists, the in-cluster
// configuration (client-go's fallback), and NotFound, naming every place looked at, when that
// fails too.
absl::StatusOr<ClientConfig> LoadDefaultConfig(const DefaultConfigOptions& options = {});

}  // namespace wavepool::kube

#endif  // WAVEPOOL_KUBE_KUBECONFIG_H_
