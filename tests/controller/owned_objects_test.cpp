// The Plan ConfigMap and worker pods a TrainingJob owns (controller/owned_objects.h).
#include "wavepool/controller/owned_objects.h"

#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/controller/fake_cluster.h"
#include "tests/support/status_matchers.h"

namespace wavepool::controller {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;

api::TrainingJob MakeJob(api::Role role) {
  api::TrainingJob job;
  job.metadata.name = "resnet";
  job.metadata.namespace_ = "team-a";
  job.metadata.uid = "11111111-2222-3333-4444-555555555555";
  job.spec.role = role;
  job.spec.gpus = role == api::Role::kForeground ? 4 : 1;
  job.spec.checkpoint.path = "/ckpt/resnet";
  job.spec.pod_template = json::parse(R"({
    "metadata": {"labels": {"kueue.x-k8s.io/queue-name": "q", "team": "a",
                            "wavepool.dev/rank": "99"},
                 "annotations": {"note": "kept"}},
    "spec": {
      "terminationGracePeriodSeconds": 30,
      "containers": [
        {"name": "sidecar", "image": "busybox"},
        {"name": "worker", "image": "registry/wavepool-worker:1.0",
         "resources": {"limits": {"cpu": "4", "memory": "16Gi"}},
         "env": [{"name": "USER_VAR", "value": "u"},
                 {"name": "WAVEPOOL_RANK", "value": "7"},
                 {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
         "volumeMounts": [{"name": "data", "mountPath": "/data"},
                          {"name": "mine", "mountPath": "/etc/wavepool"}]}],
      "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "imagenet"}},
                  {"name": "wavepool-plan", "emptyDir": {}}]
    }})");
  return job;
}

api::Plan MakePlan(std::int64_t gpus) {
  api::Plan plan;
  plan.job = "team-a/resnet";
  plan.model = "resnet50";
  plan.device = "h100";
  plan.gpus = gpus;
  plan.global_batch_size = 64;
  api::PlanStage stage;
  stage.layers = {"conv1", "fc"};
  stage.gpus = gpus;
  for (std::int64_t r = 0; r < gpus; ++r) stage.ranks.push_back(r);
  stage.per_gpu_batch = 64 / gpus;
  plan.stages.push_back(stage);
  return plan;
}

PodAssignment MakeAssignment(std::int64_t rank) {
  return PodAssignment{rank, "node-a", {"GPU-aaaa", "GPU-bbbb"}, {2, 3}};
}

OwnedObjectOptions MakeOptions() {
  OwnedObjectOptions options;
  options.background_priority_class = "wavepool-background";
  return options;
}

json Build(const api::TrainingJob& job, std::int64_t rank = 1, std::int64_t generation = 3) {
  absl::StatusOr<json> pod = BuildPod(job, MakePlan(job.spec.gpus.value_or(1)),
                                      MakeAssignment(rank), generation, MakeOptions());
  EXPECT_TRUE(pod.ok()) << pod.status();
  return pod.ok() ? *pod : json();
}

const json& Worker(const json& pod) { return pod["spec"]["containers"][1]; }

// The value of env var `name` in `container`, or "<absent>"; fails on a duplicate.
std::string Env(const json& container, const std::string& name) {
  std::string found = "<absent>";
  int count = 0;
  for (const json& e : container["env"]) {
    if (e["name"] == name) {
      ++count;
      found = e.value("value", "<valueFrom>");
    }
  }
  EXPECT_LE(count, 1) << name;
  return found;
}

const json* Named(const json& list, const std::string& name) {
  for (const json& item : list) {
    if (item["name"] == name) return &item;
  }
  return nullptr;
}

TEST(OwnedNames, AreDeterministicAndCarryTheGangGeneration) {
  EXPECT_EQ(PlanConfigMapName("resnet"), "resnet-plan");
  EXPECT_EQ(PodName("resnet", 0, 3), "resnet-g0-3");
  EXPECT_EQ(PodName("resnet", 12, 0), "resnet-g12-0");
  EXPECT_EQ(PodName("resnet", 1, 3), PodName("resnet", 1, 3));
  EXPECT_NE(PodName("resnet", 1, 3), PodName("resnet", 2, 3));  // A restart never clashes.
  EXPECT_EQ(JobLabelValue("resnet"), "resnet");
}

TEST(OwnedNames, LongJobNamesAreShortenedWithAHash) {
  const std::string long_a(250, 'a');
  const std::string long_b = std::string(249, 'a') + "b";
  const std::string pod = PodName(long_a, 7, 15);
  EXPECT_EQ(pod.size(), 63u);
  EXPECT_THAT(pod, ::testing::EndsWith("-g7-15"));
  EXPECT_NE(PodName(long_a, 7, 15), PodName(long_b, 7, 15));  // Same prefix, other hash.
  EXPECT_EQ(PodName(long_a, 7, 15), PodName(long_a, 7, 15));
  EXPECT_EQ(JobLabelValue(long_a).size(), 63u);
  const std::string config_map = PlanConfigMapName(long_a);
  EXPECT_EQ(config_map.size(), 253u);
  EXPECT_THAT(config_map, ::testing::EndsWith("-plan"));
  // 63 - 6 ("-g7-15") - 9 ("-" + 8 hex) = 48 characters of the name are kept.
  EXPECT_EQ(pod.substr(0, 48), std::string(48, 'a'));
}

TEST(OwnedNames, ShortenedNamesStayDnsValid) {
  // A pod name keeps 63 - 5 ("-g0-1") - 9 ("-" + 8 hex) = 49 characters of the job name, a
  // label value 63 - 9 = 54: each cut lands right after a separator, which is dropped so that
  // no "--" or ".-" appears and the kept part ends with a letter or digit.
  const std::string pod = PodName(std::string(48, 'x') + "-" + std::string(60, 'y'), 0, 1);
  const std::string label = JobLabelValue(std::string(53, 'x') + "." + std::string(60, 'y'));
  EXPECT_EQ(pod.substr(0, 49), std::string(48, 'x') + "-");  // 48 x, then the hash's "-".
  EXPECT_EQ(label.substr(0, 54), std::string(53, 'x') + "-");
  for (const std::string& value : {pod, label}) {
    EXPECT_LE(value.size(), 63u);
    EXPECT_EQ(value.find("--"), std::string::npos) << value;
    EXPECT_EQ(value.find(".-"), std::string::npos) << value;
    EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(value.front()))) << value;
    EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(value.back()))) << value;
    for (const char c : value) {
      EXPECT_TRUE(std::islower(static_cast<unsigned char>(c)) ||
                  std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.')
          << value;
    }
  }
}

