// The in-process controller against the simulated cluster: each gang gets a headless Service
// named after its generation before its pods, the pods are named under it (hostname,
// subdomain) and told where rank 0's store is; a gang restart brings a new Service and removes
// the old one; deleting the job lets garbage collection take them.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/cluster/test_cluster.h"
#include "tests/support/status_matchers.h"
#include "wavepool/controller/owned_objects.h"

namespace wavepool::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::IsEmpty;
using ::testing::SizeIs;

const JobPredicate kRunning = PhaseIs(api::JobPhase::kRunning);

std::vector<std::string> Names(const std::vector<nlohmann::json>& objects) {
  std::vector<std::string> names;
  for (const nlohmann::json& object : objects) {
    names.push_back(object["metadata"].value("name", ""));
  }
  return names;
}

// The worker container's env entry `name` (null when absent).
nlohmann::json EnvEntry(const nlohmann::json& pod, const std::string& name) {
  for (const nlohmann::json& container : pod["spec"]["containers"]) {
    if (container.value("name", "") != controller::kWorkerContainerName) continue;
    for (const nlohmann::json& e : container.value("env", nlohmann::json::array())) {
      if (e.value("name", "") == name) return e;
    }
  }
  return nullptr;
}

std::string EnvValue(const nlohmann::json& pod, const std::string& name) {
  const nlohmann::json entry = EnvEntry(pod, name);
  return entry.is_object() ? entry.value("value", "") : "<absent>";
}

// The pods of the job's current gang, by name.
std::vector<nlohmann::json> CurrentGang(TestCluster& cluster, const api::TrainingJob& job) {
  std::vector<nlohmann::json> gang;
  for (nlohmann::json& pod : cluster.PodsOfJob(job.metadata.name)) {
    if (pod["metadata"]["labels"].value(std::string(controller::kLabelGangGeneration), "") ==
        absl::StrCat(job.status.gang_generation)) {
      gang.push_back(std::move(pod));
    }
  }
  return gang;
}

TEST(ControllerRendezvous, ForegroundGangGetsAHeadlessServiceItsPodsAreNamedUnder) {
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(1, 4));
  nlohmann::json spec = ForegroundJob("train", 2);
  spec["spec"]["collocation"] = {{"maxForegroundSlowdown", 1.2}};
  ASSERT_OK(cluster->CreateJob(spec).status());
  ASSERT_OK_AND_ASSIGN(api::TrainingJob job, cluster->WaitForJob("train", kRunning));
  const std::int64_t generation = job.status.gang_generation;
  const std::string service_name = controller::GangServiceName("train", generation);

  const std::vector<nlohmann::json> services = cluster->ServicesOfJob("train");
  ASSERT_THAT(Names(services), ElementsAre(service_name));
  const nlohmann::json& service = services.front();
  EXPECT_EQ(service["spec"]["clusterIP"], "None");
  EXPECT_EQ(service["spec"]["publishNotReadyAddresses"], true);
  ASSERT_THAT(service["spec"]["ports"], SizeIs(1));
  EXPECT_EQ(service["spec"]["ports"][0]["name"], "rendezvous");
  EXPECT_EQ(service["spec"]["ports"][0]["port"], 29500);
  const nlohmann::json& owner = service["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["kind"], "TrainingJob");
  EXPECT_EQ(owner["uid"], job.metadata.uid);
  EXPECT_EQ(owner["controller"], true);

  // The Service selects exactly the gang's two pods.
  const std::vector<nlohmann::json> gang = CurrentGang(*cluster, job);
  ASSERT_THAT(gang, SizeIs(2));
  for (const nlohmann::json& pod : cluster->PodsOfJob("train")) {
    bool selected = true;
    for (const auto& [key, value] : service["spec"]["selector"].items()) {
      selected = selected && pod["metadata"]["labels"].value(key, "") == value;
    }
    EXPECT_EQ(selected,
              pod["metadata"]["labels"].value(std::string(controller::kLabelGangGeneration), "") ==
                  absl::StrCat(generation))
        << pod["metadata"]["name"];
  }

  // Each pod: a hostname of its own under the Service, rank 0's store, its name, its GPU and
  // the job's slowdown SLO.
  std::set<std::string> hostnames;
  std::map<std::string, std::string> node_of;
  const std::string rank0_host = controller::PodHostname("train", generation, 0);
  for (const api::PodPlacement& p : job.status.placement) node_of[p.pod] = p.gpu_uuids.at(0);
  for (const nlohmann::json& pod : gang) {
    const std::string name = pod["metadata"]["name"];
    EXPECT_EQ(pod["spec"]["subdomain"], service_name) << name;
    hostnames.insert(pod["spec"].value("hostname", ""));
    EXPECT_EQ(EnvValue(pod, "WAVEPOOL_STORE"),
              absl::StrCat("tcp://", rank0_host, ".", service_name, ".default.svc:29500"))
        << name;
    EXPECT_EQ(EnvEntry(pod, "WAVEPOOL_POD_NAME")["valueFrom"]["fieldRef"]["fieldPath"],
              "metadata.name")
        << name;
    // The simulated agents name GPU i of a node "GPU-<node>-<i>".
    const std::string uuid = node_of.at(name);
    EXPECT_EQ(EnvValue(pod, "WAVEPOOL_GPU_INDEX"), uuid.substr(uuid.rfind('-') + 1)) << name;
    EXPECT_EQ(EnvValue(pod, "WAVEPOOL_MAX_FOREGROUND_SLOWDOWN"), "1.2") << name;
  }
  EXPECT_EQ(hostnames,
            (std::set<std::string>{rank0_host, controller::PodHostname("train", generation, 1)}));
}

