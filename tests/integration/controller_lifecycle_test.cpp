// The in-process controller against the simulated cluster: what happens to a running job when
// its pods fail, its node goes down, it is suspended, resumed or deleted, its spec is invalid,
// and its workers report progress through their node agents.
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/cluster/test_cluster.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/gpu_node.h"
#include "wavepool/api/object_meta.h"
#include "wavepool/base/status_macros.h"
#include "wavepool/controller/owned_objects.h"
#include "wavepool/kube/api_error.h"

namespace wavepool::testing {
namespace {

using ::testing::Contains;
using ::testing::Each;
using ::testing::Eq;
using ::testing::Ge;
using ::testing::Gt;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Ne;
using ::testing::Not;
using ::testing::SizeIs;

const JobPredicate kRunning = PhaseIs(api::JobPhase::kRunning);

// Running with a gang newer than `generation`.
JobPredicate RunningAfter(std::int64_t generation) {
  return [generation](const api::TrainingJob& job) {
    return job.status.phase == api::JobPhase::kRunning && job.status.gang_generation > generation &&
           !job.status.placement.empty();
  };
}

std::set<std::string> GenerationsOf(const std::vector<nlohmann::json>& pods) {
  std::set<std::string> generations;
  for (const nlohmann::json& pod : pods) {
    generations.insert(
        pod["metadata"]["labels"].value(std::string(controller::kLabelGangGeneration), ""));
  }
  return generations;
}

TEST(ControllerLifecycle, FailedForegroundPodRestartsTheWholeGangWithANewGeneration) {
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(1, 8));
  nlohmann::json spec = ForegroundJob("train", 4);
  spec["spec"]["backoffLimit"] = 3;
  ASSERT_OK(cluster->CreateJob(spec).status());
  ASSERT_OK_AND_ASSIGN(api::TrainingJob job, cluster->WaitForJob("train", kRunning));
  const std::int64_t generation = job.status.gang_generation;
  EXPECT_THAT(job.status.restarts, Eq(0));

  ASSERT_OK(cluster->FailPod("default", job.status.placement[1].pod, 137, "OOMKilled"));
  ASSERT_OK_AND_ASSIGN(job, cluster->WaitForJob("train", RunningAfter(generation)));
  EXPECT_THAT(job.status.restarts, Eq(1));
  // The old gang's pods go; only the new generation's remain, all of them.
  ASSERT_OK(cluster->WaitUntil("only the new gang's pods", [&] {
    return GenerationsOf(cluster->PodsOfJob("train")) ==
           std::set<std::string>{std::to_string(job.status.gang_generation)};
  }));
  EXPECT_THAT(cluster->PodsOfJob("train"), SizeIs(4));
  for (const api::PodPlacement& placement : job.status.placement) {
    EXPECT_THAT(placement.pod, Eq(controller::PodName("train", job.status.gang_generation,
                                                      &placement - &job.status.placement[0])));
  }
}

TEST(ControllerLifecycle, ForegroundJobFailsOncePodFailuresPassTheBackoffLimit) {
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(1, 4));
  nlohmann::json spec = ForegroundJob("flaky", 2);
  spec["spec"]["backoffLimit"] = 1;
  ASSERT_OK(cluster->CreateJob(spec).status());
  ASSERT_OK_AND_ASSIGN(api::TrainingJob job, cluster->WaitForJob("flaky", kRunning));
  ASSERT_OK(cluster->FailPod("default", job.status.placement[0].pod));
  ASSERT_OK_AND_ASSIGN(job, cluster->WaitForJob("flaky", RunningAfter(job.status.gang_generation)));
  EXPECT_THAT(job.status.restarts, Eq(1));

  ASSERT_OK(cluster->FailPod("default", job.status.placement[0].pod));
  ASSERT_OK_AND_ASSIGN(job, cluster->WaitForJob("flaky", PhaseIs(api::JobPhase::kFailed)));
  EXPECT_TRUE(ConditionIs("Failed", "True")(job));
  EXPECT_THAT(job.status.restarts, Ge(1));
  // A failed job holds no GPUs: no pod of it is left running.
  ASSERT_OK(cluster->WaitUntil("no running pod of the failed job", [&] {
    for (const nlohmann::json& pod : cluster->PodsOfJob("flaky")) {
      const std::string phase = pod["status"].value("phase", "");
      if (phase != "Failed" && phase != "Succeeded") return false;
    }
    return true;
  }));
}

