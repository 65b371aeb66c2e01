// What a TrainingJob's pod template may contain (template_policy.h): the built-in allow list,
// the refusals with their reasons and field paths, and what the operator's options widen.
#include "wavepool/controller/template_policy.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/status_matchers.h"
#include "wavepool/api/manifest.h"

namespace wavepool::controller {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::wavepool::testing::StatusIs;

constexpr std::string_view kDefaultImage = "registry.example/wavepool-worker:1";

api::TrainingJob JobWith(json pod_template) {
  api::TrainingJob job;
  job.metadata.name = "train";
  job.metadata.namespace_ = "team";
  job.spec.pod_template = std::move(pod_template);
  return job;
}

// A template whose pod spec is `spec` (a worker container with an image unless `spec` has one).
json PodSpec(json spec) {
  if (!spec.contains("containers")) {
    spec["containers"] = json::array({{{"name", "worker"}, {"image", "worker:1"}}});
  }
  return {{"spec", std::move(spec)}};
}

// A worker container `container` (with an image unless given) in an otherwise empty template.
json WorkerWith(json container) {
  container["name"] = "worker";
  if (!container.contains("image")) container["image"] = "worker:1";
  return PodSpec({{"containers", json::array({container})}});
}

std::optional<TemplateViolation> Check(const json& pod_template,
                                       const TemplatePolicyOptions& options = {},
                                       std::string_view default_image = kDefaultImage) {
  return CheckPodTemplate(JobWith(pod_template), options, default_image);
}

// The template is refused for `reason` at `field`, and the message starts with the field.
void ExpectRefused(const std::optional<TemplateViolation>& violation, std::string_view reason,
                   const std::string& field) {
  ASSERT_TRUE(violation.has_value()) << "accepted; expected " << reason << " at " << field;
  EXPECT_EQ(violation->reason, reason) << violation->message;
  EXPECT_EQ(violation->field, field) << violation->message;
  EXPECT_THAT(violation->message, StartsWith(field + ": "));
}

TEST(TemplatePolicy, ATrainingTemplateUsingEveryAllowedFieldIsAccepted) {
  const json tmpl = json::parse(R"({
    "metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q"}, "annotations": {"note": "n"}},
    "spec": {
      "containers": [{
        "name": "worker", "image": "registry.example:5000/team/worker:1.2",
        "imagePullPolicy": "IfNotPresent", "command": ["python"], "args": ["train.py"],
        "workingDir": "/work",
        "env": [{"name": "A", "value": "1"},
                {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
                {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k",
                                                                "optional": true}}},
                {"name": "D", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
                {"name": "E", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu",
                                                                 "divisor": "1m"}}}],
        "envFrom": [{"configMapRef": {"name": "settings"}}, {"secretRef": {"name": "creds"},
                     "prefix": "S_"}],
        "ports": [{"containerPort": 8080, "name": "metrics", "protocol": "TCP"}],
        "resources": {"limits": {"cpu": "8", "memory": "64Gi", "ephemeral-storage": "10G"},
                      "requests": {"cpu": 4, "memory": "32Gi"}},
        "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": true},
                         {"name": "scratch", "mountPath": "/scratch", "subPath": "tmp"},
                         {"name": "config", "mountPath": "/etc/train"},
                         {"name": "tokens", "mountPath": "/var/tokens"},
                         {"name": "info", "mountPath": "/etc/info"}],
        "securityContext": {"runAsNonRoot": true, "runAsUser": 1000, "runAsGroup": 1000,
                            "privileged": false, "allowPrivilegeEscalation": false,
                            "readOnlyRootFilesystem": true,
                            "capabilities": {"drop": ["ALL"], "add": []},
                            "seccompProfile": {"type": "RuntimeDefault"}}
      }],
      "initContainers": [{"name": "fetch", "image": "busybox", "command": ["true"]}],
      "volumes": [
        {"name": "data", "persistentVolumeClaim": {"claimName": "imagenet", "readOnly": true}},
        {"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
        {"name": "config", "configMap": {"name": "train", "items": [{"key": "a", "path": "a.yaml"}],
                                         "defaultMode": 420}},
        {"name": "tokens", "projected": {"sources": [
            {"secret": {"name": "hub", "items": [{"key": "token", "path": "hub"}]}},
            {"downwardAPI": {"items": [{"path": "labels",
                                        "fieldRef": {"fieldPath": "metadata.labels"}}]}}]}},
        {"name": "info", "downwardAPI": {"items": [{"path": "name",
                                                    "fieldRef": {"fieldPath": "metadata.name"}}]}},
        {"name": "creds", "secret": {"secretName": "creds", "optional": false}}
      ],
      "nodeSelector": {"pool": "gpu"},
      "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
      "affinity": {"nodeAffinity": {}},
      "imagePullSecrets": [{"name": "registry"}],
      "securityContext": {"runAsNonRoot": true, "runAsUser": 1000, "fsGroup": 2000,
                          "supplementalGroups": [3000],
                          "seccompProfile": {"type": "Localhost",
                                             "localhostProfile": "train.json"}},
      "hostPID": false, "hostIPC": false, "hostNetwork": false,
      "serviceAccountName": "default", "automountServiceAccountToken": false,
      "terminationGracePeriodSeconds": 30, "restartPolicy": "Never"
    }})");
  const std::optional<TemplateViolation> violation = Check(tmpl);
  EXPECT_FALSE(violation.has_value()) << violation->message;
}

