// The in-process controller against the simulated cluster: where foreground gangs and background
// pods land, what a waiting job says, and preemption of background pods by an exclusive gang.
#include <algorithm>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/cluster/test_cluster.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/object_meta.h"
#include "wavepool/api/plan.h"
#include "wavepool/controller/owned_objects.h"
#include "wavepool/controller/placement.h"

namespace wavepool::testing {
namespace {

using ::testing::Contains;
using ::testing::Each;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

const JobPredicate kRunning = PhaseIs(api::JobPhase::kRunning);

// The value of env variable `name` in the pod's worker container; "" when absent.
std::string WorkerEnv(const nlohmann::json& pod, const std::string& name) {
  for (const nlohmann::json& container : pod["spec"]["containers"]) {
    if (container.value("name", "") != controller::kWorkerContainerName) continue;
    for (const nlohmann::json& env : container.value("env", nlohmann::json::array())) {
      if (env.value("name", "") == name) return env.value("value", "");
    }
  }
  return "";
}

std::string NodeOf(const nlohmann::json& pod) { return pod["spec"].value("nodeName", ""); }

std::set<std::string> NodesOf(const api::TrainingJob& job) {
  std::set<std::string> nodes;
  for (const api::PodPlacement& placement : job.status.placement) nodes.insert(placement.node);
  return nodes;
}

std::set<std::string> UuidsOf(const api::TrainingJob& job) {
  std::set<std::string> uuids;
  for (const api::PodPlacement& placement : job.status.placement) {
    uuids.insert(placement.gpu_uuids.begin(), placement.gpu_uuids.end());
  }
  return uuids;
}

// The Plan the controller stored for `job`.
absl::StatusOr<api::Plan> StoredPlan(TestCluster& cluster, const std::string& job) {
  absl::StatusOr<nlohmann::json> config_map =
      cluster.GetConfigMap(controller::PlanConfigMapName(job));
  if (!config_map.ok()) return config_map.status();
  const std::string text = (*config_map)["data"].value(std::string(controller::kPlanKey), "");
  try {
    return api::Plan::FromJson(nlohmann::json::parse(text));
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(e.what());
  }
}

TEST(ControllerPlacement, ForegroundJobRunsOnOneNodeAndPodsSeeTheirRecordedGpus) {
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(2, 8));
  ASSERT_OK(cluster->CreateJobFromExample("vgg16-foreground.yaml").status());
  ASSERT_OK_AND_ASSIGN(api::TrainingJob job, cluster->WaitForJob("vgg16", kRunning));

  ASSERT_OK_AND_ASSIGN(api::Plan plan, StoredPlan(*cluster, "vgg16"));
  ASSERT_THAT(job.status.placement, SizeIs(plan.gpus));
  EXPECT_THAT(NodesOf(job), SizeIs(1)) << "8 GPUs fit on one 8-GPU node";
  EXPECT_THAT(UuidsOf(job), SizeIs(plan.gpus)) << "every rank has its own GPU";
  const std::vector<nlohmann::json> pods = cluster->PodsOfJob("vgg16");
  ASSERT_THAT(pods, SizeIs(plan.gpus));
  for (const api::PodPlacement& placement : job.status.placement) {
    auto pod = std::find_if(pods.begin(), pods.end(), [&](const nlohmann::json& p) {
      return p["metadata"]["name"] == placement.pod;
    });
    ASSERT_NE(pod, pods.end()) << "no pod " << placement.pod;
    EXPECT_THAT(NodeOf(*pod), Eq(placement.node));
    EXPECT_THAT(WorkerEnv(*pod, "NVIDIA_VISIBLE_DEVICES"),
                Eq(absl::StrJoin(placement.gpu_uuids, ",")));
    for (const std::string& uuid : placement.gpu_uuids) {
      EXPECT_THAT(uuid, HasSubstr("GPU-" + placement.node + "-")) << "a GPU of its own node";
    }
    EXPECT_THAT(WorkerEnv(*pod, "WAVEPOOL_PLAN"), Eq(controller::kPlanPath));
    EXPECT_THAT((*pod)["status"].value("phase", ""), Eq("Running"));
  }
}

TEST(ControllerPlacement, PlanConfigMapHoldsThePlanJsonOwnedByTheJob) {
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(1, 8));
  ASSERT_OK_AND_ASSIGN(api::TrainingJob created, cluster->CreateJob(ForegroundJob("train", 4)));
  ASSERT_OK_AND_ASSIGN(api::TrainingJob job,
                       cluster->WaitForJob("train", ConditionIs("Planned", "True")));
  ASSERT_OK_AND_ASSIGN(nlohmann::json config_map, cluster->GetConfigMap("train-plan"));
  ASSERT_OK_AND_ASSIGN(api::Plan plan, StoredPlan(*cluster, "train"));
  EXPECT_THAT(plan.gpus, Eq(4));
  EXPECT_THAT(plan.global_batch_size, Eq(128));
  ASSERT_TRUE(job.status.plan.has_value());
  EXPECT_THAT(job.status.plan->strategy, Eq(api::Strategy::kDataParallel));
  const nlohmann::json owners = config_map["metadata"]["ownerReferences"];
  ASSERT_THAT(owners, SizeIs(1));
  EXPECT_THAT(owners[0].value("uid", ""), Eq(created.metadata.uid));
  EXPECT_THAT(owners[0].value("controller", false), Eq(true));
}

