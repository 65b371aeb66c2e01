// Where the API server is and how to authenticate to it: from a kubeconfig file (kubectl's
// rules: --kubeconfig, $KUBECONFIG, ~/.kube/config; the current or a named context) or from
// inside a pod (the service account's token and CA, KUBERNETES_SERVICE_HOST/PORT).
#ifndef WAVEPOOL_KUBE_CONFIG_H_
#define WAVEPOOL_KUBE_CONFIG_H_

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

namespace wavepool::kube {

struct ClientConfig {
  std::string server;                     // "https://10.96.0.1:443", "http://127.0.0.1:8080"
  std::string certificate_authority_pem;  // empty: the system's trust store
  bool insecure_skip_tls_verify = false;
  std::string client_certificate_pem;
  std::string client_key_pem;
  std::string bearer_token;
  // Read again whenever it changes (projected service-account tokens rotate); wins over
  // bearer_token.
  std::string bearer_token_file;
  std::string default_namespace = "default";
  std::string user_agent = "wavepool";
  std::chrono::milliseconds timeout{30'000};  // per request, watches excepted
  std::string source;  // where this came from, for messages: "in-cluster", "kubeconfig <path>"
  // Where the client's warnings go, one line each; empty: standard error. A client warns once
  // when it first sends a bearer token over plain http (anyone on the path can read it), and once
  // when it first connects with insecure_skip_tls_verify (anyone on the path can pose as the
  // server and collect the credentials).
  std::function<void(std::string_view)> log;
};

}  // namespace wavepool::kube

#endif  // WAVEPOOL_KUBE_CONFIG_H_