TEST(TemplatePolicy, EveryShippedExampleIsAccepted) {
  int jobs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::filesystem::path(WAVEPOOL_SOURCE_DIR) / "examples")) {
    if (entry.path().extension() != ".yaml") continue;
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_OK_AND_ASSIGN(std::vector<api::TrainingJob> loaded, api::LoadTrainingJobs(text));
    for (const api::TrainingJob& job : loaded) {
      const std::optional<TemplateViolation> violation = CheckPodTemplate(job, {}, kDefaultImage);
      EXPECT_FALSE(violation.has_value()) << entry.path() << ": " << violation->message;
      ++jobs;
    }
  }
  EXPECT_GE(jobs, 6);
}

TEST(TemplatePolicy, AnEmptyOrAbsentTemplateGetsTheDefaultImage) {
  EXPECT_FALSE(Check(nullptr).has_value());
  EXPECT_FALSE(Check(json::object()).has_value());
  EXPECT_FALSE(Check(WorkerWith({{"image", nullptr}})).has_value());
}

TEST(TemplatePolicy, NullFieldsCountAsAbsent) {
  // YAML's `hostPID:` with no value, or a field an editor left empty.
  EXPECT_FALSE(Check(PodSpec({{"hostPID", nullptr}, {"schedulerName", nullptr}})).has_value());
}

TEST(TemplatePolicyAdversarial, APrivilegedContainerIsRefused) {
  ExpectRefused(Check(WorkerWith({{"securityContext", {{"privileged", true}}}})),
                kReasonPrivilegedTemplate,
                "spec.template.spec.containers[0].securityContext.privileged");
}

TEST(TemplatePolicyAdversarial, PrivilegeEscalationAddedCapabilitiesAndRootAreRefused) {
  ExpectRefused(Check(WorkerWith({{"securityContext", {{"allowPrivilegeEscalation", true}}}})),
                kReasonPrivilegedTemplate,
                "spec.template.spec.containers[0].securityContext.allowPrivilegeEscalation");
  ExpectRefused(Check(WorkerWith({{"securityContext",
                                   {{"capabilities", {{"add", json::array({"SYS_ADMIN"})}}}}}})),
                kReasonPrivilegedTemplate,
                "spec.template.spec.containers[0].securityContext.capabilities.add");
  ExpectRefused(Check(WorkerWith({{"securityContext", {{"runAsUser", 0}}}})),
                kReasonPrivilegedTemplate,
                "spec.template.spec.containers[0].securityContext.runAsUser");
  ExpectRefused(Check(PodSpec({{"securityContext", {{"runAsGroup", 0}}}})),
                kReasonPrivilegedTemplate, "spec.template.spec.securityContext.runAsGroup");
  ExpectRefused(
      Check(PodSpec({{"securityContext", {{"seccompProfile", {{"type", "Unconfined"}}}}}})),
      kReasonPrivilegedTemplate, "spec.template.spec.securityContext.seccompProfile.type");
  ExpectRefused(Check(PodSpec({{"securityContext", {{"sysctls", json::array()}}}})),
                kReasonForbiddenTemplateField, "spec.template.spec.securityContext.sysctls");
}

TEST(TemplatePolicyAdversarial, HostNamespacesAreRefused) {
  for (const char* field : {"hostPID", "hostIPC", "hostNetwork"}) {
    ExpectRefused(Check(PodSpec({{field, true}})), kReasonHostAccessInTemplate,
                  std::string("spec.template.spec.") + field);
  }
}

