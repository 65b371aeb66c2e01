// kube-apiserver's rule for the pod fields env vars read and its 422 answer (pod_validation.h).
#include "tests/controller/pod_validation.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace wavepool::controller {
namespace {

// k8s.io/kubernetes pkg/apis/core/validation: validEnvDownwardAPIFieldPathExpressions, in the
// order the server lists them.
constexpr const char* kSupportedFieldPaths[] = {
    "metadata.annotations", "metadata.labels", "metadata.name",           "metadata.namespace",
    "metadata.uid",         "spec.nodeName",   "spec.serviceAccountName", "status.hostIP",
    "status.hostIPs",       "status.podIP",    "status.podIPs",
};

bool IsSupportedFieldPath(const std::string& path) {
  // A label or annotation by key: metadata.labels['<key>'].
  if (absl::StartsWith(path, "metadata.labels['") ||
      absl::StartsWith(path, "metadata.annotations['")) {
    return absl::EndsWith(path, "']");
  }
  return std::find(std::begin(kSupportedFieldPaths), std::end(kSupportedFieldPaths), path) !=
         std::end(kSupportedFieldPaths);
}

std::optional<PodFieldError> ContainerFieldPathError(const nlohmann::json& containers,
                                                     std::string_view list) {
  if (!containers.is_array()) return std::nullopt;
  for (std::size_t i = 0; i < containers.size(); ++i) {
    const nlohmann::json env = containers[i].value("env", nlohmann::json::array());
    if (!env.is_array()) continue;
    for (std::size_t j = 0; j < env.size(); ++j) {
      const nlohmann::json ref = env[j].value("/valueFrom/fieldRef"_json_pointer, nlohmann::json());
      if (!ref.is_object()) continue;
      const std::string path = ref.value("fieldPath", "");
      if (IsSupportedFieldPath(path)) continue;
      return PodFieldError{absl::StrCat("spec.", std::string(list), "[", i, "].env[", j,
                                        "].valueFrom.fieldRef.fieldPath"),
                           absl::StrCat("Unsupported value: \"", path, "\": supported values: \"",
                                        absl::StrJoin(std::begin(kSupportedFieldPaths),
                                                      std::end(kSupportedFieldPaths), "\", \""),
                                        "\""),
                           "FieldValueNotSupported"};
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<PodFieldError> EnvFieldPathError(const nlohmann::json& pod) {
  const nlohmann::json spec = pod.value("spec", nlohmann::json::object());
  if (std::optional<PodFieldError> error =
          ContainerFieldPathError(spec.value("containers", nlohmann::json()), "containers")) {
    return error;
  }
  return ContainerFieldPathError(spec.value("initContainers", nlohmann::json()), "initContainers");
}

nlohmann::json InvalidPodStatus(std::string_view name, const PodFieldError& error) {
  return {
      {"kind", "Status"},
      {"apiVersion", "v1"},
      {"metadata", nlohmann::json::object()},
      {"status", "Failure"},
      {"message", absl::StrCat("Pod \"", std::string(name), "\" is invalid: ", error.field, ": ",
                               error.detail)},
      {"reason", "Invalid"},
      {"details",
       {{"name", std::string(name)},
        {"kind", "Pod"},
        {"causes",
         nlohmann::json::array(
             {{{"reason", error.reason}, {"message", error.detail}, {"field", error.field}}})}}},
      {"code", 422}};
}

}  // namespace wavepool::controller