TEST(ControllerRendezvous, AGangRestartBringsANewServiceAndRemovesTheOldOne) {
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(1, 4));
  ASSERT_OK(cluster->CreateJob(ForegroundJob("train", 2)).status());
  ASSERT_OK_AND_ASSIGN(api::TrainingJob job, cluster->WaitForJob("train", kRunning));
  const std::int64_t old_generation = job.status.gang_generation;
  ASSERT_THAT(Names(cluster->ServicesOfJob("train")),
              ElementsAre(controller::GangServiceName("train", old_generation)));

  ASSERT_OK(cluster->FailPod("default", job.status.placement[1].pod, 1, "Error"));
  ASSERT_OK_AND_ASSIGN(job, cluster->WaitForJob("train", [&](const api::TrainingJob& j) {
    return j.status.phase == api::JobPhase::kRunning && j.status.gang_generation > old_generation;
  }));
  const std::string new_service = controller::GangServiceName("train", job.status.gang_generation);
  ASSERT_OK(cluster->WaitUntil("only the new gang's Service", [&] {
    return Names(cluster->ServicesOfJob("train")) == std::vector<std::string>{new_service};
  })) << ::testing::PrintToString(Names(cluster->ServicesOfJob("train")));
  for (const nlohmann::json& pod : CurrentGang(*cluster, job)) {
    EXPECT_EQ(pod["spec"]["subdomain"], new_service);
    EXPECT_EQ(
        EnvValue(pod, "WAVEPOOL_STORE"),
        absl::StrCat("tcp://", controller::PodHostname("train", job.status.gang_generation, 0), ".",
                     new_service, ".default.svc:29500"));
  }
}

TEST(ControllerRendezvous, DeletingTheJobLetsGarbageCollectionTakeItsService) {
  ASSERT_OK_AND_ASSIGN(auto cluster, TestCluster::Start(1, 4));
  ASSERT_OK(cluster->CreateJob(ForegroundJob("train", 2)).status());
  ASSERT_OK(cluster->WaitForJob("train", kRunning).status());
  ASSERT_THAT(cluster->ServicesOfJob("train"), SizeIs(1));

  ASSERT_OK(cluster->DeleteJob("train"));
  ASSERT_OK(cluster->WaitUntil("the job's Service and pods gone", [&] {
    return cluster->ServicesOfJob("train").empty() && cluster->OwnedPodCount() == 0;
  })) << ::testing::PrintToString(Names(cluster->ServicesOfJob("train")));
  EXPECT_THAT(cluster->ServicesOfJob("train"), IsEmpty());
}

}  // namespace
}  // namespace wavepool::testing