TEST(TemplatePolicyAdversarial, AHostPathOfTheWholeNodeIsRefused) {
  const json tmpl =
      PodSpec({{"volumes", json::array({{{"name", "root"}, {"hostPath", {{"path", "/"}}}}})}});
  const std::optional<TemplateViolation> violation = Check(tmpl);
  ExpectRefused(violation, kReasonHostAccessInTemplate, "spec.template.spec.volumes[0].hostPath");
  EXPECT_THAT(violation->message, HasSubstr("--allow-host-path"));
}

TEST(TemplatePolicyAdversarial, AHostPortIsRefused) {
  ExpectRefused(
      Check(WorkerWith({{"ports", json::array({{{"containerPort", 22}, {"hostPort", 22}}})}})),
      kReasonHostAccessInTemplate, "spec.template.spec.containers[0].ports[0].hostPort");
}

TEST(TemplatePolicyAdversarial, AServiceAccountOtherThanDefaultIsRefused) {
  const std::optional<TemplateViolation> violation =
      Check(PodSpec({{"serviceAccountName", "cluster-admin"}}));
  ExpectRefused(violation, kReasonServiceAccountNotAllowed,
                "spec.template.spec.serviceAccountName");
  EXPECT_THAT(violation->message, HasSubstr("--allow-service-account team/cluster-admin"));
  ExpectRefused(Check(PodSpec({{"serviceAccount", "cluster-admin"}})),
                kReasonServiceAccountNotAllowed, "spec.template.spec.serviceAccount");
}

TEST(TemplatePolicyAdversarial, GpuResourcesAreRefusedEvenWhereTheOperatorWidened) {
  ExpectRefused(Check(WorkerWith({{"resources", {{"limits", {{"nvidia.com/gpu", 2}}}}}})),
                kReasonGpuResourceInTemplate,
                "spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]");
  ExpectRefused(
      Check(WorkerWith({{"resources", {{"requests", {{"nvidia.com/mig-1g.10gb", "1"}}}}}})),
      kReasonGpuResourceInTemplate,
      "spec.template.spec.containers[0].resources.requests[nvidia.com/mig-1g.10gb]");
  TemplatePolicyOptions wide;
  wide.allowed_fields = {"spec.template.spec.containers"};
  ExpectRefused(Check(WorkerWith({{"resources", {{"limits", {{"amd.com/gpu", 1}}}}}}), wide),
                kReasonGpuResourceInTemplate,
                "spec.template.spec.containers[0].resources.limits[amd.com/gpu]");
}

TEST(TemplatePolicyAdversarial, OtherExtendedResourcesNeedTheOperator) {
  const json tmpl = WorkerWith({{"resources", {{"limits", {{"rdma/hca", 1}}}}}});
  ExpectRefused(Check(tmpl), kReasonForbiddenTemplateField,
                "spec.template.spec.containers[0].resources.limits[rdma/hca]");
  TemplatePolicyOptions options;
  options.allowed_fields = {"spec.template.spec.containers[*].resources.limits[rdma/hca]"};
  EXPECT_FALSE(Check(tmpl, options).has_value());
}

TEST(TemplatePolicyAdversarial, FieldsOutsideTheListAreRefusedNamingTheFlagPath) {
  const std::optional<TemplateViolation> lifecycle =
      Check(WorkerWith({{"lifecycle", {{"postStart", {{"exec", {{"command", {"sh"}}}}}}}}}));
  ExpectRefused(lifecycle, kReasonForbiddenTemplateField,
                "spec.template.spec.containers[0].lifecycle");
  EXPECT_THAT(lifecycle->message,
              HasSubstr("--allow-template-field spec.template.spec.containers[*].lifecycle"));
  ExpectRefused(Check(PodSpec({{"priorityClassName", "system-cluster-critical"}})),
                kReasonForbiddenTemplateField, "spec.template.spec.priorityClassName");
  ExpectRefused(Check(PodSpec({{"nodeName", "other-node"}})), kReasonForbiddenTemplateField,
                "spec.template.spec.nodeName");
  ExpectRefused(
      Check(PodSpec({{"volumes", json::array({{{"name", "n"}, {"nfs", {{"server", "s"}}}}})}})),
      kReasonForbiddenTemplateField, "spec.template.spec.volumes[0].nfs");
  ExpectRefused(Check({{"metadata", {{"namespace", "kube-system"}}}}),
                kReasonForbiddenTemplateField, "spec.template.metadata.namespace");
}

