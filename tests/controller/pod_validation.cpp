// kube-apiserver's config key rule for env vars and its 422 answer (pod_validation.h).
#include "tests/controller/pod_validation.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace wavepool::controller {
namespace {

// apimachinery pkg/util/validation: IsConfigMapKey (less its "." and ".." rules, which no test
// needs).
bool IsConfigMapKey(std::string_view key) {
  if (key.empty() || key.size() > 253) return false;
  for (char c : key) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

std::optional<PodFieldError> ContainerKeyError(const nlohmann::json& containers,
                                               std::string_view list) {
  if (!containers.is_array()) return std::nullopt;
  for (std::size_t i = 0; i < containers.size(); ++i) {
    const nlohmann::json env = containers[i].value("env", nlohmann::json::array());
    if (!env.is_array()) continue;
    for (std::size_t j = 0; j < env.size(); ++j) {
      const nlohmann::json ref =
          env[j].value("/valueFrom/configMapKeyRef"_json_pointer, nlohmann::json());
      if (!ref.is_object()) continue;
      const std::string key = ref.value("key", "");
      if (IsConfigMapKey(key)) continue;
      return PodFieldError{
          absl::StrCat("spec.", std::string(list), "[", i, "].env[", j,
                       "].valueFrom.configMapKeyRef.key"),
          absl::StrCat("Invalid value: \"", key,
                       "\": a valid config key must consist of alphanumeric characters, '-', "
                       "'_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used "
                       "for validation is '[-._a-zA-Z0-9]+')")};
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<PodFieldError> ConfigMapKeyError(const nlohmann::json& pod) {
  const nlohmann::json spec = pod.value("spec", nlohmann::json::object());
  if (std::optional<PodFieldError> error =
          ContainerKeyError(spec.value("containers", nlohmann::json()), "containers")) {
    return error;
  }
  return ContainerKeyError(spec.value("initContainers", nlohmann::json()), "initContainers");
}

nlohmann::json InvalidPodStatus(std::string_view name, const PodFieldError& error) {
  return {{"kind", "Status"},
          {"apiVersion", "v1"},
          {"metadata", nlohmann::json::object()},
          {"status", "Failure"},
          {"message", absl::StrCat("Pod \"", std::string(name), "\" is invalid: ", error.field,
                                   ": ", error.detail)},
          {"reason", "Invalid"},
          {"details",
           {{"name", std::string(name)},
            {"kind", "Pod"},
            {"causes", nlohmann::json::array({{{"reason", "FieldValueInvalid"},
                                               {"message", error.detail},
                                               {"field", error.field}}})}}},
          {"code", 422}};
}

}  // namespace wavepool::controller
