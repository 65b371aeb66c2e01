// Validation before placement (reconciler.h step 2, against FakeCluster): a job whose template
// the policy refuses (template_policy.h), whose image is missing or whose model is unknown fails
// at once with an Invalid condition and one Warning Event naming the field, and never holds a
// GPU; a template within the policy, or widened by the operator, runs.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/controller/fake_cluster.h"
#include "tests/controller/pod_validation.h"
#include "tests/support/status_matchers.h"
#include "wavepool/controller/reconciler.h"
#include "wavepool/controller/template_policy.h"

namespace wavepool::controller {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr std::string_view kNs = FakeScene::kNamespace;

// A template with one worker container `worker` (image set unless given) and pod spec `spec`.
json Template(json worker, json spec = json::object()) {
  worker["name"] = "worker";
  if (!worker.contains("image")) worker["image"] = "registry.example/team/worker:1";
  spec["containers"] = json::array({worker});
  return {{"spec", spec}};
}

// Template() with `metadata`.
json WithMetadata(json metadata) {
  json tmpl = Template(json::object());
  tmpl["metadata"] = std::move(metadata);
  return tmpl;
}

std::function<void(api::TrainingJob&)> SetTemplate(json tmpl) {
  return [tmpl](api::TrainingJob& job) { job.spec.pod_template = tmpl; };
}

struct RefusedJob {
  std::string name;
  std::function<void(api::TrainingJob&)> edit;
  bool without_default_image = false;
  std::string reason;
  std::string field;
};

void PrintTo(const RefusedJob& refused, std::ostream* os) { *os << refused.name; }

std::vector<RefusedJob> RefusedJobs() {
  return {
      {"Privileged", SetTemplate(Template({{"securityContext", {{"privileged", true}}}})), false,
       std::string(kReasonPrivilegedTemplate),
       "spec.template.spec.containers[0].securityContext.privileged"},
      {"HostPathOfTheRoot",
       SetTemplate(Template(
           {{"volumeMounts", json::array({{{"name", "host"}, {"mountPath", "/host"}}})}},
           {{"volumes", json::array({{{"name", "host"}, {"hostPath", {{"path", "/"}}}}})}})),
       false, std::string(kReasonHostAccessInTemplate), "spec.template.spec.volumes[0].hostPath"},
      {"HostPid", SetTemplate(Template(json::object(), {{"hostPID", true}})), false,
       std::string(kReasonHostAccessInTemplate), "spec.template.spec.hostPID"},
      {"HostNetwork", SetTemplate(Template(json::object(), {{"hostNetwork", true}})), false,
       std::string(kReasonHostAccessInTemplate), "spec.template.spec.hostNetwork"},
      {"ServiceAccount",
       SetTemplate(Template(json::object(), {{"serviceAccountName", "cluster-admin"}})), false,
       std::string(kReasonServiceAccountNotAllowed), "spec.template.spec.serviceAccountName"},
      {"GpuLimit", SetTemplate(Template({{"resources", {{"limits", {{"nvidia.com/gpu", 2}}}}}})),
       false, std::string(kReasonGpuResourceInTemplate),
       "spec.template.spec.containers[0].resources.limits[nvidia.com/gpu]"},
      {"MissingImage", SetTemplate(Template({{"image", nullptr}})), true,
       std::string(kReasonInvalidImage), "spec.template.spec.containers[0].image"},
      {"UnparseableImage", SetTemplate(Template({{"image", "Registry/Team/Worker:latest"}})), false,
       std::string(kReasonInvalidImage), "spec.template.spec.containers[0].image"},
      {"UnknownModel", [](api::TrainingJob& job) { job.spec.model.name = "resnet9000"; }, false,
       "UnknownModel", "spec.model.name"},
      // Its pods would read as preempted by another job the moment they exist.
      {"ControllerAnnotation",
       SetTemplate(WithMetadata({{"annotations", {{"wavepool.dev/preempted-by", "team/fg"}}}})),
       false, std::string(kReasonForbiddenTemplateField),
       "spec.template.metadata.annotations[wavepool.dev/preempted-by]"},
      // The API server would refuse every pod, and the gang would wait for them forever.
      {"InvalidLabelKey", SetTemplate(WithMetadata({{"labels", {{"bad key!", "x"}}}})), false,
       std::string(kReasonMalformedTemplate), "spec.template.metadata.labels[bad key!]"},
      // Mounted at the agent's directory, the API server would refuse every pod (two mounts at
      // one path); under it, the node would get the tenant's directory inside the agent's.
      {"CheckpointAtTheAgentsDirectory",
       [](api::TrainingJob& job) { job.spec.checkpoint.path = "/var/run/wavepool"; }, false,
       "InvalidSpec", "spec.checkpoint.path"},
      {"CheckpointInSharedMemory",
       [](api::TrainingJob& job) { job.spec.checkpoint.path = "/dev/shm/ckpt"; }, false,
       "InvalidSpec", "spec.checkpoint.path"},
  };
}

class ReconcilerValidationAdversarial : public ::testing::TestWithParam<RefusedJob> {};

TEST_P(ReconcilerValidationAdversarial, FailsInvalidWithOneWarningNamingTheFieldAndHoldsNoGpu) {
  const RefusedJob& refused = GetParam();
  FakeScene scene;
  scene.AddNode("node-a", 2);
  scene.AddForeground("evil", 2);
  ASSERT_OK(scene.cluster.EditJob(kNs, "evil", refused.edit));
  ReconcilerOptions options = scene.Options();
  if (refused.without_default_image) options.objects.default_image.clear();
  Reconciler reconciler(scene.cluster, scene.cluster, options);

  ASSERT_OK_AND_ASSIGN(ReconcileResult result, reconciler.Reconcile(kNs, "evil"));
  EXPECT_FALSE(result.requeue_after.has_value());
  EXPECT_FALSE(result.waiting_for_gpus);
  const api::TrainingJob job = scene.Job("evil");
  EXPECT_EQ(job.status.phase, api::JobPhase::kFailed);
  const api::Condition& invalid = ConditionOf(job, api::kConditionInvalid);
  EXPECT_EQ(invalid.status, api::ConditionStatus::kTrue);
  EXPECT_EQ(invalid.reason, refused.reason);
  EXPECT_THAT(invalid.message, HasSubstr(refused.field));
  const std::vector<FakeCluster::RecordedEvent> events = scene.cluster.Events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].warning);
  EXPECT_EQ(events[0].reason, refused.reason);
  EXPECT_THAT(events[0].message, HasSubstr(refused.field));

  // Never planned nor placed: no plan, no placement, no pod, no GPU counted as taken.
  EXPECT_EQ(ConditionOf(job, api::kConditionPlanned).type, "");
  EXPECT_EQ(ConditionOf(job, api::kConditionPlaced).type, "");
  EXPECT_TRUE(job.status.placement.empty());
  EXPECT_FALSE(scene.cluster.StoredConfigMap(kNs, "evil-plan").has_value());
  EXPECT_TRUE(scene.cluster.AllPods().empty());
  EXPECT_TRUE(scene.cluster.Assignments().empty());

  // Looked at again without a change: nothing written, no second Event.
  const std::int64_t writes = scene.cluster.writes();
  ASSERT_OK(reconciler.Reconcile(kNs, "evil").status());
  EXPECT_EQ(scene.cluster.writes(), writes);
  EXPECT_EQ(scene.cluster.Events().size(), 1u);

  // Nothing reserved either: a job that needs both GPUs of the node gets them.
  scene.AddForeground("honest", 2);
  ASSERT_OK(scene.cluster.EditJob(kNs, "honest", SetTemplate(Template(json::object()))));
  ASSERT_OK(reconciler.Reconcile(kNs, "honest").status());
  EXPECT_EQ(scene.Job("honest").status.placement.size(), 2u);
  EXPECT_EQ(scene.cluster.PodsOfJob(kNs, "honest").size(), 2u);
}