TEST(TemplatePolicyAdversarial, AHugeValueGivesABoundedMessage) {
  // A condition message holds at most 32768 characters: the refusal must still fit.
  const std::string huge(100000, 'x');
  const std::optional<TemplateViolation> label = Check({{"metadata", {{"labels", {{huge, 1}}}}}});
  ASSERT_TRUE(label.has_value());
  EXPECT_EQ(label->reason, kReasonMalformedTemplate);
  EXPECT_LE(label->message.size(), 4096u);
  EXPECT_THAT(label->message, StartsWith("spec.template.metadata.labels[xxx"));
  const std::optional<TemplateViolation> image = Check(WorkerWith({{"image", "W" + huge}}));
  ASSERT_TRUE(image.has_value());
  EXPECT_EQ(image->reason, kReasonInvalidImage);
  EXPECT_LE(image->message.size(), 4096u);
}

TEST(TemplatePolicyAdversarial, TheControllersLabelsAndAnnotationsAreRefused) {
  // The controller reads these back from the pod (a preemption, a foreground's idle share) and
  // the node agent its role and GPUs: a template that set them would speak for the controller.
  ExpectRefused(
      Check({{"metadata", {{"annotations", {{"wavepool.dev/preempted-by", "team/other"}}}}}}),
      kReasonForbiddenTemplateField,
      "spec.template.metadata.annotations[wavepool.dev/preempted-by]");
  ExpectRefused(Check({{"metadata", {{"labels", {{"wavepool.dev/role", "Foreground"}}}}}}),
                kReasonForbiddenTemplateField, "spec.template.metadata.labels[wavepool.dev/role]");
  ExpectRefused(Check({{"metadata", {{"labels", {{"agent.wavepool.dev/gpu", "0"}}}}}}),
                kReasonForbiddenTemplateField,
                "spec.template.metadata.labels[agent.wavepool.dev/gpu]");
  const std::optional<TemplateViolation> reserved =
      Check({{"metadata", {{"annotations", {{"wavepool.dev/idle-fraction", "1"}}}}}});
  ASSERT_TRUE(reserved.has_value());
  EXPECT_THAT(reserved->message, HasSubstr("wavepool.dev/ are written by the controller"));
  // Only the domain itself and its subdomains are the controller's.
  EXPECT_EQ(Check({{"metadata",
                    {{"labels", {{"notwavepool.dev/x", "y"}, {"wavepool.dev", "y"}}},
                     {"annotations", {{"wavepool.dev.example.com/x", "y"}}}}}}),
            std::nullopt);
}

TEST(TemplatePolicyAdversarial, LabelsAndAnnotationsTheApiServerWouldRefuseAreRefused) {
  // The API server refuses a pod with any of these, over and over, while the gang's GPUs stay
  // reserved for pods that never come: the job must fail up front instead, naming the key.
  const std::string long_name(64, 'a');
  for (const std::string& key :
       {std::string("bad key"), std::string("example.com/"), std::string("Example.com/x"),
        std::string("a/b/c"), std::string("-x"), long_name, std::string("")}) {
    SCOPED_TRACE(key);
    ExpectRefused(Check({{"metadata", {{"labels", {{key, "v"}}}}}}), kReasonMalformedTemplate,
                  "spec.template.metadata.labels[" + key + "]");
    ExpectRefused(Check({{"metadata", {{"annotations", {{key, "v"}}}}}}), kReasonMalformedTemplate,
                  "spec.template.metadata.annotations[" + key + "]");
  }
  for (const std::string& value :
       {long_name, std::string("-x"), std::string("a b"), std::string("x.")}) {
    SCOPED_TRACE(value);
    ExpectRefused(Check({{"metadata", {{"labels", {{"team", value}}}}}}), kReasonMalformedTemplate,
                  "spec.template.metadata.labels[team]");
  }
  // Annotation values are free text, up to the API server's total for the pod.
  const std::string big(200 * 1024, 'x');
  EXPECT_EQ(Check({{"metadata", {{"annotations", {{"a", big}, {"b", "any text: a b/c"}}}}}}),
            std::nullopt);
  const std::optional<TemplateViolation> too_big =
      Check({{"metadata", {{"annotations", {{"a", big}, {"b", big}}}}}});
  ExpectRefused(too_big, kReasonMalformedTemplate, "spec.template.metadata.annotations");
  EXPECT_THAT(too_big->message, HasSubstr("got 409602"));
  // What the API server takes is taken.
  EXPECT_EQ(
      Check(
          {{"metadata",
            {{"labels",
              {{"kueue.x-k8s.io/queue-name", "q_1.A"}, {"empty", ""}, {"a", long_name.substr(1)}}},
             {"annotations", {{"example.com/Note_1", ""}}}}}}),
      std::nullopt);
}