TEST(ControllerLifecycle, NodeDownRestartsTheGangElsewhereWithoutCountingARestart) {
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(2, 4));
  ASSERT_OK(cluster->CreateJob(ForegroundJob("train", 4)).status());
  ASSERT_OK_AND_ASSIGN(api::TrainingJob job, cluster->WaitForJob("train", kRunning));
  const std::string lost = job.status.placement[0].node;

  ASSERT_OK(cluster->NodeDown(lost));
  ASSERT_OK_AND_ASSIGN(job, cluster->WaitForJob("train", RunningAfter(job.status.gang_generation)));
  for (const api::PodPlacement& placement : job.status.placement) {
    EXPECT_THAT(placement.node, Ne(lost));
  }
  EXPECT_THAT(job.status.restarts, Eq(0)) << "infrastructure failures are not the job's";
}

TEST(ControllerLifecycle, SuspendRemovesThePodsAndResumeRunsTheJobAgain) {
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(1, 4));
  ASSERT_OK(cluster->CreateJob(ForegroundJob("train", 2)).status());
  ASSERT_OK(cluster->WaitForJob("train", kRunning).status());

  ASSERT_OK(cluster->PatchJobSpec("train", {{"suspend", true}}));
  ASSERT_OK(cluster->WaitForJob("train", PhaseIs(api::JobPhase::kSuspended)).status());
  ASSERT_OK(cluster->WaitUntil("the suspended job's pods gone",
                               [&] { return cluster->PodsOfJob("train").empty(); }));

  ASSERT_OK(cluster->PatchJobSpec("train", {{"suspend", false}}));
  ASSERT_OK_AND_ASSIGN(api::TrainingJob job, cluster->WaitForJob("train", kRunning));
  EXPECT_THAT(job.status.placement, SizeIs(2));
  EXPECT_THAT(job.status.restarts, Eq(0));
}

// Replaces the TrainingJob CRD in `cluster` with `crd` (its current resourceVersion taken).
absl::Status ReplaceTrainingJobCrd(TestCluster& cluster, nlohmann::json crd) {
  apiserver::ObjectStore& store = cluster.server().store();
  const std::optional<apiserver::ResourceInfo> crds =
      store.FindResource("apiextensions.k8s.io", "v1", "customresourcedefinitions");
  if (!crds.has_value()) return absl::InternalError("no CustomResourceDefinition resource");
  const std::string name = crd["metadata"]["name"].get<std::string>();
  WAVEPOOL_ASSIGN_OR_RETURN(nlohmann::json current, store.Get(*crds, "", name));
  crd["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"];
  return store.Update(*crds, "", name, std::move(crd), "", {}).status();
}

// A job that was valid when it was created stays in the store when an upgraded CRD adds a rule it
// breaks (an API server never revalidates stored objects): the controller's own validation
// fails it, naming the field.
TEST(ControllerLifecycle, InvalidSpecFailsTheJobWithAnEventNamingTheField) {
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(1, 4));
  apiserver::ObjectStore& store = cluster->server().store();
  const std::optional<apiserver::ResourceInfo> crds =
      store.FindResource("apiextensions.k8s.io", "v1", "customresourcedefinitions");
  ASSERT_TRUE(crds.has_value());
  ASSERT_OK_AND_ASSIGN(nlohmann::json upgraded, store.Get(*crds, "", "trainingjobs.wavepool.dev"));
  // The CRD before the rule that maxBatchSize belongs to Background jobs.
  nlohmann::json older = upgraded;
  nlohmann::json& rules = older["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
                               ["spec"]["x-kubernetes-validations"];
  const std::size_t rule_count = rules.size();
  for (auto it = rules.begin(); it != rules.end(); ++it) {
    if (it->value("fieldPath", "") == ".collocation.maxBatchSize") {
      rules.erase(it);
      break;
    }
  }
  ASSERT_EQ(rules.size(), rule_count - 1);
  ASSERT_OK(ReplaceTrainingJobCrd(*cluster, older));
  nlohmann::json spec = ForegroundJob("bad", 2);
  spec["spec"]["collocation"] = {{"maxBatchSize", 16}};
  ASSERT_OK(cluster->CreateJob(spec).status());
  ASSERT_OK(ReplaceTrainingJobCrd(*cluster, upgraded));
  ASSERT_OK_AND_ASSIGN(api::TrainingJob job,
                       cluster->WaitForJob("bad", PhaseIs(api::JobPhase::kFailed)));
  const api::Condition* invalid = api::FindCondition(job.status.conditions, "Invalid");
  ASSERT_NE(invalid, nullptr);
  EXPECT_THAT(invalid->status, Eq(api::ConditionStatus::kTrue));
  EXPECT_THAT(invalid->message, HasSubstr("spec.collocation.maxBatchSize"));
  ASSERT_OK(cluster->WaitUntil("a Warning event naming the field", [&] {
    for (const nlohmann::json& event : cluster->EventsOf("bad")) {
      if (event.value("type", "") == "Warning" &&
          event.value("message", "").find("spec.collocation.maxBatchSize") != std::string::npos) {
        return true;
      }
    }
    return false;
  }));
  EXPECT_THAT(cluster->PodsOfJob("bad"), IsEmpty());
}

