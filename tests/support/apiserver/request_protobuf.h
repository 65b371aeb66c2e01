// Kubernetes protobuf request bodies (application/vnd.kubernetes.protobuf) for the few built-in
// kinds that kubectl's generator commands send that way: `kubectl create namespace`,
// `create configmap`, `create secret generic` and `create serviceaccount`, and the
// authentication.k8s.io/v1 TokenRequest of `kubectl create token` and the authorization.k8s.io/v1
// SelfSubjectAccessReview of `kubectl auth can-i`. The body is the
// "k8s\0" magic and a runtime.Unknown envelope {typeMeta, raw}; raw is the object in the field
// numbers of k8s.io/api/core/v1/generated.proto. Every other kind, and any field these decoders do
// not know, is refused (the HTTP layer answers 415), never dropped. Pure functions.
#ifndef WAVEPOOL_TESTS_SUPPORT_APISERVER_REQUEST_PROTOBUF_H_
#define WAVEPOOL_TESTS_SUPPORT_APISERVER_REQUEST_PROTOBUF_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace wavepool::testing::apiserver {

// The object as JSON (apiVersion, kind, metadata, ...). InvalidArgument for a malformed body;
// Unimplemented for a kind or field not decoded here.
absl::StatusOr<nlohmann::json> DecodeProtobufObject(std::string_view body);

}  // namespace wavepool::testing::apiserver

#endif  // WAVEPOOL_TESTS_SUPPORT_APISERVER_REQUEST_PROTOBUF_H_