TEST(TemplatePolicyAdversarial, ContainerNamesTheApiServerWouldRefuseAreRefused) {
  // As with labels: every pod would be refused while the gang's GPUs stay reserved.
  ExpectRefused(Check(PodSpec({{"containers", json::array({{{"image", "worker:1"}}})}})),
                kReasonMalformedTemplate, "spec.template.spec.containers[0].name");
  ExpectRefused(
      Check(PodSpec({{"containers", json::array({{{"name", "Worker_1"}, {"image", "w:1"}}})}})),
      kReasonMalformedTemplate, "spec.template.spec.containers[0].name");
  ExpectRefused(
      Check(PodSpec({{"containers", json::array({{{"name", "worker"}, {"image", "worker:1"}},
                                                 {{"name", "worker"}, {"image", "side:1"}}})}})),
      kReasonMalformedTemplate, "spec.template.spec.containers[1].name");
  json init_clash = WorkerWith(json::object());
  init_clash["spec"]["initContainers"] = json::array({{{"name", "worker"}, {"image", "fetch:1"}}});
  ExpectRefused(Check(init_clash), kReasonMalformedTemplate,
                "spec.template.spec.initContainers[0].name");
  json distinct = WorkerWith(json::object());
  distinct["spec"]["initContainers"] = json::array({{{"name", "fetch-1"}, {"image", "fetch:1"}}});
  EXPECT_EQ(Check(distinct), std::nullopt);
}

TEST(TemplatePolicyAdversarial, EnvVarNamesTheApiServerWouldRefuseAreRefused) {
  const auto env = [](const std::string& name) {
    return WorkerWith({{"env", json::array({{{"name", "OK"}, {"value", "1"}},
                                            {{"name", name}, {"value", "64"}}})}});
  };
  for (const char* bad : {"BATCH=64", "1BATCH", "MY VAR", "x$y", ".", "..", "..x", "é"}) {
    const std::optional<TemplateViolation> violation = Check(env(bad));
    ExpectRefused(violation, kReasonMalformedTemplate,
                  "spec.template.spec.containers[0].env[1].name");
    ASSERT_TRUE(violation.has_value());
    EXPECT_THAT(violation->message, HasSubstr("must be an environment variable name")) << bad;
  }
  const std::optional<TemplateViolation> empty = Check(env(""));
  ExpectRefused(empty, kReasonMalformedTemplate, "spec.template.spec.containers[0].env[1].name");
  ASSERT_TRUE(empty.has_value());
  EXPECT_THAT(empty->message, HasSubstr("required"));
  for (const char* good : {"BATCH_SIZE", "my.env-name", "MyEnvName1", "_x", "-x", ".x"}) {
    EXPECT_EQ(Check(env(good)), std::nullopt) << good;
  }
  // The API server keeps the last of two equal names: no refusal.
  EXPECT_EQ(Check(env("OK")), std::nullopt);
  // In an init container too, and an envFrom prefix starts every name it brings.
  ExpectRefused(Check(PodSpec({{"initContainers",
                                json::array({{{"name", "fetch"},
                                              {"image", "fetch:1"},
                                              {"env", json::array({{{"name", "A=B"}}})}}})}})),
                kReasonMalformedTemplate, "spec.template.spec.initContainers[0].env[0].name");
  const auto prefix = [](const std::string& p) {
    return WorkerWith(
        {{"envFrom", json::array({{{"prefix", p}, {"configMapRef", {{"name", "cfg"}}}}})}});
  };
  ExpectRefused(Check(prefix("1_")), kReasonMalformedTemplate,
                "spec.template.spec.containers[0].envFrom[0].prefix");
  EXPECT_EQ(Check(prefix("CFG_")), std::nullopt);
  EXPECT_EQ(Check(prefix("")), std::nullopt);
}

