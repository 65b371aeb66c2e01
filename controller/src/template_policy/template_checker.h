// The walk over a TrainingJob's spec.template that the template policy makes
// (template_policy.h): one handler per kind of object or value, called with the value and its
// path. Structure handlers and the allow list are in template_policy.cpp, value, privilege and
// image checks in template_checks.cpp. A Checker is used by one thread for one template.
#ifndef WAVEPOOL_CONTROLLER_SRC_TEMPLATE_POLICY_TEMPLATE_CHECKER_H_
#define WAVEPOOL_CONTROLLER_SRC_TEMPLATE_POLICY_TEMPLATE_CHECKER_H_

#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/types/span.h"
#include "nlohmann/json.hpp"
#include "template_policy/template_policy_internal.h"
#include "wavepool/api/training_job.h"
#include "wavepool/controller/template_policy.h"

namespace wavepool::controller::internal {

using nlohmann::json;

class Checker;
using Rule = void (Checker::*)(const json& value, const FieldPath& path);
struct FieldRule {
  std::string_view name;
  Rule check;
};
using Rules = absl::Span<const FieldRule>;

// Walks a template, stopping at the first violation: Fail keeps the first and ignores later
// ones. Handlers are called for present, non-null values of fields the operator has not allowed
// wholesale. `job` and `options` outlive the Checker.
class Checker {
 public:
  Checker(const api::TrainingJob& job, const TemplatePolicyOptions& options);
  const std::optional<TemplateViolation>& violation() const { return violation_; }
  void Fail(std::string_view reason, const FieldPath& path, std::string_view what);

  // Structure.
  void Object(const json& value, const FieldPath& path, Rules rules);
  void List(const json& value, const FieldPath& path, Rule each);
  // Objects and lists of objects by their rules (the tables of template_policy.cpp).
  void Template(const json& v, const FieldPath& p);
  void Metadata(const json& v, const FieldPath& p);
  void PodSpec(const json& v, const FieldPath& p);
  void Containers(const json& v, const FieldPath& p) { List(v, p, &Checker::Container); }
  void Container(const json& v, const FieldPath& p);
  void ContainerName(const json& v, const FieldPath& p);
  void EnvList(const json& v, const FieldPath& p) { List(v, p, &Checker::EnvVar); }
  void EnvVar(const json& v, const FieldPath& p);
  void EnvVarSource(const json& v, const FieldPath& p);
  void KeyRef(const json& v, const FieldPath& p);
  void FieldRef(const json& v, const FieldPath& p);
  void ResourceFieldRef(const json& v, const FieldPath& p);
  void EnvFromList(const json& v, const FieldPath& p) { List(v, p, &Checker::EnvFromSource); }
  void EnvFromSource(const json& v, const FieldPath& p);
  void NameRef(const json& v, const FieldPath& p);
  void Resources(const json& v, const FieldPath& p);
  void ResourceList(const json& v, const FieldPath& p);
  void Ports(const json& v, const FieldPath& p);
  void Port(const json& v, const FieldPath& p);
  void Mounts(const json& v, const FieldPath& p) { List(v, p, &Checker::Mount); }
  void Mount(const json& v, const FieldPath& p);
  void Volumes(const json& v, const FieldPath& p);
  void Volume(const json& v, const FieldPath& p);
  void EmptyDir(const json& v, const FieldPath& p);
  void ConfigMapVolume(const json& v, const FieldPath& p);
  void SecretVolume(const json& v, const FieldPath& p);
  void ClaimVolume(const json& v, const FieldPath& p);
  void ProjectedVolume(const json& v, const FieldPath& p);
  void Projections(const json& v, const FieldPath& p) { List(v, p, &Checker::Projection); }
  void Projection(const json& v, const FieldPath& p);
  void ProjectedItems(const json& v, const FieldPath& p);  // configMap and secret sources
  void DownwardApi(const json& v, const FieldPath& p);
  void DownwardItems(const json& v, const FieldPath& p) { List(v, p, &Checker::DownwardItem); }
  void DownwardItem(const json& v, const FieldPath& p);
  void KeyPaths(const json& v, const FieldPath& p) { List(v, p, &Checker::KeyPath); }
  void KeyPath(const json& v, const FieldPath& p);
  void Tolerations(const json& v, const FieldPath& p) { List(v, p, &Checker::Toleration); }
  void Toleration(const json& v, const FieldPath& p);
  void PullSecrets(const json& v, const FieldPath& p) { List(v, p, &Checker::NameRef); }
  void PodSecurity(const json& v, const FieldPath& p);
  void ContainerSecurity(const json& v, const FieldPath& p);
  void Capabilities(const json& v, const FieldPath& p);
  void Seccomp(const json& v, const FieldPath& p);

