// Where the API serves each kind of object: group, version, plural, scope, and the URL paths that
// follow from them (the Kubernetes API conventions: /api/v1/... for the core group,
// /apis/<group>/<version>/... for the others).
//
// Plain values; safe to share between threads once built.
#ifndef WAVEPOOL_KUBE_RESOURCE_H_
#define WAVEPOOL_KUBE_RESOURCE_H_

#include <string>
#include <string_view>

namespace wavepool::kube {

struct ResourceType {
  std::string group;    // "" for the core group
  std::string version;  // "v1", "v1alpha1"
  std::string kind;     // "Pod"
  std::string plural;   // "pods": the path segment
  bool namespaced = true;

  // "v1", "coordination.k8s.io/v1": an object's apiVersion.
  std::string ApiVersion() const;

  // "/api/v1/namespaces/<ns>/pods", "/apis/wavepool.dev/v1alpha1/gpunodes". `ns` is ignored for
  // cluster-scoped types; an empty `ns` on a namespaced type means every namespace
  // ("/api/v1/pods"). Segments are percent-encoded.
  std::string CollectionPath(std::string_view ns) const;

  // CollectionPath(ns) + "/<name>".
  std::string ObjectPath(std::string_view ns, std::string_view name) const;
};

// The built-in types wavepool reads and writes. Its own kinds (TrainingJob, GPUNode) are
// api::kTrainingJobs and api::kGpuNodes (wavepool/api/kube_resources.h): the client knows no CRD.
inline const ResourceType kNamespaces{"", "v1", "Namespace", "namespaces", false};
inline const ResourceType kPods{"", "v1", "Pod", "pods", true};
inline const ResourceType kNodes{"", "v1", "Node", "nodes", false};
inline const ResourceType kConfigMaps{"", "v1", "ConfigMap", "configmaps", true};
inline const ResourceType kEvents{"", "v1", "Event", "events", true};
inline const ResourceType kLeases{"coordination.k8s.io", "v1", "Lease", "leases", true};
inline const ResourceType kCustomResourceDefinitions{
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", false};

}  // namespace wavepool::kube

#endif  // WAVEPOOL_KUBE_RESOURCE_H_
