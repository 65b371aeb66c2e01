// One of kube-apiserver's pod validation rules that the template policy does not check and the
// test API server does not apply: the pod fields env vars read through the downward API. Tests
// refuse pods with it as a real API server would (422 Invalid), through FakeCluster::ValidatePods
// or in front of the test API server, to see what the controller does with a pod it cannot create.
#ifndef WAVEPOOL_TESTS_CONTROLLER_POD_VALIDATION_H_
#define WAVEPOOL_TESTS_CONTROLLER_POD_VALIDATION_H_

#include <optional>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"

namespace wavepool::controller {

// One field error of a refused pod, as kube-apiserver's field.Error words it.
struct PodFieldError {
  std::string field;   // "spec.containers[0].env[1].valueFrom.fieldRef.fieldPath"
  std::string detail;  // "Unsupported value: \"spec.bogus\": supported values: ..."
  std::string reason = "FieldValueInvalid";  // the cause's reason
};

// The first env[*].valueFrom.fieldRef.fieldPath of the pod's containers and init containers that
// kube-apiserver refuses: not one of the pod fields it lets an env var read (metadata.name,
// spec.nodeName, status.podIP, metadata.labels['<key>'], ...). nullopt when every path passes.
std::optional<PodFieldError> EnvFieldPathError(const nlohmann::json& pod);

// The body of the 422 answer (a metav1.Status, reason Invalid, the error as its cause) to the
// creation of pod `name`, worded as kube-apiserver words it:
// `Pod "<name>" is invalid: <field>: <detail>`.
nlohmann::json InvalidPodStatus(std::string_view name, const PodFieldError& error);

}  // namespace wavepool::controller

#endif  // WAVEPOOL_TESTS_CONTROLLER_POD_VALIDATION_H_