  // Values.
  void AnyObject(const json& v, const FieldPath& p);
  void String(const json& v, const FieldPath& p);
  void StringList(const json& v, const FieldPath& p);
  void StringMap(const json& v, const FieldPath& p);
  void Labels(const json& v, const FieldPath& p);
  void Annotations(const json& v, const FieldPath& p);
  void Bool(const json& v, const FieldPath& p);
  void NonNegativeInt(const json& v, const FieldPath& p);
  void FileMode(const json& v, const FieldPath& p);
  void PortNumber(const json& v, const FieldPath& p);
  void PortName(const json& v, const FieldPath& p);
  void EnvVarName(const json& v, const FieldPath& p);
  void DataKey(const json& v, const FieldPath& p);
  void EnvPrefix(const json& v, const FieldPath& p);
  void Quantity(const json& v, const FieldPath& p);
  void RelativePath(const json& v, const FieldPath& p);
  void AbsolutePath(const json& v, const FieldPath& p);
  void Image(const json& v, const FieldPath& p);
  void MountName(const json& v, const FieldPath& p);
  void OneOf(const json& v, const FieldPath& p, std::initializer_list<std::string_view> choices);
  void PullPolicy(const json& v, const FieldPath& p) {
    OneOf(v, p, {"Always", "IfNotPresent", "Never"});
  }
  void RestartPolicy(const json& v, const FieldPath& p) {
    OneOf(v, p, {"Always", "OnFailure", "Never"});
  }
  void Protocol(const json& v, const FieldPath& p) { OneOf(v, p, {"TCP", "UDP", "SCTP"}); }
  void Medium(const json& v, const FieldPath& p) { OneOf(v, p, {"", "Memory"}); }
  void ChangePolicy(const json& v, const FieldPath& p) {
    OneOf(v, p, {"OnRootMismatch", "Always"});
  }

  // Privilege and host access.
  void HostNamespace(const json& v, const FieldPath& p);
  void HostPort(const json& v, const FieldPath& p);
  void HostPath(const json& v, const FieldPath& p);
  void NotPrivileged(const json& v, const FieldPath& p);
  void CapabilitiesAdd(const json& v, const FieldPath& p);
  void SeccompType(const json& v, const FieldPath& p);
  void PositiveId(const json& v, const FieldPath& p);
  void PositiveIds(const json& v, const FieldPath& p);
  void ServiceAccount(const json& v, const FieldPath& p);

 private:
  bool Allowed(const FieldPath& path) const;
  // False after a Fail for a key of metadata.labels or .annotations that no template may set.
  bool MetadataKey(const std::string& key, const FieldPath& p);

  const api::TrainingJob& job_;
  const TemplatePolicyOptions& options_;
  std::vector<std::vector<internal::PathSegment>> allowed_;
  std::set<std::string> volume_names_;     // spec.template.spec.volumes[*].name, for mounts.
  std::set<std::string> container_names_;  // Of containers and initContainers seen so far.
  std::optional<TemplateViolation> violation_;
};

// Checks that no option widens, after the walk: GPU resources in any container, and every
// container's image (present, or the worker's default; parseable).
void CheckGpuResources(const json& pod_spec, Checker& checker);
void CheckImages(const json& pod_spec, std::string_view default_image, Checker& checker);

}  // namespace wavepool::controller::internal

#endif  // WAVEPOOL_CONTROLLER_SRC_TEMPLATE_POLICY_TEMPLATE_CHECKER_H_