INSTANTIATE_TEST_SUITE_P(RefusedJobs, ReconcilerValidationAdversarial,
                         ::testing::ValuesIn(RefusedJobs()),
                         [](const ::testing::TestParamInfo<RefusedJob>& param_info) {
                           return param_info.param.name;
                         });

const json* Container(const json& pod, std::string_view name) {
  for (const json& c : pod["spec"]["containers"]) {
    if (c.value("name", "") == name) return &c;
  }
  return nullptr;
}

TEST(ReconcilerValidation, ATemplateUsingOnlyAllowedFieldsRuns) {
  FakeScene scene;
  scene.AddNode("node-a", 2);
  scene.AddForeground("train", 2);
  const json tmpl = Template(
      {{"env", json::array({{{"name", "DATA"}, {"value", "/data"}},
                            {{"name", "TOKEN"},
                             {"valueFrom", {{"secretKeyRef", {{"name", "hub"}, {"key", "t"}}}}}}})},
       {"resources", {{"limits", {{"cpu", "8"}, {"memory", "64Gi"}}}}},
       {"volumeMounts", json::array({{{"name", "data"}, {"mountPath", "/data"}}})},
       {"securityContext",
        {{"runAsNonRoot", true},
         {"runAsUser", 1000},
         {"allowPrivilegeEscalation", false},
         {"capabilities", {{"drop", json::array({"ALL"})}}},
         {"seccompProfile", {{"type", "RuntimeDefault"}}}}}},
      {{"volumes",
        json::array({{{"name", "data"}, {"persistentVolumeClaim", {{"claimName", "imagenet"}}}}})},
       {"nodeSelector", {{"pool", "gpu"}}},
       {"tolerations", json::array({{{"key", "gpu"}, {"operator", "Exists"}}})}});
  ASSERT_OK(scene.cluster.EditJob(kNs, "train", SetTemplate(tmpl)));
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());

  const api::TrainingJob job = scene.Job("train");
  EXPECT_EQ(job.status.phase, api::JobPhase::kPlaced);
  EXPECT_EQ(ConditionOf(job, api::kConditionInvalid).type, "");
  ASSERT_EQ(scene.cluster.PodsOfJob(kNs, "train").size(), 2u);
  const json pod = *scene.cluster.GetPod(kNs, "train-g0-0");
  const json* worker = Container(pod, "worker");
  ASSERT_NE(worker, nullptr);
  EXPECT_EQ((*worker)["image"], "registry.example/team/worker:1");
  EXPECT_EQ((*worker)["securityContext"]["runAsUser"], 1000);
  EXPECT_EQ((*worker)["resources"]["limits"]["memory"], "64Gi");
  EXPECT_EQ(pod["spec"]["nodeSelector"]["pool"], "gpu");
  EXPECT_TRUE(scene.cluster.EventsWithReason("Placed").size() == 1u);
}

