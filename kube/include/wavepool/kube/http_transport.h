// The production Transport: HTTP(S) to ClientConfig::server through cpprestsdk.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<Transport> transport, NewHttpTransport(config));
//   Client client(config, std::move(transport));   // or simply Client::Connect(config)
//
// What it does with the configuration:
//   - one cpprest http_client per timeout, reused for every request (keep-alive connections);
//   - https: only certificate_authority_pem is trusted when it is set (the system's store
//     otherwise); client_certificate_pem/client_key_pem authenticate the client;
//     insecure_skip_tls_verify turns verification off;
//   - "Authorization: Bearer <token>": bearer_token_file is stat()ed before each request and read
//     again when its modification time, size or inode changed (kubelet rotates projected
//     service-account tokens by swapping a symlink); when it cannot be read the last token read
//     from it is kept;
//   - "User-Agent: <user_agent>";
//   - HttpRequest::timeout (or config.timeout when 0) bounds each send and each receive;
//     a Stream's timeout is rounded up to a power of two seconds, and its default is an hour
//     of silence, since a watch may idle that long between events.
//
// Errors: no connection, a reset or a TLS failure → Unavailable; a timeout → DeadlineExceeded;
// a cancelled stream → Cancelled. The returned transport is safe for concurrent use.
#ifndef WAVEPOOL_KUBE_HTTP_TRANSPORT_H_
#define WAVEPOOL_KUBE_HTTP_TRANSPORT_H_

#include <memory>

#include "absl/status/statusor.h"
#include "wavepool/kube/config.h"
#include "wavepool/kube/transport.h"

namespace wavepool::kube {

// InvalidArgument when config.server is not an http(s) URL or a PEM block does not load
// (the message names the field: "certificate_authority_pem: ...").
absl::StatusOr<std::unique_ptr<Transport>> NewHttpTransport(const ClientConfig& config);

}  // namespace wavepool::kube

#endif  // WAVEPOOL_KUBE_HTTP_TRANSPORT_H_
