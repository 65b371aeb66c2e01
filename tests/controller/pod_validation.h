// One of kube-apiserver's pod validation rules that the template policy does not check and the
// test API server does not apply: the keys of ConfigMaps that env vars read. Tests refuse pods
// with it as a real API server would (422 Invalid), through FakeCluster::ValidatePods or in front
// of the test API server, to see what the controller does with a pod it cannot create.
#ifndef WAVEPOOL_TESTS_CONTROLLER_POD_VALIDATION_H_
#define WAVEPOOL_TESTS_CONTROLLER_POD_VALIDATION_H_

#include <optional>
#include <string>
#include <string_view>

#include "nlohmann/json.hpp"

namespace wavepool::controller {

// One field error of a refused pod, as kube-apiserver's field.Error words it.
struct PodFieldError {
  std::string field;   // "spec.containers[0].env[1].valueFrom.configMapKeyRef.key"
  std::string detail;  // "Invalid value: \"a/b\": a valid config key must consist of ..."
};

// The first env[*].valueFrom.configMapKeyRef.key of the pod's containers and init containers
// that kube-apiserver refuses: not 1 to 253 of [-._a-zA-Z0-9] (apimachinery's IsConfigMapKey).
// nullopt when every key passes.
std::optional<PodFieldError> ConfigMapKeyError(const nlohmann::json& pod);

// The body of the 422 answer (a metav1.Status, reason Invalid, the error as its cause) to the
// creation of pod `name`, worded as kube-apiserver words it:
// `Pod "<name>" is invalid: <field>: <detail>`.
nlohmann::json InvalidPodStatus(std::string_view name, const PodFieldError& error);

}  // namespace wavepool::controller

#endif  // WAVEPOOL_TESTS_CONTROLLER_POD_VALIDATION_H_