TEST(ReconcilerValidation, AFieldTheOperatorAllowedRunsAndAWiderControllerRevivesTheJob) {
  FakeScene scene;
  scene.AddNode("node-a", 2);
  scene.AddForeground("mps", 2);
  // MPS clients in containers may need the host's IPC namespace (docs/controller.md).
  ASSERT_OK(scene.cluster.EditJob(kNs, "mps",
                                  SetTemplate(Template(json::object(), {{"hostIPC", true}}))));
  {
    Reconciler strict(scene.cluster, scene.cluster, scene.Options());
    ASSERT_OK(strict.Reconcile(kNs, "mps").status());
    EXPECT_EQ(scene.Job("mps").status.phase, api::JobPhase::kFailed);
    EXPECT_EQ(ConditionOf(scene.Job("mps"), api::kConditionInvalid).reason,
              kReasonHostAccessInTemplate);
    EXPECT_TRUE(scene.cluster.AllPods().empty());
  }
  // The operator restarts the controller with --allow-template-field spec.template.spec.hostIPC.
  ReconcilerOptions options = scene.Options();
  options.template_policy.allowed_fields = {"spec.template.spec.hostIPC"};
  ASSERT_OK(ValidateTemplatePolicyOptions(options.template_policy));
  Reconciler widened(scene.cluster, scene.cluster, options);
  ASSERT_OK(widened.Reconcile(kNs, "mps").status());
  const api::TrainingJob job = scene.Job("mps");
  EXPECT_EQ(job.status.phase, api::JobPhase::kPlaced);
  EXPECT_EQ(ConditionOf(job, api::kConditionInvalid).status, api::ConditionStatus::kFalse);
  ASSERT_EQ(scene.cluster.PodsOfJob(kNs, "mps").size(), 2u);
  EXPECT_EQ((*scene.cluster.GetPod(kNs, "mps-g0-0"))["spec"]["hostIPC"], true);
}