TEST(PlanConfigMap, HoldsThePlanThatPlanFromJsonReadsBack) {
  const api::Plan plan = MakePlan(4);
  ASSERT_OK_AND_ASSIGN(const json config_map,
                       BuildPlanConfigMap(MakeJob(api::Role::kForeground), plan));
  EXPECT_EQ(config_map["apiVersion"], "v1");
  EXPECT_EQ(config_map["kind"], "ConfigMap");
  EXPECT_EQ(config_map["metadata"]["name"], "resnet-plan");
  EXPECT_EQ(config_map["metadata"]["namespace"], "team-a");
  EXPECT_EQ(config_map["metadata"]["labels"]["wavepool.dev/job"], "resnet");
  EXPECT_EQ(config_map["metadata"]["labels"]["app.kubernetes.io/name"], "wavepool");
  EXPECT_EQ(config_map["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "wavepool-controller");
  const std::string text = config_map["data"]["plan.json"];
  ASSERT_OK_AND_ASSIGN(const api::Plan decoded, api::Plan::FromJson(json::parse(text)));
  EXPECT_EQ(api::ToJson(decoded), api::ToJson(plan));
  EXPECT_EQ(config_map["metadata"]["annotations"]["wavepool.dev/plan-hash"],
            HashJson(api::ToJson(plan)));
}

TEST(PlanConfigMap, IsOwnedByTheJobAsController) {
  ASSERT_OK_AND_ASSIGN(const json config_map,
                       BuildPlanConfigMap(MakeJob(api::Role::kForeground), MakePlan(4)));
  const json& owners = config_map["metadata"]["ownerReferences"];
  ASSERT_EQ(owners.size(), 1u);
  EXPECT_EQ(owners[0]["apiVersion"], "wavepool.dev/v1alpha1");
  EXPECT_EQ(owners[0]["kind"], "TrainingJob");
  EXPECT_EQ(owners[0]["name"], "resnet");
  EXPECT_EQ(owners[0]["uid"], "11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(owners[0]["controller"], true);
  EXPECT_EQ(owners[0]["blockOwnerDeletion"], true);
}

TEST(Pod, TheTemplateCannotSetTheControllersLabelsOrAnnotations) {
  // A background template that copies a foreground pod's annotations and marks its pods
  // preempted: none of it may reach the pod, where the controller and the agent trust those
  // keys (the template policy refuses such a template first; this is the last line).
  api::TrainingJob job = MakeJob(api::Role::kBackground);
  job.spec.pod_template["metadata"]["annotations"]["wavepool.dev/preempted-by"] = "team-a/fg";
  job.spec.pod_template["metadata"]["annotations"]["wavepool.dev/idle-fraction"] = "1";
  job.spec.pod_template["metadata"]["annotations"]["wavepool.dev/allow-background"] = "true";
  job.spec.pod_template["metadata"]["labels"]["agent.wavepool.dev/trusted"] = "yes";
  const json pod = Build(job, /*rank=*/0);
  const json& annotations = pod["metadata"]["annotations"];
  EXPECT_FALSE(annotations.contains("wavepool.dev/preempted-by"));
  EXPECT_FALSE(annotations.contains("wavepool.dev/idle-fraction"));
  EXPECT_FALSE(annotations.contains("wavepool.dev/allow-background"));
  EXPECT_FALSE(pod["metadata"]["labels"].contains("agent.wavepool.dev/trusted"));
  EXPECT_EQ(annotations["note"], "kept");
  EXPECT_EQ(pod["metadata"]["labels"]["team"], "a");
  EXPECT_EQ(pod["metadata"]["labels"]["wavepool.dev/role"], "Background");
}

TEST(OwnedMetadataKeys, AreTheWavepoolDomainAndItsSubdomains) {
  EXPECT_TRUE(IsControllerMetadataKey("wavepool.dev/role"));
  EXPECT_TRUE(IsControllerMetadataKey("agent.wavepool.dev/x"));
  EXPECT_FALSE(IsControllerMetadataKey("wavepool.dev"));
  EXPECT_FALSE(IsControllerMetadataKey("notwavepool.dev/x"));
  EXPECT_FALSE(IsControllerMetadataKey("wavepool.dev.example.com/x"));
  EXPECT_FALSE(IsControllerMetadataKey("app.kubernetes.io/name"));
}

TEST(PlanConfigMap, RejectsAJobWithoutUid) {
  api::TrainingJob job = MakeJob(api::Role::kForeground);
  job.metadata.uid.clear();
  EXPECT_THAT(BuildPlanConfigMap(job, MakePlan(4)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("metadata.uid")));
  job = MakeJob(api::Role::kForeground);
  job.metadata.namespace_.clear();
  EXPECT_THAT(BuildPlanConfigMap(job, MakePlan(4)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("metadata.namespace")));
}

TEST(Pod, CarriesNameLabelsAndOwnerReference) {
  const json pod = Build(MakeJob(api::Role::kForeground), /*rank=*/1, /*generation=*/3);
  EXPECT_EQ(pod["apiVersion"], "v1");
  EXPECT_EQ(pod["kind"], "Pod");
  EXPECT_EQ(pod["metadata"]["name"], "resnet-g3-1");
  EXPECT_EQ(pod["metadata"]["namespace"], "team-a");
  const json& labels = pod["metadata"]["labels"];
  EXPECT_EQ(labels["app.kubernetes.io/name"], "wavepool");
  EXPECT_EQ(labels["app.kubernetes.io/managed-by"], "wavepool-controller");
  EXPECT_EQ(labels["wavepool.dev/job"], "resnet");
  EXPECT_EQ(labels["wavepool.dev/role"], "Foreground");
  EXPECT_EQ(labels["wavepool.dev/rank"], "1");  // Ours win over the template's "99".
  EXPECT_EQ(labels["wavepool.dev/gang-generation"], "3");
  EXPECT_EQ(labels["kueue.x-k8s.io/queue-name"], "q");  // The template's are kept.
  EXPECT_EQ(labels["team"], "a");
  EXPECT_EQ(pod["metadata"]["annotations"]["note"], "kept");
  EXPECT_EQ(pod["metadata"]["annotations"]["wavepool.dev/job-name"], "resnet");
  const json& owners = pod["metadata"]["ownerReferences"];
  ASSERT_EQ(owners.size(), 1u);
  EXPECT_EQ(owners[0]["kind"], "TrainingJob");
  EXPECT_EQ(owners[0]["uid"], "11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(owners[0]["controller"], true);
  EXPECT_EQ(owners[0]["blockOwnerDeletion"], true);
  for (const auto& [key, value] : JobSelector("resnet")) EXPECT_EQ(labels[key], value) << key;
}

TEST(Pod, IsBoundToTheAssignedNodeAndNeverRestartedByTheKubelet) {
  const json pod = Build(MakeJob(api::Role::kForeground));
  EXPECT_EQ(pod["spec"]["nodeName"], "node-a");
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
  EXPECT_EQ(pod["spec"]["terminationGracePeriodSeconds"], 30);  // Foreground: the template's.
  EXPECT_FALSE(pod["spec"].contains("priorityClassName"));
}

TEST(Pod, WorkerGetsWavepoolEnvAndKeepsTheUsersEnv) {
  const json worker = Worker(Build(MakeJob(api::Role::kForeground), 1, 3));
  EXPECT_EQ(Env(worker, "WAVEPOOL_JOB"), "resnet");
  EXPECT_EQ(Env(worker, "WAVEPOOL_NAMESPACE"), "team-a");
  EXPECT_EQ(Env(worker, "WAVEPOOL_ROLE"), "Foreground");
  EXPECT_EQ(Env(worker, "WAVEPOOL_RANK"), "1");  // Ours win over the template's "7".
  EXPECT_EQ(Env(worker, "WAVEPOOL_WORLD_SIZE"), "4");
  EXPECT_EQ(Env(worker, "WAVEPOOL_GANG_GENERATION"), "3");
  EXPECT_EQ(Env(worker, "WAVEPOOL_PLAN"), "/etc/wavepool/plan.json");
  EXPECT_EQ(Env(worker, "WAVEPOOL_AGENT_DIR"), "/var/run/wavepool");
  EXPECT_EQ(Env(worker, "NVIDIA_VISIBLE_DEVICES"), "GPU-aaaa,GPU-bbbb");
  // The agent's MPS daemon of the first GPU (index 2): <agent dir>/mps/2/pipe.
  EXPECT_EQ(Env(worker, "CUDA_MPS_PIPE_DIRECTORY"), "/var/run/wavepool/mps/2/pipe");
  EXPECT_EQ(Env(worker, "CUDA_MPS_CLIENT_PRIORITY"), "0");
  EXPECT_EQ(Env(worker, "WAVEPOOL_CHECKPOINT_PATH"), "/ckpt/resnet");
  EXPECT_EQ(Env(worker, "USER_VAR"), "u");
  EXPECT_EQ(Env(worker, "FROM_SECRET"), "<valueFrom>");
  // Ours first, so the user's env may use $(WAVEPOOL_RANK).
  EXPECT_EQ(worker["env"][0]["name"], "WAVEPOOL_JOB");
}

TEST(Pod, WorkerMountsAgentMpsPlanAndCheckpoint) {
  const json pod = Build(MakeJob(api::Role::kForeground));
  const json& volumes = pod["spec"]["volumes"];
  const json* agent = Named(volumes, "wavepool-agent");
  ASSERT_NE(agent, nullptr);
  EXPECT_EQ((*agent)["hostPath"]["path"], "/var/run/wavepool");
  EXPECT_EQ((*agent)["hostPath"]["type"], "DirectoryOrCreate");
  const json* mps = Named(volumes, "wavepool-mps");
  ASSERT_NE(mps, nullptr);
  EXPECT_EQ((*mps)["hostPath"]["path"], "/var/run/wavepool/mps");
  const json* shm = Named(volumes, "wavepool-mps-shm");  // Shared with the MPS server.
  ASSERT_NE(shm, nullptr);
  EXPECT_EQ((*shm)["hostPath"]["path"], "/var/run/wavepool/mps/shm");
  const json* plan = Named(volumes, "wavepool-plan");
  ASSERT_NE(plan, nullptr);
  EXPECT_EQ((*plan)["configMap"]["name"], "resnet-plan");  // Not the template's emptyDir.
  EXPECT_FALSE(plan->contains("emptyDir"));
  const json* checkpoint = Named(volumes, "wavepool-checkpoint");
  ASSERT_NE(checkpoint, nullptr);
  EXPECT_EQ((*checkpoint)["hostPath"]["path"], "/var/lib/wavepool/checkpoints/team-a/resnet");
  ASSERT_NE(Named(volumes, "data"), nullptr);  // The template's volume is kept.
  EXPECT_EQ(volumes.size(), 6u);

  const json& mounts = Worker(pod)["volumeMounts"];
  EXPECT_EQ((*Named(mounts, "wavepool-agent"))["mountPath"], "/var/run/wavepool");
  EXPECT_EQ((*Named(mounts, "wavepool-mps"))["mountPath"], "/var/run/wavepool/mps");
  EXPECT_EQ((*Named(mounts, "wavepool-mps-shm"))["mountPath"], "/dev/shm");
  EXPECT_EQ((*Named(mounts, "wavepool-plan"))["mountPath"], "/etc/wavepool");
  EXPECT_EQ((*Named(mounts, "wavepool-plan"))["readOnly"], true);
  EXPECT_EQ((*Named(mounts, "wavepool-checkpoint"))["mountPath"], "/ckpt/resnet");
  EXPECT_NE(Named(mounts, "data"), nullptr);
  EXPECT_EQ(Named(mounts, "mine"), nullptr);  // It mounted over /etc/wavepool: ours win.
  EXPECT_EQ(mounts.size(), 6u);
}

TEST(Pod, TemplateMergeKeepsImageResourcesAndOtherContainers) {
  const json pod = Build(MakeJob(api::Role::kForeground));
  ASSERT_EQ(pod["spec"]["containers"].size(), 2u);
  const json& sidecar = pod["spec"]["containers"][0];
  EXPECT_EQ(sidecar, json::parse(R"({"name": "sidecar", "image": "busybox"})"));  // Untouched.
  EXPECT_EQ(Worker(pod)["image"], "registry/wavepool-worker:1.0");
  EXPECT_EQ(Worker(pod)["resources"]["limits"]["memory"], "16Gi");
}

TEST(Pod, CheckpointUnderAUserVolumeAddsNoVolume) {
  api::TrainingJob job = MakeJob(api::Role::kBackground);
  job.spec.checkpoint.path = "/data/ckpt";  // Under the template's "data" mount.
  const json pod = Build(job, 0, 0);
  EXPECT_EQ(Named(pod["spec"]["volumes"], "wavepool-checkpoint"), nullptr);
  job.spec.checkpoint.path = "s3://bucket/ckpt";  // Not a file path: no volume either.
  EXPECT_EQ(Named(Build(job, 0, 0)["spec"]["volumes"], "wavepool-checkpoint"), nullptr);
  job.spec.checkpoint.path = "/database";  // "/data" is a prefix of the text, not the path.
  EXPECT_NE(Named(Build(job, 0, 0)["spec"]["volumes"], "wavepool-checkpoint"), nullptr);
}

TEST(Pod, BackgroundGetsLowMpsPriorityPriorityClassAndGracePeriod) {
  const json pod = Build(MakeJob(api::Role::kBackground), 0, 0);
  EXPECT_EQ(pod["metadata"]["labels"]["wavepool.dev/role"], "Background");
  EXPECT_EQ(Env(Worker(pod), "WAVEPOOL_ROLE"), "Background");
  EXPECT_EQ(Env(Worker(pod), "CUDA_MPS_CLIENT_PRIORITY"), "1");
  EXPECT_EQ(Env(Worker(pod), "WAVEPOOL_WORLD_SIZE"), "1");
  EXPECT_EQ(pod["spec"]["priorityClassName"], "wavepool-background");
  // max(template 30, option 120) = 120.
  EXPECT_EQ(pod["spec"]["terminationGracePeriodSeconds"], 120);

  api::TrainingJob longer = MakeJob(api::Role::kBackground);
  longer.spec.pod_template["spec"]["terminationGracePeriodSeconds"] = 600;
  EXPECT_EQ(Build(longer, 0, 0)["spec"]["terminationGracePeriodSeconds"], 600);

  OwnedObjectOptions no_class;
  absl::StatusOr<json> plain =
      BuildPod(MakeJob(api::Role::kBackground), MakePlan(1), MakeAssignment(0), 0, no_class);
  ASSERT_OK(plain.status());
  EXPECT_FALSE((*plain)["spec"].contains("priorityClassName"));
}

TEST(Pod, WorkersJoinTheAgentsSocketGroupKeepingTheTemplatesGroups) {
  OwnedObjectOptions options;
  ASSERT_OK_AND_ASSIGN(json plain, BuildPod(MakeJob(api::Role::kForeground), MakePlan(4),
                                            MakeAssignment(0), 0, options));
  EXPECT_FALSE(plain["spec"].contains("securityContext"));  // -1: no socket group

  options.agent_socket_gid = 2000;
  api::TrainingJob job = MakeJob(api::Role::kBackground);
  job.spec.pod_template["spec"]["securityContext"] = {{"runAsUser", 1000},
                                                      {"supplementalGroups", {3000}}};
  ASSERT_OK_AND_ASSIGN(json pod, BuildPod(job, MakePlan(1), MakeAssignment(0), 0, options));
  EXPECT_EQ(pod["spec"]["securityContext"]["runAsUser"], 1000);
  EXPECT_EQ(pod["spec"]["securityContext"]["supplementalGroups"], json({3000, 2000}));
  job.spec.pod_template["spec"]["securityContext"]["supplementalGroups"] = {2000};
  ASSERT_OK_AND_ASSIGN(pod, BuildPod(job, MakePlan(1), MakeAssignment(0), 0, options));
  EXPECT_EQ(pod["spec"]["securityContext"]["supplementalGroups"], json({2000}));  // once
}

TEST(Pod, EmptyTemplateUsesTheDefaultImage) {
  api::TrainingJob job = MakeJob(api::Role::kForeground);
  job.spec.pod_template = nullptr;
  OwnedObjectOptions options;
  EXPECT_THAT(BuildPod(job, MakePlan(4), MakeAssignment(0), 0, options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.template.spec.containers[0].image")));
  options.default_image = "wavepool/worker:0.1";
  ASSERT_OK_AND_ASSIGN(const json pod, BuildPod(job, MakePlan(4), MakeAssignment(0), 0, options));
  ASSERT_EQ(pod["spec"]["containers"].size(), 1u);
  EXPECT_EQ(pod["spec"]["containers"][0]["name"], "worker");
  EXPECT_EQ(pod["spec"]["containers"][0]["image"], "wavepool/worker:0.1");
  EXPECT_EQ(Env(pod["spec"]["containers"][0], "WAVEPOOL_RANK"), "0");
}

TEST(Pod, TemplateHashIsStableAndTracksChanges) {
  const json a = Build(MakeJob(api::Role::kForeground), 1, 3);
  const json b = Build(MakeJob(api::Role::kForeground), 1, 3);
  const std::string hash = a["metadata"]["annotations"]["wavepool.dev/template-hash"];
  EXPECT_EQ(hash.size(), 16u);
  EXPECT_EQ(a, b);
  // The hash is that of the pod without the annotation.
  json without = a;
  without["metadata"]["annotations"].erase("wavepool.dev/template-hash");
  EXPECT_EQ(HashJson(without), hash);
  api::TrainingJob changed = MakeJob(api::Role::kForeground);
  changed.spec.pod_template["spec"]["containers"][1]["image"] = "registry/wavepool-worker:1.1";
  EXPECT_NE(Build(changed, 1, 3)["metadata"]["annotations"]["wavepool.dev/template-hash"], hash);
}

TEST(Pod, RejectsBadAssignments) {
  const api::TrainingJob job = MakeJob(api::Role::kForeground);
  const OwnedObjectOptions options = MakeOptions();
  PodAssignment a = MakeAssignment(4);  // plan.gpus is 4: ranks 0..3.
  EXPECT_THAT(BuildPod(job, MakePlan(4), a, 0, options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("assignment.rank: must be in [0, 4)")));
  a = MakeAssignment(-1);
  EXPECT_THAT(BuildPod(job, MakePlan(4), a, 0, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("assignment.rank")));
  a = MakeAssignment(0);
  a.gpu_uuids.clear();
  a.gpu_indices.clear();
  EXPECT_THAT(BuildPod(job, MakePlan(4), a, 0, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("assignment.gpuUUIDs")));
  a = MakeAssignment(0);
  a.gpu_uuids[1] = "GPU-a,GPU-b";
  EXPECT_THAT(BuildPod(job, MakePlan(4), a, 0, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("assignment.gpuUUIDs[1]")));
  a = MakeAssignment(0);
  a.gpu_indices.pop_back();
  EXPECT_THAT(BuildPod(job, MakePlan(4), a, 0, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("assignment.gpuIndices")));
  a = MakeAssignment(0);
  a.node_name.clear();
  EXPECT_THAT(BuildPod(job, MakePlan(4), a, 0, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("assignment.nodeName")));
  EXPECT_THAT(BuildPod(job, MakePlan(4), MakeAssignment(0), -1, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("gangGeneration")));
}

TEST(Pod, RejectsBadJobsAndTemplates) {
  const OwnedObjectOptions options = MakeOptions();
  api::TrainingJob job = MakeJob(api::Role::kForeground);
  job.spec.role.reset();
  EXPECT_THAT(BuildPod(job, MakePlan(4), MakeAssignment(0), 0, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("spec.role")));
  job = MakeJob(api::Role::kForeground);
  job.metadata.uid.clear();
  EXPECT_THAT(BuildPod(job, MakePlan(4), MakeAssignment(0), 0, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("metadata.uid")));
  job = MakeJob(api::Role::kForeground);
  job.spec.pod_template = json::array();
  EXPECT_THAT(BuildPod(job, MakePlan(4), MakeAssignment(0), 0, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("spec.template: must be")));
  job = MakeJob(api::Role::kForeground);
  job.spec.pod_template["spec"]["containers"] = json::object();
  EXPECT_THAT(BuildPod(job, MakePlan(4), MakeAssignment(0), 0, options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.template.spec.containers: must be an array")));
  job = MakeJob(api::Role::kForeground);
  job.spec.pod_template["spec"]["containers"][1]["env"] = json::array({"not-an-object"});
  EXPECT_THAT(BuildPod(job, MakePlan(4), MakeAssignment(0), 0, options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.template.spec.containers[1].env[0]: must be an object")));
  job = MakeJob(api::Role::kForeground);
  job.spec.pod_template["spec"]["volumes"][0]["name"] = 5;
  EXPECT_THAT(
      BuildPod(job, MakePlan(4), MakeAssignment(0), 0, options),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("spec.template.spec.volumes[0]")));
  job = MakeJob(api::Role::kForeground);
  job.spec.pod_template["spec"]["containers"][1]["name"] = 5;  // Caught at the boundary.
  EXPECT_THAT(BuildPod(job, MakePlan(4), MakeAssignment(0), 0, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("spec.template")));
  job = MakeJob(api::Role::kForeground);
  job.spec.pod_template["spec"]["containers"][1]["resources"]["limits"]["nvidia.com/gpu"] = "1";
  EXPECT_THAT(BuildPod(job, MakePlan(4), MakeAssignment(0), 0, options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("containers[1].resources.limits[nvidia.com/gpu]")));
}

// A plan whose predictions placement reads: 12 GiB per GPU, 0.5 s iterations on 4 GPUs leaving
// 0.5 GPU-seconds idle per iteration: idle fraction 0.5 / (0.5 x 4) = 0.25.
api::Plan PlanWithPredictions() {
  api::Plan plan = MakePlan(4);
  plan.predictions.memory_per_gpu_bytes = std::int64_t{12} << 30;  // 12884901888
  plan.predictions.iteration_seconds = 0.5;
  plan.predictions.background_idle_gpu_seconds = 0.5;
  return plan;
}

TEST(Pod, CarriesWhatPlacementNeedsToCountItsGpus) {
  api::TrainingJob job = MakeJob(api::Role::kForeground);
  job.spec.collocation.allow_background = false;
  job.spec.collocation.max_foreground_slowdown = 1.25;
  ASSERT_OK_AND_ASSIGN(json pod,
                       BuildPod(job, PlanWithPredictions(), MakeAssignment(1), 3, MakeOptions()));
  const json& annotations = pod["metadata"]["annotations"];
  EXPECT_EQ(annotations["wavepool.dev/gpu-uuids"], "GPU-aaaa,GPU-bbbb");
  EXPECT_EQ(annotations["wavepool.dev/memory-per-gpu-bytes"], "12884901888");
  EXPECT_EQ(annotations["wavepool.dev/idle-fraction"], "0.25");
  EXPECT_EQ(annotations["wavepool.dev/allow-background"], "false");
  EXPECT_EQ(annotations["wavepool.dev/max-foreground-slowdown"], "1.25");
}

TEST(Pod, BackgroundPodsCarryNoForegroundAnnotations) {
  api::TrainingJob job = MakeJob(api::Role::kBackground);
  api::Plan plan = PlanWithPredictions();
  plan.gpus = 1;
  ASSERT_OK_AND_ASSIGN(
      json pod, BuildPod(job, plan, PodAssignment{0, "node-a", {"GPU-c"}, {0}}, 0, MakeOptions()));
  const json& annotations = pod["metadata"]["annotations"];
  EXPECT_EQ(annotations["wavepool.dev/gpu-uuids"], "GPU-c");
  EXPECT_FALSE(annotations.contains("wavepool.dev/idle-fraction"));
  EXPECT_FALSE(annotations.contains("wavepool.dev/allow-background"));
}

TEST(AssignmentFromPod, ReadsBackWhatBuildPodWrote) {
  api::TrainingJob job = MakeJob(api::Role::kForeground);
  job.spec.collocation.allow_background = true;
  ASSERT_OK_AND_ASSIGN(json pod,
                       BuildPod(job, PlanWithPredictions(), MakeAssignment(1), 3, MakeOptions()));
  pod["status"] = {{"phase", "Running"}};
  ASSERT_OK_AND_ASSIGN(std::optional<GpuAssignment> a, AssignmentFromPod(pod));
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->job, "team-a/resnet");
  EXPECT_EQ(a->pod, "team-a/resnet-g3-1");  // Namespaced: unique across the inventory.
  EXPECT_EQ(a->role, api::Role::kForeground);
  EXPECT_EQ(a->node, "node-a");
  EXPECT_EQ(a->gpu_uuids, (std::vector<std::string>{"GPU-aaaa", "GPU-bbbb"}));
  EXPECT_EQ(a->memory_per_gpu_bytes, std::int64_t{12} << 30);
  EXPECT_DOUBLE_EQ(a->idle_fraction, 0.25);
  EXPECT_TRUE(a->allow_background);
  EXPECT_DOUBLE_EQ(a->max_foreground_slowdown, 1.1);  // The default.
}

TEST(AssignmentFromPod, FinishedPodsHoldNoGpusAndTerminatingOnesStillDo) {
  ASSERT_OK_AND_ASSIGN(json pod, BuildPod(MakeJob(api::Role::kForeground), PlanWithPredictions(),
                                          MakeAssignment(0), 0, MakeOptions()));
  pod["metadata"]["deletionTimestamp"] = "2026-05-01T10:00:00Z";
  ASSERT_OK_AND_ASSIGN(std::optional<GpuAssignment> held, AssignmentFromPod(pod));
  EXPECT_TRUE(held.has_value());
  for (const char* phase : {"Succeeded", "Failed"}) {
    pod["status"] = {{"phase", phase}};
    ASSERT_OK_AND_ASSIGN(std::optional<GpuAssignment> done, AssignmentFromPod(pod));
    EXPECT_FALSE(done.has_value()) << phase;
  }
}

TEST(AssignmentFromPod, RejectsPodsTheControllerDidNotBuild) {
  ASSERT_OK_AND_ASSIGN(json built, BuildPod(MakeJob(api::Role::kForeground), PlanWithPredictions(),
                                            MakeAssignment(0), 0, MakeOptions()));
  json no_role = built;
  no_role["metadata"]["labels"].erase("wavepool.dev/role");
  EXPECT_THAT(AssignmentFromPod(no_role),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("team-a/resnet-g0-0: metadata.labels[wavepool.dev/role]")));
  json bad_memory = built;
  bad_memory["metadata"]["annotations"]["wavepool.dev/memory-per-gpu-bytes"] = "lots";
  EXPECT_THAT(AssignmentFromPod(bad_memory),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("wavepool.dev/memory-per-gpu-bytes]: must be a byte count")));
  json no_uuids = built;
  no_uuids["metadata"]["annotations"].erase("wavepool.dev/gpu-uuids");
  EXPECT_THAT(AssignmentFromPod(no_uuids),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("gpu-uuids]: required")));
  json bad_allow = built;
  bad_allow["metadata"]["annotations"]["wavepool.dev/allow-background"] = "yes";
  EXPECT_THAT(AssignmentFromPod(bad_allow),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be \"true\" or")));
  json unbound = built;
  unbound["spec"].erase("nodeName");
  EXPECT_THAT(AssignmentFromPod(unbound),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("spec.nodeName")));
  EXPECT_THAT(AssignmentFromPod(json::array()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a wavepool pod")));
}

TEST(AssignmentFromPod, AdversarialPodWithoutAControllerReferenceToATrainingJobHoldsNoGpus) {
  const api::TrainingJob job = MakeJob(api::Role::kForeground);
  ASSERT_OK_AND_ASSIGN(json built,
                       BuildPod(job, PlanWithPredictions(), MakeAssignment(0), 0, MakeOptions()));
  EXPECT_TRUE(IsControlledBy(MetaOf(built), job.metadata.uid));
  EXPECT_EQ(ControllingJobUid(MetaOf(built)), job.metadata.uid);
  EXPECT_FALSE(IsControlledBy(MetaOf(built), "another-uid")) << "a re-created job of the same name";
  EXPECT_FALSE(IsControlledBy(MetaOf(built), ""));

  json orphan = built;  // kubectl delete --cascade=orphan
  orphan["metadata"].erase("ownerReferences");
  EXPECT_FALSE(IsControlledBy(MetaOf(orphan), job.metadata.uid));
  EXPECT_THAT(AssignmentFromPod(orphan),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("team-a/resnet-g0-0: metadata.ownerReferences")));
  json not_controller = built;  // An owner, but not the controller.
  not_controller["metadata"]["ownerReferences"][0]["controller"] = false;
  EXPECT_FALSE(IsControlledBy(MetaOf(not_controller), job.metadata.uid));
  EXPECT_THAT(AssignmentFromPod(not_controller),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ownerReferences")));
  json other_kind = built;  // Controlled by something that is not a TrainingJob.
  other_kind["metadata"]["ownerReferences"][0]["kind"] = "ReplicaSet";
  other_kind["metadata"]["ownerReferences"][0]["apiVersion"] = "apps/v1";
  EXPECT_TRUE(ControllingJobUid(MetaOf(other_kind)).empty());
  EXPECT_THAT(AssignmentFromPod(other_kind),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ownerReferences")));
}

}  // namespace
}  // namespace wavepool::controller