TEST(ControllerPlacement, GangBiggerThanANodeSpansTheFewestNodes) {
  // 3 nodes of 6 GPUs: 8 ranks need 2 nodes (6 + 2), never 3.
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(3, 6));
  ASSERT_OK(cluster->CreateJob(ForegroundJob("wide", 8)).status());
  ASSERT_OK_AND_ASSIGN(api::TrainingJob job, cluster->WaitForJob("wide", kRunning));
  EXPECT_THAT(job.status.placement, SizeIs(8));
  EXPECT_THAT(UuidsOf(job), SizeIs(8));
  EXPECT_THAT(NodesOf(job), SizeIs(2));
  EXPECT_THAT(cluster->PodsOfJob("wide"), SizeIs(8));
}

TEST(ControllerPlacement, GangThatCannotFitWaitsWithAReasonUntilANodeIsAdded) {
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(1, 4));
  ASSERT_OK(cluster->CreateJob(ForegroundJob("big", 8)).status());
  ASSERT_OK_AND_ASSIGN(
      api::TrainingJob waiting,
      cluster->WaitForJob("big", ConditionIs("Placed", "False", controller::kNotPlaceableReason)));
  const api::Condition* placed = api::FindCondition(waiting.status.conditions, "Placed");
  ASSERT_NE(placed, nullptr);
  EXPECT_THAT(placed->message, HasSubstr("8 GPUs"));
  EXPECT_THAT(cluster->PodsOfJob("big"), IsEmpty()) << "never half a gang";

  ASSERT_OK(cluster->AddNode("node-big", 8));
  ASSERT_OK_AND_ASSIGN(api::TrainingJob job, cluster->WaitForJob("big", kRunning));
  EXPECT_THAT(NodesOf(job), Eq(std::set<std::string>{"node-big"}));
  EXPECT_TRUE(ConditionIs("Placed", "True")(job));
}

TEST(ControllerPlacement, WaitingGangIsPlacedWhenAnotherJobIsDeleted) {
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(1, 4));
  ASSERT_OK(cluster->CreateJob(ForegroundJob("first", 4)).status());
  ASSERT_OK(cluster->WaitForJob("first", kRunning).status());
  ASSERT_OK(cluster->CreateJob(ForegroundJob("second", 4)).status());
  ASSERT_OK(cluster->WaitForJob("second", ConditionIs("Placed", "False")).status());
  EXPECT_THAT(cluster->PodsOfJob("second"), IsEmpty());

  ASSERT_OK(cluster->DeleteJob("first"));
  ASSERT_OK_AND_ASSIGN(api::TrainingJob job, cluster->WaitForJob("second", kRunning));
  EXPECT_THAT(job.status.placement, SizeIs(4));
  EXPECT_THAT(cluster->PodsOfJob("first"), IsEmpty());
}

TEST(ControllerPlacement, BackgroundJobSharesAGpuOfAForegroundJobThatLeavesIdleTime) {
  // Half the node stays empty: the bg pod still goes next to the fg job, whose idle cycles it
  // uses (placement.h: shared GPUs first).
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(1, 8));
  nlohmann::json fg = ForegroundJob("fg", 4);
  fg["spec"]["parallelism"] = {{"strategy", "BurstParallel"}, {"amplificationLimit", 2.0}};
  fg["spec"]["model"]["name"] = "vgg16";
  ASSERT_OK(cluster->CreateJob(fg).status());
  ASSERT_OK_AND_ASSIGN(api::TrainingJob fg_job, cluster->WaitForJob("fg", kRunning));

  ASSERT_OK(cluster->CreateJobFromExample("resnet50-background.yaml").status());
  ASSERT_OK_AND_ASSIGN(api::TrainingJob bg_job,
                       cluster->WaitForJob("resnet50-background", kRunning));
  ASSERT_THAT(bg_job.status.placement, SizeIs(1));
  ASSERT_THAT(bg_job.status.placement[0].gpu_uuids, SizeIs(1));
  EXPECT_THAT(UuidsOf(fg_job), Contains(bg_job.status.placement[0].gpu_uuids[0]));
  const std::vector<nlohmann::json> pods = cluster->PodsOfJob("resnet50-background");
  ASSERT_THAT(pods, SizeIs(1));
  EXPECT_THAT(WorkerEnv(pods[0], "CUDA_MPS_CLIENT_PRIORITY"), Eq("1"));
}