TEST(ControllerLifecycle, DeletingAJobRemovesItsPodsAndPlanConfigMap) {
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(1, 4));
  ASSERT_OK(cluster->CreateJob(ForegroundJob("train", 4)).status());
  ASSERT_OK(cluster->WaitForJob("train", kRunning).status());
  ASSERT_OK_AND_ASSIGN(nlohmann::json before, cluster->GetConfigMap("train-plan"));
  EXPECT_THAT(cluster->OwnedPodCount(), Eq(4u));

  ASSERT_OK(cluster->DeleteJob("train"));
  // On failure: what is left, and whether the ConfigMap is the one from before the deletion (a
  // ConfigMap written after it, owned by the gone job, is never garbage-collected here).
  ASSERT_OK(cluster->WaitUntil("the job's pods and ConfigMap gone",
                               [&] {
                                 return cluster->OwnedPodCount() == 0 &&
                                        kube::IsNotFound(
                                            cluster->GetConfigMap("train-plan").status());
                               }))
      << "left: " << ::testing::PrintToString(cluster->OwnedPods())
      << "\nconfig map: " << cluster->GetConfigMap("train-plan").value_or(nlohmann::json()).dump()
      << "\nbefore: " << before.dump()
      << "\nlog: " << ::testing::PrintToString(cluster->ControllerLog());
}

// Publishes `progress` for every pod of `job` on the GPUs its placement names, as the agents
// do after each report from a worker.
absl::Status PublishProgress(TestCluster& cluster, const api::TrainingJob& job,
                             const api::TrainingProgress& progress) {
  for (const api::PodPlacement& placement : job.status.placement) {
    absl::StatusOr<api::GpuNodeStatus> status =
        cluster.AgentsOf(placement.node).PublishedStatus(placement.node);
    if (!status.ok()) return status.status();
    for (const api::GpuStatus& gpu : status->gpus) {
      if (gpu.uuid != placement.gpu_uuids[0]) continue;
      api::GpuTask task;
      task.namespace_ = job.metadata.namespace_;
      task.job = job.metadata.name;
      task.pod = placement.pod;
      task.role = *job.spec.role;
      task.pid = 1000 + gpu.index;
      task.progress = progress;
      if (absl::Status s =
              cluster.AgentsOf(placement.node).SetTasks(placement.node, gpu.index, {task});
          !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

TEST(ControllerLifecycle, AgentProgressShowsInStatusAndDegradedOncePastTheSlowdownSlo) {
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(1, 4));
  nlohmann::json spec = ForegroundJob("train", 2);
  spec["spec"]["collocation"] = {{"maxForegroundSlowdown", 1.2}};
  ASSERT_OK(cluster->CreateJob(spec).status());
  ASSERT_OK_AND_ASSIGN(api::TrainingJob job, cluster->WaitForJob("train", kRunning));
  EXPECT_EQ(job.status.gpus, std::optional<std::int64_t>(2));
  EXPECT_EQ(api::FindCondition(job.status.conditions, "Degraded"), nullptr)
      << "nothing measured yet: no Degraded condition";

  api::TrainingProgress progress;
  progress.step = 120;
  progress.samples_per_second = 500;
  progress.iteration_seconds = 0.125;
  progress.foreground_slowdown = 1.1;
  ASSERT_OK(PublishProgress(*cluster, job, progress));
  ASSERT_OK_AND_ASSIGN(job, cluster->WaitForJob("train", [](const api::TrainingJob& j) {
    // Two pods reporting 500 samples/s each: the job's throughput is their sum (waiting for it
    // also waits for the second pod's report, published in a separate write).
    return j.status.progress.has_value() && j.status.progress->step == 120 &&
           j.status.progress->samples_per_second == 1000;
  }));
  EXPECT_THAT(job.status.progress->foreground_slowdown, Eq(1.1));
  EXPECT_FALSE(ConditionIs("Degraded", "True")(job)) << "1.1 is within the 1.2 SLO";

  progress.step = 240;
  progress.foreground_slowdown = 1.5;
  ASSERT_OK(PublishProgress(*cluster, job, progress));
  ASSERT_OK_AND_ASSIGN(job, cluster->WaitForJob("train", [](const api::TrainingJob& j) {
    // The gang is as far as its slowest rank: 240 once both pods reported it.
    return ConditionIs("Degraded", "True")(j) && j.status.progress->step == 240;
  }));
  const api::Condition* degraded = api::FindCondition(job.status.conditions, "Degraded");
  ASSERT_NE(degraded, nullptr);
  EXPECT_THAT(degraded->message, Not(IsEmpty()));
  EXPECT_THAT(job.status.phase, Eq(api::JobPhase::kRunning)) << "degraded, still running";
}

}  // namespace
}  // namespace wavepool::testing