TEST(TemplatePolicyAdversarial, KeysOfConfigMapsAndSecretsTheApiServerWouldRefuseAreRefused) {
  const auto key_ref = [](const char* source, const std::string& key) {
    return WorkerWith(
        {{"env", json::array({{{"name", "BATCH"},
                               {"valueFrom", {{source, {{"name", "cfg"}, {"key", key}}}}}}})}});
  };
  for (const char* source : {"configMapKeyRef", "secretKeyRef"}) {
    for (const std::string& bad :
         std::vector<std::string>{"batch/size", "", ".", "..", "a b", std::string(254, 'k')}) {
      const std::optional<TemplateViolation> violation = Check(key_ref(source, bad));
      ExpectRefused(
          violation, kReasonMalformedTemplate,
          absl::StrCat("spec.template.spec.containers[0].env[0].valueFrom.", source, ".key"));
      ASSERT_TRUE(violation.has_value());
      EXPECT_THAT(violation->message, HasSubstr("must be a ConfigMap or Secret key")) << bad;
    }
    for (const std::string& good :
         std::vector<std::string>{"batch", "batch.size", "BATCH_SIZE-2", std::string(253, 'k')}) {
      EXPECT_EQ(Check(key_ref(source, good)), std::nullopt) << source << " " << good;
    }
  }
}

TEST(TemplatePolicyAdversarial, PortsTheApiServerWouldRefuseAreRefused) {
  const auto ports = [](json list) { return WorkerWith({{"ports", std::move(list)}}); };
  const auto named = [&](const std::string& name) {
    return ports(json::array({{{"name", name}, {"containerPort", 8080}}}));
  };
  for (const char* bad :
       {"Metrics", "abcdefghijklmnop", "8080", "-http", "http-", "ht--tp", "ht_tp", "ht.tp"}) {
    const std::optional<TemplateViolation> violation = Check(named(bad));
    ExpectRefused(violation, kReasonMalformedTemplate,
                  "spec.template.spec.containers[0].ports[0].name");
    ASSERT_TRUE(violation.has_value());
    EXPECT_THAT(violation->message, HasSubstr("must be a port name (IANA service name)")) << bad;
  }
  for (const char* good : {"metrics", "grpc-2", "abcdefghijklmno", "h2c", "a-b-c"}) {
    EXPECT_EQ(Check(named(good)), std::nullopt) << good;
  }
  for (const json& number : {json(0), json(65536), json(-1), json("8080"), json(80.5)}) {
    ExpectRefused(Check(ports(json::array({{{"containerPort", number}}}))),
                  kReasonMalformedTemplate,
                  "spec.template.spec.containers[0].ports[0].containerPort");
  }
  ExpectRefused(Check(ports(json::array({{{"name", "http"}}}))), kReasonMalformedTemplate,
                "spec.template.spec.containers[0].ports[0].containerPort");
  ExpectRefused(Check(ports(json::array({{{"containerPort", 53}, {"protocol", "HTTP"}}}))),
                kReasonMalformedTemplate, "spec.template.spec.containers[0].ports[0].protocol");
  EXPECT_EQ(Check(ports(json::array({{{"containerPort", 53}, {"protocol", "UDP"}},
                                     {{"containerPort", 53}, {"protocol", "TCP"}}}))),
            std::nullopt);

  // Two ports of one name in a container: "Duplicate value".
  const std::optional<TemplateViolation> duplicate =
      Check(ports(json::array({{{"name", "http"}, {"containerPort", 80}},
                               {{"name", "metrics"}, {"containerPort", 9090}},
                               {{"name", "http"}, {"containerPort", 8080}}})));
  ExpectRefused(duplicate, kReasonMalformedTemplate,
                "spec.template.spec.containers[0].ports[2].name");
  ASSERT_TRUE(duplicate.has_value());
  EXPECT_THAT(duplicate->message, HasSubstr("duplicate port name \"http\""));
  EXPECT_THAT(duplicate->message, HasSubstr("spec.template.spec.containers[0].ports[0]"));
  // In two containers the API server only warns.
  EXPECT_EQ(Check(PodSpec(
                {{"containers",
                  json::array(
                      {{{"name", "worker"},
                        {"image", "worker:1"},
                        {"ports", json::array({{{"name", "http"}, {"containerPort", 80}}})}},
                       {{"name", "sidecar"},
                        {"image", "sidecar:1"},
                        {"ports", json::array({{{"name", "http"}, {"containerPort", 81}}})}}})}})),
            std::nullopt);
}