// A bg job running alone on a 2-GPU node; then an exclusive 2-GPU fg job. Pods stop after
// `pod_stop_delay` once deleted.
absl::StatusOr<std::unique_ptr<TestCluster>> StartPreemption(std::chrono::nanoseconds stop_delay) {
  TestCluster::Options options;
  options.nodes = 1;
  options.gpus_per_node = 2;
  options.pod_stop_delay = stop_delay;
  return TestCluster::Start(options);
}

absl::Status CreateExclusiveJob(TestCluster& cluster) {
  nlohmann::json fg = ForegroundJob("exclusive", 2);
  fg["spec"]["collocation"] = {{"allowBackground", false}};
  return cluster.CreateJob(fg).status();
}

TEST(ControllerPlacement, ExclusiveForegroundJobPreemptsABackgroundPodThatIsPlacedAgainLater) {
  ASSERT_OK_AND_ASSIGN(auto cluster, StartPreemption(std::chrono::nanoseconds(0)));
  ASSERT_OK(cluster->CreateJob(BackgroundJob("bg")).status());
  ASSERT_OK_AND_ASSIGN(api::TrainingJob bg, cluster->WaitForJob("bg", kRunning));
  ASSERT_THAT(bg.status.placement, SizeIs(1));
  const std::string first_pod = bg.status.placement[0].pod;

  ASSERT_OK(CreateExclusiveJob(*cluster));
  ASSERT_OK_AND_ASSIGN(api::TrainingJob fg_job, cluster->WaitForJob("exclusive", kRunning));
  EXPECT_THAT(NodesOf(fg_job), Each(Eq("node-0")));
  // The gang started only once the bg pod was gone, and no GPU is left for it meanwhile.
  EXPECT_THAT(cluster->PodsOfJob("bg"), IsEmpty());
  ASSERT_OK(cluster->WaitForJob("bg", ConditionIs("Placed", "False")).status());

  // A new node gives the preempted job a GPU again, under a new pod.
  ASSERT_OK(cluster->AddNode("node-spare", 2));
  ASSERT_OK_AND_ASSIGN(bg, cluster->WaitForJob("bg", kRunning));
  ASSERT_THAT(bg.status.placement, SizeIs(1));
  EXPECT_THAT(bg.status.placement[0].node, Eq("node-spare"));
  EXPECT_THAT(bg.status.placement[0].pod, Not(Eq(first_pod)));
}

// A bg pod that takes a moment to stop (a worker checkpointing on SIGTERM): the exclusive gang
// nominates the GPUs it waits for, so the preempted job is not placed back onto them (and
// preempted again, forever); the victim reports Preempted, never a lost pod, while it waits.
TEST(ControllerPlacement, PreemptedBackgroundJobReportsPreemptedAndYieldsItsGpus) {
  ASSERT_OK_AND_ASSIGN(auto cluster, StartPreemption(std::chrono::milliseconds(500)));
  ASSERT_OK(cluster->CreateJob(BackgroundJob("bg")).status());
  ASSERT_OK(cluster->WaitForJob("bg", kRunning).status());
  ASSERT_OK(CreateExclusiveJob(*cluster));
  ASSERT_OK(cluster
                ->WaitForJob("bg",
                             [](const api::TrainingJob& job) {
                               return job.status.phase == api::JobPhase::kPreempted ||
                                      ConditionIs("Preempted", "True")(job);
                             })
                .status());
  ASSERT_OK(cluster->WaitForJob("exclusive", kRunning).status());
  EXPECT_THAT(cluster->PodsOfJob("bg"), IsEmpty());
  // No GPU is left: the bg job stays Preempted (one new gang generation, no restart counted).
  ASSERT_OK_AND_ASSIGN(api::TrainingJob bg,
                       cluster->WaitForJob("bg", [](const api::TrainingJob& job) {
                         return job.status.phase == api::JobPhase::kPreempted &&
                                ConditionIs("Preempted", "True")(job);
                       }));
  EXPECT_EQ(bg.status.gang_generation, 1);
  EXPECT_EQ(bg.status.restarts, 0);
  const api::Condition* preempted = api::FindCondition(bg.status.conditions, "Preempted");
  ASSERT_NE(preempted, nullptr);
  EXPECT_THAT(preempted->message, HasSubstr("exclusive"));
}

}  // namespace
}  // namespace wavepool::testing
