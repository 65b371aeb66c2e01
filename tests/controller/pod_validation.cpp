// kube-apiserver's env var name rule and its 422 answer (pod_validation.h).
#include "tests/controller/pod_validation.h"

#include "absl/strings/str_cat.h"

namespace wavepool::controller {
namespace {

// apimachinery pkg/util/validation: IsRelaxedEnvVarName.
bool IsEnvVarName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    if (c < ' ' || c > '~' || c == '=') return false;
  }
  return true;
}

std::optional<PodFieldError> ContainerEnvError(const nlohmann::json& containers,
                                               std::string_view list) {
  if (!containers.is_array()) return std::nullopt;
  for (std::size_t i = 0; i < containers.size(); ++i) {
    const nlohmann::json env = containers[i].value("env", nlohmann::json::array());
    if (!env.is_array()) continue;
    for (std::size_t j = 0; j < env.size(); ++j) {
      const std::string name = env[j].value("name", "");
      if (IsEnvVarName(name)) continue;
      return PodFieldError{
          absl::StrCat("spec.", std::string(list), "[", i, "].env[", j, "].name"),
          absl::StrCat("Invalid value: \"", name,
                       "\": a valid environment variable name must consist only of printable "
                       "ASCII characters other than '='")};
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<PodFieldError> EnvVarNameError(const nlohmann::json& pod) {
  const nlohmann::json spec = pod.value("spec", nlohmann::json::object());
  if (std::optional<PodFieldError> error =
          ContainerEnvError(spec.value("containers", nlohmann::json()), "containers")) {
    return error;
  }
  return ContainerEnvError(spec.value("initContainers", nlohmann::json()), "initContainers");
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