TEST(TemplatePolicyAdversarial, UserAndGroupIdsBeyond31BitsAreRefused) {
  const json pod_too_big = PodSpec({{"securityContext", {{"runAsUser", 2147483648LL}}}});
  const std::optional<TemplateViolation> violation = Check(pod_too_big);
  ExpectRefused(violation, kReasonMalformedTemplate,
                "spec.template.spec.securityContext.runAsUser");
  ASSERT_TRUE(violation.has_value());
  EXPECT_THAT(violation->message, HasSubstr("must be at most 2147483647"));
  ExpectRefused(
      Check(PodSpec(
          {{"securityContext", {{"supplementalGroups", json::array({1000, 4294967294LL})}}}})),
      kReasonMalformedTemplate, "spec.template.spec.securityContext.supplementalGroups[1]");
  ExpectRefused(Check(WorkerWith({{"securityContext", {{"runAsGroup", 3000000000LL}}}})),
                kReasonMalformedTemplate,
                "spec.template.spec.containers[0].securityContext.runAsGroup");
  EXPECT_EQ(
      Check(PodSpec({{"securityContext", {{"runAsUser", 2147483647}, {"fsGroup", 2147483647}}}})),
      std::nullopt);
}

TEST(TemplatePolicy, TheOperatorWidensByFieldPath) {
  TemplatePolicyOptions options;
  options.allowed_fields = {"spec.template.spec.hostIPC",
                            "spec.template.spec.containers[*].securityContext.capabilities.add"};
  EXPECT_FALSE(Check(PodSpec({{"hostIPC", true}}), options).has_value());
  EXPECT_FALSE(
      Check(WorkerWith({{"securityContext", {{"capabilities", {{"add", {"IPC_LOCK"}}}}}}}), options)
          .has_value());
  // Only what was named: hostPID stays refused.
  ExpectRefused(Check(PodSpec({{"hostPID", true}}), options), kReasonHostAccessInTemplate,
                "spec.template.spec.hostPID");
  // An index names that container only.
  TemplatePolicyOptions first_only;
  first_only.allowed_fields = {"spec.template.spec.containers[0].securityContext"};
  const json two = PodSpec(
      {{"containers",
        json::array(
            {{{"name", "worker"}, {"image", "w:1"}, {"securityContext", {{"privileged", true}}}},
             {{"name", "side"}, {"image", "s:1"}, {"securityContext", {{"privileged", true}}}}})}});
  ExpectRefused(Check(two, first_only), kReasonPrivilegedTemplate,
                "spec.template.spec.containers[1].securityContext.privileged");
}

TEST(TemplatePolicy, TheOperatorAllowsServiceAccountsByNameOrNamespace) {
  const json tmpl = PodSpec({{"serviceAccountName", "trainer"}});
  TemplatePolicyOptions anywhere;
  anywhere.allowed_service_accounts = {"trainer"};
  EXPECT_FALSE(Check(tmpl, anywhere).has_value());
  TemplatePolicyOptions here;
  here.allowed_service_accounts = {"team/trainer"};
  EXPECT_FALSE(Check(tmpl, here).has_value());
  TemplatePolicyOptions elsewhere;
  elsewhere.allowed_service_accounts = {"other/trainer"};
  ExpectRefused(Check(tmpl, elsewhere), kReasonServiceAccountNotAllowed,
                "spec.template.spec.serviceAccountName");
}

TEST(TemplatePolicy, TheOperatorAllowsHostPathsUnderAPrefixOnly) {
  TemplatePolicyOptions options;
  options.allowed_host_path_prefixes = {"/data"};
  const auto host = [](const std::string& path) {
    return PodSpec(
        {{"volumes",
          json::array({{{"name", "d"}, {"hostPath", {{"path", path}, {"type", "Directory"}}}}})}});
  };
  EXPECT_FALSE(Check(host("/data"), options).has_value());
  EXPECT_FALSE(Check(host("/data/imagenet"), options).has_value());
  for (const char* outside : {"/database", "/data/../etc", "/", "data/x", "/data//x"}) {
    ExpectRefused(Check(host(outside), options), kReasonHostAccessInTemplate,
                  "spec.template.spec.volumes[0].hostPath");
  }
}