TEST(ReconcilerValidationAdversarial, ARunningJobEditedToPrivilegedLosesItsPodsAndGpus) {
  FakeScene scene;
  scene.AddNode("node-a", 2);
  scene.AddForeground("train", 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  scene.SetGangPhase("train", "Running");
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  ASSERT_EQ(scene.Job("train").status.phase, api::JobPhase::kRunning);

  ASSERT_OK(scene.cluster.EditJob(
      kNs, "train", SetTemplate(Template({{"securityContext", {{"privileged", true}}}}))));
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  api::TrainingJob job = scene.Job("train");
  EXPECT_EQ(job.status.phase, api::JobPhase::kFailed);
  EXPECT_EQ(ConditionOf(job, api::kConditionInvalid).reason, kReasonPrivilegedTemplate);
  EXPECT_EQ(ConditionOf(job, api::kConditionPlaced).status, api::ConditionStatus::kFalse);
  EXPECT_EQ(ConditionOf(job, api::kConditionRunning).status, api::ConditionStatus::kFalse);
  EXPECT_TRUE(job.status.placement.empty());
  EXPECT_EQ(job.status.gang_generation, 1);
  for (const json& pod : scene.cluster.AllPods()) {
    EXPECT_TRUE(pod["metadata"].contains("deletionTimestamp")) << pod.dump();
  }
  scene.cluster.FinishTerminatingPods();
  EXPECT_TRUE(scene.cluster.Assignments().empty());
  EXPECT_EQ(scene.cluster.EventsWithReason(std::string(kReasonPrivilegedTemplate)).size(), 1u);

  // Fixed by a new generation: a new gang, under names the old one never used.
  ASSERT_OK(scene.cluster.EditJob(kNs, "train", SetTemplate(Template(json::object()))));
  ASSERT_OK(reconciler.Reconcile(kNs, "train").status());
  job = scene.Job("train");
  EXPECT_EQ(job.status.phase, api::JobPhase::kPlaced);
  EXPECT_EQ(ConditionOf(job, api::kConditionInvalid).status, api::ConditionStatus::kFalse);
  EXPECT_THAT(PodNames(scene.CurrentPods("train")),
              ::testing::ElementsAre("train-g1-0", "train-g1-1"));
}

// A template the policy lets through but whose pods kube-apiserver refuses: an env var read
// from a ConfigMap key with '/' in it.
// A worker whose env var NODE reads the pod field `path` (the downward API).
json TemplateWithFieldPath(const std::string& path) {
  return Template({{"env", json::array({{{"name", "NODE"},
                                         {"valueFrom", {{"fieldRef", {{"fieldPath", path}}}}}}})}});
}

TEST(ReconcilerValidationAdversarial,
     APodTheApiServerRefusesFailsTheJobForItsGenerationAndHoldsNoGpu) {
  FakeScene scene;
  scene.AddNode("node-a", 2);
  scene.cluster.ValidatePods(EnvFieldPathError);
  scene.AddForeground("typo", 2);
  ASSERT_OK(
      scene.cluster.EditJob(kNs, "typo", SetTemplate(TemplateWithFieldPath("spec.nodeNmae"))));
  const std::int64_t generation = scene.Job("typo").metadata.generation;
  {
    Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
    ASSERT_OK_AND_ASSIGN(ReconcileResult result, reconciler.Reconcile(kNs, "typo"));
    EXPECT_FALSE(result.requeue_after.has_value());
  }
  api::TrainingJob job = scene.Job("typo");
  EXPECT_EQ(job.status.phase, api::JobPhase::kFailed);
  const api::Condition& invalid = ConditionOf(job, api::kConditionInvalid);
  EXPECT_EQ(invalid.status, api::ConditionStatus::kTrue);
  EXPECT_EQ(invalid.reason, "PodRejected");
  EXPECT_EQ(invalid.observed_generation, generation);
  // The pod and the server's words: which field, which value.
  EXPECT_THAT(invalid.message, HasSubstr("spec.template"));
  EXPECT_THAT(invalid.message, HasSubstr("team/typo-g0-0"));
  EXPECT_THAT(invalid.message, HasSubstr("spec.containers[0].env["));  // after the controller's
  EXPECT_THAT(invalid.message, HasSubstr("spec.nodeNmae"));
  const std::vector<FakeCluster::RecordedEvent> warnings =
      scene.cluster.EventsWithReason("PodRejected");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(warnings[0].warning);
  EXPECT_EQ(warnings[0].message, invalid.message);
  EXPECT_EQ(ConditionOf(job, api::kConditionPlaced).status, api::ConditionStatus::kFalse);
  EXPECT_TRUE(job.status.placement.empty());
  EXPECT_TRUE(scene.cluster.AllPods().empty());
  EXPECT_EQ(scene.cluster.refused_pod_creations(), 1);

  // Looked at again, later and by a restarted controller: still failed, nothing written, no pod
  // tried, no second Event.
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  scene.clock.Advance(std::chrono::minutes(10));
  const std::int64_t writes = scene.cluster.writes();
  ASSERT_OK_AND_ASSIGN(ReconcileResult again, reconciler.Reconcile(kNs, "typo"));
  EXPECT_FALSE(again.requeue_after.has_value());
  EXPECT_EQ(scene.cluster.writes(), writes);
  EXPECT_EQ(scene.cluster.refused_pod_creations(), 1);
  EXPECT_EQ(scene.cluster.EventsWithReason("PodRejected").size(), 1u);
  EXPECT_EQ(scene.Job("typo").status.phase, api::JobPhase::kFailed);

  // Its GPUs are free: a job that needs both of the node's gets them.
  scene.AddForeground("honest", 2);
  ASSERT_OK(
      scene.cluster.EditJob(kNs, "honest", SetTemplate(TemplateWithFieldPath("spec.nodeName"))));
  ASSERT_OK(reconciler.Reconcile(kNs, "honest").status());
  EXPECT_EQ(scene.Job("honest").status.phase, api::JobPhase::kPlaced);
  EXPECT_EQ(scene.cluster.PodsOfJob(kNs, "honest").size(), 2u);
  scene.cluster.RemoveJob(kNs, "honest");
  for (const char* pod : {"honest-g0-0", "honest-g0-1"}) scene.cluster.RemovePod(kNs, pod);

  // Fixed by a new generation: placed again, a new gang under names the refused one never used.
  ASSERT_OK(
      scene.cluster.EditJob(kNs, "typo", SetTemplate(TemplateWithFieldPath("spec.nodeName"))));
  ASSERT_OK(reconciler.Reconcile(kNs, "typo").status());
  job = scene.Job("typo");
  EXPECT_EQ(job.status.phase, api::JobPhase::kPlaced);
  EXPECT_EQ(ConditionOf(job, api::kConditionInvalid).status, api::ConditionStatus::kFalse);
  EXPECT_EQ(ConditionOf(job, api::kConditionPlaced).status, api::ConditionStatus::kTrue);
  EXPECT_THAT(PodNames(scene.CurrentPods("typo")),
              ::testing::ElementsAre("typo-g1-0", "typo-g1-1"));
}

// A refusal that reaches only a later rank (the server's rule may depend on the pod): the ranks
// created before it are deleted with the gang's Service, so no half gang is left holding GPUs.
TEST(ReconcilerValidationAdversarial, ARefusedRankTakesTheRanksCreatedBeforeItAndTheService) {
  FakeScene scene;
  scene.AddNode("node-a", 2);
  scene.cluster.ValidatePods([](const json& pod) -> std::optional<PodFieldError> {
    if (pod["metadata"].value("name", "") != "half-g0-1") return std::nullopt;
    return PodFieldError{"spec.hostname", "Invalid value: \"half-g0-1\": must be no more than 0"};
  });
  scene.AddForeground("half", 2);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "half").status());
  EXPECT_EQ(scene.Job("half").status.phase, api::JobPhase::kFailed);
  EXPECT_EQ(ConditionOf(scene.Job("half"), api::kConditionInvalid).reason, "PodRejected");
  EXPECT_TRUE(scene.cluster.PodTerminating(kNs, "half-g0-0"));
  EXPECT_TRUE(scene.cluster.AllServices().empty());
  scene.cluster.FinishTerminatingPods();
  EXPECT_TRUE(scene.cluster.Assignments().empty());
}

TEST(ReconcilerValidationAdversarial, AnEnormousRefusalIsCutToFitTheCondition) {
  FakeScene scene;
  scene.AddNode("node-a", 1);
  // A server that lists a long cause (every field of a large template, say).
  scene.cluster.ValidatePods([](const json&) {
    return std::optional<PodFieldError>(
        PodFieldError{"spec.containers[0].env", std::string(100'000, 'x')});
  });
  scene.AddForeground("long", 1);
  Reconciler reconciler(scene.cluster, scene.cluster, scene.Options());
  ASSERT_OK(reconciler.Reconcile(kNs, "long").status());
  const api::Condition& invalid = ConditionOf(scene.Job("long"), api::kConditionInvalid);
  EXPECT_EQ(invalid.reason, "PodRejected");
  EXPECT_THAT(invalid.message, HasSubstr("spec.containers[0].env"));
  EXPECT_LE(invalid.message.size(), 4096u);
}

}  // namespace
}  // namespace wavepool::controller
