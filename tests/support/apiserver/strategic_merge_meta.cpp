// Patch strategies copied from the struct tags of k8s.io/api core/v1, apps/v1 and batch/v1
// (`patchStrategy:"merge" patchMergeKey:"name"`), for the fields kubectl patches.
#include "tests/support/apiserver/strategic_merge_meta.h"

#include <string>

namespace wavepool::testing::apiserver::strategic {
namespace {

FieldMeta Merge(std::string key, const StructMeta* type = nullptr) {
  return FieldMeta{"merge", std::move(key), type};
}
FieldMeta Struct(const StructMeta* type) { return FieldMeta{"", "", type}; }

// The types, built once; pointers between them stay valid for the process.
struct Registry {
  StructMeta object_meta, container, pod_spec, pod_status, pod_template, pod, pod_template_kind;
  StructMeta conditions_status, workload_spec, workload, job_spec, job, job_template, cron_job_spec,
      cron_job, node_spec, node_status, node, namespace_kind, service_spec, service, generic;

  Registry() {
    object_meta.fields = {{"ownerReferences", Merge("uid")}, {"finalizers", Merge("")}};
    container.fields = {{"ports", Merge("containerPort")},
                        {"env", Merge("name")},
                        {"volumeMounts", Merge("mountPath")},
                        {"volumeDevices", Merge("devicePath")}};
    pod_spec.fields = {{"volumes", FieldMeta{"merge,retainKeys", "name", nullptr}},
                       {"initContainers", Merge("name", &container)},
                       {"containers", Merge("name", &container)},
                       {"ephemeralContainers", Merge("name", &container)},
                       {"imagePullSecrets", Merge("name")},
                       {"hostAliases", Merge("ip")},
                       {"topologySpreadConstraints", Merge("topologyKey")},
                       {"resourceClaims", FieldMeta{"merge,retainKeys", "name", nullptr}},
                       {"schedulingGates", Merge("name")}};
    pod_status.fields = {
        {"conditions", Merge("type")}, {"podIPs", Merge("ip")}, {"hostIPs", Merge("ip")}};
    pod_template.fields = {{"metadata", Struct(&object_meta)}, {"spec", Struct(&pod_spec)}};
    pod.fields = {{"metadata", Struct(&object_meta)},
                  {"spec", Struct(&pod_spec)},
                  {"status", Struct(&pod_status)}};
    pod_template_kind.fields = {{"metadata", Struct(&object_meta)},
                                {"template", Struct(&pod_template)}};
    conditions_status.fields = {{"conditions", Merge("type")}};
    workload_spec.fields = {{"template", Struct(&pod_template)},
                            {"strategy", FieldMeta{"retainKeys", "", nullptr}}};
    workload.fields = {{"metadata", Struct(&object_meta)},
                       {"spec", Struct(&workload_spec)},
                       {"status", Struct(&conditions_status)}};
    job_spec.fields = {{"template", Struct(&pod_template)}};
    job.fields = {{"metadata", Struct(&object_meta)},
                  {"spec", Struct(&job_spec)},
                  {"status", Struct(&conditions_status)}};
    job_template.fields = {{"metadata", Struct(&object_meta)}, {"spec", Struct(&job_spec)}};
    cron_job_spec.fields = {{"jobTemplate", Struct(&job_template)}};
    cron_job.fields = {{"metadata", Struct(&object_meta)}, {"spec", Struct(&cron_job_spec)}};
    // NodeSpec.taints has no patch strategy in k8s.io/api: a patch replaces the whole list.
    node_spec.fields = {{"podCIDRs", Merge("")}};
    node_status.fields = {{"conditions", Merge("type")}, {"addresses", Merge("type")}};
    node.fields = {{"metadata", Struct(&object_meta)},
                   {"spec", Struct(&node_spec)},
                   {"status", Struct(&node_status)}};
    namespace_kind.fields = {{"metadata", Struct(&object_meta)},
                             {"status", Struct(&conditions_status)}};
    service_spec.fields = {{"ports", Merge("port")}};
    service.fields = {{"metadata", Struct(&object_meta)},
                      {"spec", Struct(&service_spec)},
                      {"status", Struct(&conditions_status)}};
    generic.fields = {{"metadata", Struct(&object_meta)}};
  }
};

const Registry& Types() {
  static const auto* registry = new Registry();
  return *registry;
}

bool IsBuiltInGroup(std::string_view group) {
  constexpr std::string_view kSuffix = ".k8s.io";
  return group.find('.') == std::string_view::npos ||
         (group.size() > kSuffix.size() && group.substr(group.size() - kSuffix.size()) == kSuffix);
}

}  // namespace

const StructMeta* KindMeta(std::string_view group, std::string_view kind) {
  if (!IsBuiltInGroup(group)) return nullptr;
  const Registry& t = Types();
  if (group.empty()) {
    if (kind == "Pod") return &t.pod;
    if (kind == "PodTemplate") return &t.pod_template_kind;
    if (kind == "ReplicationController") return &t.workload;
    if (kind == "Node") return &t.node;
    if (kind == "Namespace") return &t.namespace_kind;
    if (kind == "Service") return &t.service;
  } else if (group == "apps") {
    if (kind == "Deployment" || kind == "DaemonSet" || kind == "StatefulSet" ||
        kind == "ReplicaSet") {
      return &t.workload;
    }
  } else if (group == "batch") {
    if (kind == "Job") return &t.job;
    if (kind == "CronJob") return &t.cron_job;
  }
  return &t.generic;
}

const FieldMeta& FieldOf(const StructMeta* type, const std::string& field) {
  static const FieldMeta* const kNone = new FieldMeta();
  if (type == nullptr) return *kNone;
  auto it = type->fields.find(field);
  return it == type->fields.end() ? *kNone : it->second;
}

}  // namespace wavepool::testing::apiserver::strategic