TEST(TemplatePolicy, MissingAndUnparseableImagesAreRefused) {
  ExpectRefused(Check(nullptr, {}, ""), kReasonInvalidImage,
                "spec.template.spec.containers[0].image");
  ExpectRefused(Check(WorkerWith({{"image", ""}}), {}, ""), kReasonInvalidImage,
                "spec.template.spec.containers[0].image");
  const std::optional<TemplateViolation> typo = Check(WorkerWith({{"image", "Team/Worker:1"}}));
  ExpectRefused(typo, kReasonInvalidImage, "spec.template.spec.containers[0].image");
  EXPECT_THAT(typo->message, HasSubstr("\"Worker\""));
  ExpectRefused(Check(WorkerWith({{"image", "worker:"}})), kReasonInvalidImage,
                "spec.template.spec.containers[0].image");
  // Only the worker container gets the default image.
  const json sidecar =
      PodSpec({{"containers", json::array({{{"name", "side"}}, {{"name", "worker"}}})}});
  ExpectRefused(Check(sidecar), kReasonInvalidImage, "spec.template.spec.containers[0].image");
  ExpectRefused(Check(PodSpec({{"initContainers", json::array({{{"name", "init"}}})}})),
                kReasonInvalidImage, "spec.template.spec.initContainers[0].image");
}

TEST(TemplatePolicy, MalformedShapesAreRefusedNamingTheField) {
  ExpectRefused(Check(PodSpec({{"containers", json::object()}})), kReasonMalformedTemplate,
                "spec.template.spec.containers");
  ExpectRefused(Check(WorkerWith({{"env", json::array({{{"value", "x"}}})}})),
                kReasonMalformedTemplate, "spec.template.spec.containers[0].env[0].name");
  ExpectRefused(Check(WorkerWith({{"resources", {{"limits", {{"memory", "lots"}}}}}})),
                kReasonMalformedTemplate,
                "spec.template.spec.containers[0].resources.limits[memory]");
  ExpectRefused(Check(WorkerWith(
                    {{"volumeMounts", json::array({{{"name", "nowhere"}, {"mountPath", "/x"}}})}})),
                kReasonMalformedTemplate, "spec.template.spec.containers[0].volumeMounts[0].name");
  ExpectRefused(Check(PodSpec({{"volumes", json::array({{{"name", "v"},
                                                         {"emptyDir", json::object()},
                                                         {"secret", {{"secretName", "s"}}}}})}})),
                kReasonMalformedTemplate, "spec.template.spec.volumes[0]");
  json escape =
      WorkerWith({{"volumeMounts",
                   json::array({{{"name", "v"}, {"mountPath", "/v"}, {"subPath", "../../etc"}}})}});
  escape["spec"]["volumes"] = json::array({{{"name", "v"}, {"emptyDir", json::object()}}});
  ExpectRefused(Check(escape), kReasonMalformedTemplate,
                "spec.template.spec.containers[0].volumeMounts[0].subPath");
}

TEST(TemplatePolicyOptions, BadEntriesAreRefusedNamingTheFlag) {
  EXPECT_OK(ValidateTemplatePolicyOptions({}));
  TemplatePolicyOptions good;
  good.allowed_fields = {"spec.template.spec.hostIPC",
                         "spec.template.spec.containers[*].resources.limits[rdma/hca]"};
  good.allowed_service_accounts = {"trainer", "team/trainer"};
  good.allowed_host_path_prefixes = {"/data", "/"};
  EXPECT_OK(ValidateTemplatePolicyOptions(good));
  for (const char* field : {"spec.hostIPC", "spec.template..spec", "spec.template.spec.containers[",
                            "", "spec.template.spec.containers[*].resources.limits[nvidia.com/gpu]",
                            ".spec.template", "spec.template.spec.containers[]"}) {
    TemplatePolicyOptions bad;
    bad.allowed_fields = {field};
    EXPECT_THAT(ValidateTemplatePolicyOptions(bad),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--allow-template-field")))
        << field;
  }
  for (const char* account : {"Admin", "a/b/c", "/x", ""}) {
    TemplatePolicyOptions bad;
    bad.allowed_service_accounts = {account};
    EXPECT_THAT(ValidateTemplatePolicyOptions(bad),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--allow-service-account")))
        << account;
  }
  for (const char* prefix : {"data", "/data/../etc", "/data/", ""}) {
    TemplatePolicyOptions bad;
    bad.allowed_host_path_prefixes = {prefix};
    EXPECT_THAT(ValidateTemplatePolicyOptions(bad),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--allow-host-path")))
        << prefix;
  }
}

}  // namespace
}  // namespace wavepool::controller
