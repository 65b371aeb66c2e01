// KubeCluster (controller/kube_cluster.h) against the embedded test API server: its reads come
// from informer caches, its writes reach the server, and the pods it creates count as
// assignments before the watch shows them.
#include "wavepool/controller/kube_cluster.h"

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/controller/api_server_scene.h"
#include "tests/support/cluster/simulated_node_agent.h"
#include "tests/support/eventually.h"
#include "tests/support/simulated_clock.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/kube_resources.h"
#include "wavepool/controller/owned_objects.h"
#include "wavepool/kube/api_error.h"
#include "wavepool/kube/client.h"
#include "wavepool/kube/resource.h"

namespace wavepool::controller {
namespace {

using nlohmann::json;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using ::wavepool::testing::Eventually;
using ::wavepool::testing::IsOk;
using ::wavepool::testing::StatusIs;

// A safety net: informer caches catch up asynchronously.
constexpr std::chrono::seconds kCatchUp(20);

api::Plan TwoGpuPlan(const std::string& job) {
  api::Plan plan;
  plan.job = job;
  plan.model = "mlp_tiny";
  plan.device = "h100";
  plan.gpus = 2;
  plan.global_batch_size = 8;
  api::PlanStage stage;
  stage.layers = {"fc1", "fc2"};
  stage.gpus = 2;
  stage.ranks = {0, 1};
  stage.per_gpu_batch = 4;
  plan.stages.push_back(stage);
  return plan;
}

OwnedObjectOptions ImageOptions() {
  OwnedObjectOptions options;
  options.default_image = "worker:1";
  return options;
}

class KubeClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(scene_, StartApiServerScene());
    client_ = scene_.client.get();
  }

  // A job created on the server, read back as the typed object (uid and all).
  api::TrainingJob CreateJob(const std::string& name) {
    absl::StatusOr<json> created = client_->Create(api::kTrainingJobs, JobManifest(name));
    EXPECT_THAT(created.status(), IsOk());
    absl::StatusOr<api::TrainingJob> job =
        api::TrainingJob::FromJson(created.ok() ? *created : json());
    EXPECT_THAT(job.status(), IsOk());
    return job.ok() ? *job : api::TrainingJob();
  }

  // Rank `rank` of gang 0 of `job` on node-a's GPU `rank`.
  json Pod(const api::TrainingJob& job, std::int64_t rank) {
    const std::string uuid = ::wavepool::testing::SimulatedNodeAgents::GpuUuid("node-a", rank);
    absl::StatusOr<json> pod =
        BuildPod(job, TwoGpuPlan("default/" + job.metadata.name),
                 PodAssignment{rank, "node-a", {uuid}, {rank}}, 0, ImageOptions());
    EXPECT_THAT(pod.status(), IsOk());
    return pod.ok() ? *pod : json();
  }

  std::unique_ptr<KubeCluster> MakeCluster(KubeClusterOptions options = {}) {
    options.log = [](std::string_view) {};
    absl::StatusOr<std::unique_ptr<KubeCluster>> cluster =
        KubeCluster::Create(*client_, std::move(options));
    EXPECT_THAT(cluster.status(), IsOk());
    return cluster.ok() ? *std::move(cluster) : nullptr;
  }

  ApiServerScene scene_;
  kube::Client* client_ = nullptr;  // scene_'s
};

// metadata.name of each pod or Service, in order.
template <typename Object>
std::vector<std::string> PodNames(const std::vector<Object>& objects) {
  std::vector<std::string> names;
  for (const Object& object : objects) names.push_back(object.metadata.name);
  return names;
}

std::vector<std::string> AssignedPods(const std::vector<GpuAssignment>& assignments) {
  std::vector<std::string> pods;
  for (const GpuAssignment& a : assignments) pods.push_back(a.pod);
  return pods;
}

TEST_F(KubeClusterTest, ReadsJobsPodsConfigMapsGpuNodesAndNodesFromTheServer) {
  ASSERT_OK_AND_ASSIGN(SimulatedNodes nodes,
                       StartSimulatedNodes(*client_, {"node-a", "node-b"}, 2));
  // A node without the managed label: ready, but not wavepool's.
  ASSERT_OK(client_
                ->Create(kube::kNodes, json::parse(R"({"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": "plain"}})"))
                .status());
  const api::TrainingJob resnet = CreateJob("resnet");
  const api::TrainingJob other = CreateJob("other");
  ASSERT_OK(client_->Create(kube::kPods, Pod(resnet, 1)).status());
  ASSERT_OK(client_->Create(kube::kPods, Pod(resnet, 0)).status());
  ASSERT_OK(client_
                ->Create(kube::kConfigMaps, json::parse(R"({"apiVersion": "v1",
      "kind": "ConfigMap", "metadata": {"name": "layers", "namespace": "default"},
      "data": {"k": "v"}})"))
                .status());

  std::unique_ptr<KubeCluster> cluster = MakeCluster();
  ASSERT_NE(cluster, nullptr);
  cluster->Start();
  ASSERT_TRUE(cluster->WaitForSync(std::chrono::seconds(20)));
  EXPECT_THAT(cluster->UnsyncedInformers(), IsEmpty());

  std::optional<api::TrainingJob> job = cluster->GetJob("default", "resnet");
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(job->metadata.uid, resnet.metadata.uid);
  EXPECT_EQ(job->spec.gpus, 2);
  EXPECT_FALSE(cluster->GetJob("default", "missing").has_value());
  EXPECT_FALSE(cluster->GetJob("elsewhere", "resnet").has_value());
  std::vector<std::string> job_names;
  for (const api::TrainingJob& j : cluster->ListJobs()) job_names.push_back(j.metadata.name);
  EXPECT_THAT(job_names, ElementsAre("other", "resnet"));

  EXPECT_THAT(PodNames(cluster->PodsOfJob("default", "resnet")),
              ElementsAre("resnet-g0-0", "resnet-g0-1"));
  EXPECT_THAT(cluster->PodsOfJob("default", "other"), IsEmpty());
  // The cached pods keep their typed fields only, not the JSON kept for re-encoding.
  for (const kube::Pod& pod : cluster->PodsOfJob("default", "resnet")) {
    EXPECT_FALSE(pod.metadata.uid.empty());
    EXPECT_FALSE(pod.spec.containers.empty());
    EXPECT_TRUE(pod.raw.is_null());
    EXPECT_TRUE(pod.spec.raw.is_null());
  }
  // The pod informer's store keeps what is read from it (labels, owner, node, phase, uid), not
  // the containers the decoded cache has.
  const std::optional<json> stored = cluster->informers().pods.store().Get("default/resnet-g0-0");
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->at("metadata").at("uid"),
            cluster->PodsOfJob("default", "resnet")[0].metadata.uid);
  EXPECT_EQ(stored->at("metadata").at("labels").at(std::string(kLabelJob)), "resnet");
  EXPECT_EQ(stored->at("spec"), json({{"nodeName", "node-a"}}));

  ASSERT_OK_AND_ASSIGN(std::optional<kube::ConfigMap> cm,
                       cluster->GetConfigMap("default", "layers"));
  ASSERT_TRUE(cm.has_value());
  EXPECT_EQ(cm->data["k"], "v");
  ASSERT_OK_AND_ASSIGN(std::optional<kube::ConfigMap> nope,
                       cluster->GetConfigMap("default", "nope"));
  EXPECT_FALSE(nope.has_value());

  const std::vector<api::GpuNode> gpu_nodes = cluster->ListGpuNodes();
  ASSERT_THAT(gpu_nodes, SizeIs(2));
  EXPECT_EQ(gpu_nodes[0].metadata.name, "node-a");
  EXPECT_THAT(gpu_nodes[0].status.gpus, SizeIs(2));

  const std::map<std::string, NodeState> states = cluster->NodeStates();
  ASSERT_THAT(states, SizeIs(3));
  EXPECT_TRUE(states.at("node-a").ready);
  EXPECT_TRUE(states.at("node-a").managed);
  EXPECT_FALSE(states.at("node-a").heartbeat_fresh);  // the reconciler's verdict, not ours
  EXPECT_FALSE(states.at("plain").managed);
  EXPECT_FALSE(states.at("plain").ready);  // no Ready condition at all
  // The Node informer's store keeps the labels and conditions the states come from.
  const std::optional<json> stored_node = cluster->informers().nodes.store().Get("node-a");
  ASSERT_TRUE(stored_node.has_value());
  EXPECT_EQ(stored_node->at("metadata").at("labels").at("wavepool.dev/managed"), "true");
  ASSERT_EQ(stored_node->at("status").size(), 1u);
  EXPECT_FALSE(stored_node->at("status").at("conditions").empty());

  const std::vector<GpuAssignment> assignments = cluster->Assignments();
  EXPECT_THAT(AssignedPods(assignments), ElementsAre("default/resnet-g0-0", "default/resnet-g0-1"));
  EXPECT_EQ(assignments[1].job, "default/resnet");
  EXPECT_EQ(assignments[1].node, "node-a");
  EXPECT_THAT(assignments[1].gpu_uuids, ElementsAre("GPU-node-a-1"));

  // A node that goes down is seen as not ready.
  ASSERT_OK(nodes.kubelet->NodeDown("node-b"));
  EXPECT_TRUE(Eventually([&] { return !cluster->NodeStates().at("node-b").ready; }, kCatchUp));
}

TEST_F(KubeClusterTest, CreatesListsAndDeletesTheGangsServicesOfAJob) {
  const api::TrainingJob resnet = CreateJob("resnet");
  const api::TrainingJob other = CreateJob("other");
  // A Service that is not the controller's (no managed-by label) is not even cached.
  ASSERT_OK(client_
                ->Create(kube::ResourceType{"", "v1", "Service", "services", true},
                         json::parse(R"({"apiVersion": "v1", "kind": "Service",
      "metadata": {"name": "resnet-g5", "namespace": "default",
                   "labels": {"wavepool.dev/job": "resnet"}},
      "spec": {"clusterIP": "None", "ports": [{"port": 1}]}})"))
                .status());
  std::unique_ptr<KubeCluster> cluster = MakeCluster();
  ASSERT_NE(cluster, nullptr);
  cluster->Start();
  ASSERT_TRUE(cluster->WaitForSync(std::chrono::seconds(20)));
  EXPECT_THAT(cluster->ServicesOfJob("default", "resnet"), IsEmpty());

  for (const std::int64_t generation : {1, 0}) {
    ASSERT_OK_AND_ASSIGN(json service, BuildGangService(resnet, generation));
    ASSERT_OK(cluster->CreateService(service).status());
  }
  ASSERT_OK_AND_ASSIGN(json other_service, BuildGangService(other, 0));
  ASSERT_OK(cluster->CreateService(other_service).status());
  ASSERT_OK_AND_ASSIGN(json again, BuildGangService(resnet, 0));
  EXPECT_THAT(cluster->CreateService(again).status(),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("resnet-g0")));
  ASSERT_TRUE(Eventually(
      [&] {
        return cluster->ServicesOfJob("default", "resnet").size() == 2 &&
               cluster->ServicesOfJob("default", "other").size() == 1;
      },
      kCatchUp));
  EXPECT_THAT(PodNames(cluster->ServicesOfJob("default", "resnet")),
              ElementsAre("resnet-g0", "resnet-g1"));
  EXPECT_THAT(PodNames(cluster->ServicesOfJob("default", "other")), ElementsAre("other-g0"));
  EXPECT_THAT(cluster->ServicesOfJob("elsewhere", "resnet"), IsEmpty());

  const kube::Service stored = cluster->ServicesOfJob("default", "resnet").front();
  EXPECT_EQ(stored.spec.cluster_ip, "None");
  EXPECT_THAT(cluster->DeleteService("default", "resnet-g0", "not-its-uid"),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("")));  // the uid precondition
  ASSERT_OK(cluster->DeleteService("default", "resnet-g0", stored.metadata.uid));
  EXPECT_THAT(cluster->DeleteService("default", "resnet-g0", ""),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("resnet-g0")));
  ASSERT_TRUE(Eventually([&] { return cluster->ServicesOfJob("default", "resnet").size() == 1; },
                         kCatchUp));
  EXPECT_THAT(PodNames(cluster->ServicesOfJob("default", "resnet")), ElementsAre("resnet-g1"));
}

TEST_F(KubeClusterTest, CreatedPodCountsBeforeTheCacheShowsItAndOnlyOnceAfter) {
  const api::TrainingJob job = CreateJob("resnet");
  std::unique_ptr<KubeCluster> cluster = MakeCluster();
  ASSERT_NE(cluster, nullptr);
  // Informers not running yet: the cache cannot have seen the pod.
  ASSERT_OK_AND_ASSIGN(json created, cluster->CreatePod(Pod(job, 0)));
  EXPECT_EQ(created["metadata"]["name"], "resnet-g0-0");
  EXPECT_THAT(AssignedPods(cluster->Assignments()), ElementsAre("default/resnet-g0-0"));
  EXPECT_EQ(cluster->AssumedPods(), 1u);
  EXPECT_THAT(cluster->PodsOfJob("default", "resnet"), IsEmpty());

  cluster->Start();
  ASSERT_TRUE(cluster->WaitForSync(std::chrono::seconds(20)));
  EXPECT_TRUE(Eventually([&] { return cluster->AssumedPods() == 0; }, kCatchUp));
  EXPECT_THAT(AssignedPods(cluster->Assignments()), ElementsAre("default/resnet-g0-0"));

  // A second create of the same pod is the server's AlreadyExists and assumes nothing.
  EXPECT_TRUE(kube::IsAlreadyExists(cluster->CreatePod(Pod(job, 0)).status()));
  EXPECT_EQ(cluster->AssumedPods(), 0u);
}

TEST_F(KubeClusterTest, AssumedPodIsForgottenAfterTheTimeout) {
  const api::TrainingJob job = CreateJob("resnet");
  ::wavepool::testing::SimulatedClock clock;
  KubeClusterOptions options;
  options.clock = &clock;
  options.assume_timeout = std::chrono::seconds(30);
  std::unique_ptr<KubeCluster> cluster = MakeCluster(options);
  ASSERT_NE(cluster, nullptr);
  ASSERT_OK(cluster->CreatePod(Pod(job, 1)).status());
  clock.Advance(std::chrono::seconds(29));
  EXPECT_THAT(cluster->Assignments(), SizeIs(1));
  clock.Advance(std::chrono::seconds(1));  // 30 s: the pod never showed up (informers stopped)
  EXPECT_THAT(cluster->Assignments(), IsEmpty());
  EXPECT_EQ(cluster->AssumedPods(), 0u);
}

TEST_F(KubeClusterTest, TerminalAndDeletedPodsReleaseTheirGpus) {
  const api::TrainingJob job = CreateJob("resnet");
  std::unique_ptr<KubeCluster> cluster = MakeCluster();
  ASSERT_NE(cluster, nullptr);
  cluster->Start();
  ASSERT_TRUE(cluster->WaitForSync(std::chrono::seconds(20)));
  ASSERT_OK_AND_ASSIGN(json pod0, cluster->CreatePod(Pod(job, 0)));
  ASSERT_OK_AND_ASSIGN(json pod1, cluster->CreatePod(Pod(job, 1)));
  EXPECT_THAT(cluster->Assignments(), SizeIs(2));
  EXPECT_TRUE(
      Eventually([&] { return cluster->PodsOfJob("default", "resnet").size() == 2; }, kCatchUp));

  pod0["status"] = {{"phase", "Failed"}};
  ASSERT_OK(client_->UpdateStatus(kube::kPods, pod0).status());
  EXPECT_TRUE(Eventually([&] { return cluster->Assignments().size() == 1; }, kCatchUp));
  EXPECT_THAT(AssignedPods(cluster->Assignments()), ElementsAre("default/resnet-g0-1"));
  // The failed pod is still the job's, so the reconciler sees why its gang broke.
  EXPECT_THAT(cluster->PodsOfJob("default", "resnet"), SizeIs(2));

  // A delete for another incarnation is refused; the right uid deletes it.
  EXPECT_TRUE(kube::IsConflict(cluster->DeletePod("default", "resnet-g0-1", "not-the-uid", 0)));
  ASSERT_OK(
      cluster->DeletePod("default", "resnet-g0-1", pod1["metadata"]["uid"].get<std::string>(), 0));
  EXPECT_TRUE(Eventually([&] { return cluster->Assignments().empty(); }, kCatchUp));
  EXPECT_TRUE(kube::IsNotFound(cluster->DeletePod("default", "resnet-g0-1", "", 0)));
}

TEST_F(KubeClusterTest, WritesAnnotationsConfigMapsStatusAndEvents) {
  const api::TrainingJob job = CreateJob("resnet");
  std::unique_ptr<KubeCluster> cluster = MakeCluster();
  ASSERT_NE(cluster, nullptr);
  cluster->Start();
  ASSERT_TRUE(cluster->WaitForSync(std::chrono::seconds(20)));

  ASSERT_OK(cluster->CreatePod(Pod(job, 0)).status());
  ASSERT_OK(cluster->AnnotatePod("default", "resnet-g0-0",
                                 {{std::string(kAnnotationPreemptedBy), "default/big"}}));
  ASSERT_OK_AND_ASSIGN(json pod, client_->Get(kube::kPods, "default", "resnet-g0-0"));
  EXPECT_EQ(pod["metadata"]["annotations"][std::string(kAnnotationPreemptedBy)], "default/big");
  EXPECT_TRUE(pod["metadata"]["annotations"].contains(std::string(kAnnotationGpuUuids)));

  ASSERT_OK_AND_ASSIGN(json plan_cm, BuildPlanConfigMap(job, TwoGpuPlan("default/resnet")));
  ASSERT_OK_AND_ASSIGN(json created_cm, cluster->CreateConfigMap(plan_cm));
  created_cm["data"]["extra"] = "1";
  ASSERT_OK(cluster->UpdateConfigMap(created_cm).status());
  EXPECT_TRUE(kube::IsConflict(cluster->UpdateConfigMap(created_cm).status()));  // stale now
  EXPECT_TRUE(Eventually(
      [&] {
        absl::StatusOr<std::optional<kube::ConfigMap>> cm =
            cluster->GetConfigMap("default", "resnet-plan");
        return cm.ok() && cm->has_value() && (*cm)->data.count("extra") > 0;
      },
      kCatchUp));

  api::TrainingJob update = job;
  update.status.phase = api::JobPhase::kPlanned;
  ASSERT_OK_AND_ASSIGN(api::TrainingJob written, cluster->UpdateJobStatus(update));
  EXPECT_EQ(written.status.phase, api::JobPhase::kPlanned);
  EXPECT_NE(written.metadata.resource_version, job.metadata.resource_version);
  EXPECT_TRUE(kube::IsConflict(cluster->UpdateJobStatus(update).status()));
  EXPECT_TRUE(Eventually(
      [&] {
        std::optional<api::TrainingJob> cached = cluster->GetJob("default", "resnet");
        return cached.has_value() && cached->status.phase == api::JobPhase::kPlanned;
      },
      kCatchUp));

  cluster->RecordEvent(job, /*warning=*/true, "NotPlaceable", "needs 2 GPUs");
  cluster->FlushEvents();
  kube::ListOptions by_object;
  by_object.field_selector = "involvedObject.name=resnet";
  ASSERT_OK_AND_ASSIGN(kube::ObjectList events, client_->List(kube::kEvents, "default", by_object));
  ASSERT_THAT(events.items, SizeIs(1));
  EXPECT_EQ(events.items[0]["type"], "Warning");
  EXPECT_EQ(events.items[0]["reason"], "NotPlaceable");
  EXPECT_EQ(events.items[0]["involvedObject"]["kind"], "TrainingJob");
  EXPECT_EQ(events.items[0]["involvedObject"]["uid"], job.metadata.uid);
}

// The two reads a placement decision makes of the whole cluster: jobs by phase (a job moves
// between phases as its status changes) and the GPUNodes as one list, the same until one
// changes.
TEST_F(KubeClusterTest, JobsAreVisitedByPhaseAndChangesAndGpuNodesSharedUntilOneChanges) {
  ASSERT_OK_AND_ASSIGN(SimulatedNodes nodes, StartSimulatedNodes(*client_, {"node-a"}, 2));
  const api::TrainingJob first = CreateJob("first");
  const api::TrainingJob second = CreateJob("second");
  CreateJob("third");
  std::unique_ptr<KubeCluster> cluster = MakeCluster();
  ASSERT_NE(cluster, nullptr);
  cluster->Start();
  ASSERT_TRUE(cluster->WaitForSync(std::chrono::seconds(20)));

  const auto in_phase = [&](api::JobPhase phase) {
    std::vector<std::string> names;
    cluster->ForEachJobInPhase(
        phase, [&](const api::TrainingJob& job) { names.push_back(job.metadata.name); });
    return names;
  };
  for (const auto& [job, phase] :
       {std::pair{first, api::JobPhase::kPlaced}, std::pair{second, api::JobPhase::kPlaced}}) {
    api::TrainingJob update = job;
    update.status.phase = phase;
    ASSERT_OK(cluster->UpdateJobStatus(update).status());
  }
  EXPECT_TRUE(Eventually([&] { return in_phase(api::JobPhase::kPlaced).size() == 2; }, kCatchUp));
  EXPECT_THAT(in_phase(api::JobPhase::kPlaced), ElementsAre("first", "second"));
  EXPECT_THAT(in_phase(api::JobPhase::kRunning), IsEmpty());
  std::optional<api::TrainingJob> running = cluster->GetJob("default", "second");
  ASSERT_TRUE(running.has_value());
  running->status.phase = api::JobPhase::kRunning;
  ASSERT_OK(cluster->UpdateJobStatus(*running).status());
  EXPECT_TRUE(Eventually([&] { return in_phase(api::JobPhase::kRunning).size() == 1; }, kCatchUp));
  EXPECT_THAT(in_phase(api::JobPhase::kPlaced), ElementsAre("first")) << "left its old phase";
  EXPECT_THAT(in_phase(api::JobPhase::kRunning), ElementsAre("second"));

  // The job cache's change log: everything since 0, then only what changed.
  const JobChanges all = cluster->JobChangesSince(0);
  EXPECT_FALSE(all.complete);
  EXPECT_THAT(all.changed, SizeIs(3));
  std::optional<api::TrainingJob> placed = cluster->GetJob("default", "first");
  ASSERT_TRUE(placed.has_value());
  placed->status.phase = api::JobPhase::kRunning;
  ASSERT_OK(cluster->UpdateJobStatus(*placed).status());
  EXPECT_TRUE(Eventually([&] { return in_phase(api::JobPhase::kRunning).size() == 2; }, kCatchUp));
  const JobChanges since = cluster->JobChangesSince(all.version);
  ASSERT_THAT(since.changed, SizeIs(1));
  EXPECT_EQ(since.changed[0].first, "default/first");
  ASSERT_NE(since.changed[0].second, nullptr);
  EXPECT_EQ(since.changed[0].second->status.phase, api::JobPhase::kRunning);
  EXPECT_THAT(cluster->JobChangesSince(since.version).changed, IsEmpty());

  const std::shared_ptr<const std::vector<api::GpuNode>> listed = cluster->GpuNodes();
  ASSERT_THAT(*listed, SizeIs(1));
  EXPECT_EQ(cluster->GpuNodes(), listed) << "one shared list while nothing changes";
  std::optional<api::GpuNode> changed = cluster->GetGpuNode(listed->at(0).metadata.name);
  ASSERT_TRUE(changed.has_value());
  changed->status.gpus.at(0).memory_bytes = 12345;
  ASSERT_OK(cluster->UpdateGpuNodeStatus(*changed));
  EXPECT_TRUE(
      Eventually([&] { return cluster->GpuNodes()->at(0).status.gpus.at(0).memory_bytes == 12345; },
                 kCatchUp));
  EXPECT_NE(cluster->GpuNodes(), listed);
  EXPECT_NE(listed->at(0).status.gpus.at(0).memory_bytes, 12345) << "a list handed out stays";
}

TEST_F(KubeClusterTest, HeartbeatsAndTasksMoveOnWithoutChangingThePlacementList) {
  ::wavepool::testing::SimulatedClock agent_clock;
  ::wavepool::testing::SimulatedNodeAgents::Options agent_options;
  agent_options.clock = &agent_clock;
  ASSERT_OK_AND_ASSIGN(SimulatedNodes nodes,
                       StartSimulatedNodes(*client_, {"node-a", "node-b"}, 2, agent_options));
  std::unique_ptr<KubeCluster> cluster = MakeCluster();
  ASSERT_NE(cluster, nullptr);
  cluster->Start();
  ASSERT_TRUE(cluster->WaitForSync(std::chrono::seconds(20)));
  // Every GPUNode's heartbeat time, from the change log's start.
  const auto heartbeats = [&] {
    std::map<std::string, std::string> times;
    for (const auto& [name, time] : cluster->GpuNodeHeartbeatsSince(0).changed) {
      if (time != nullptr) times[name] = *time;
    }
    return times;
  };
  ASSERT_TRUE(Eventually([&] { return heartbeats().size() == 2; }, kCatchUp));

  const std::shared_ptr<const std::vector<api::GpuNode>> listed = cluster->GpuNodes();
  ASSERT_THAT(*listed, SizeIs(2));
  EXPECT_TRUE(listed->at(0).status.heartbeat_time.empty()) << "not a placement read";
  const std::string first_beat = heartbeats().at("node-a");
  const std::uint64_t version = cluster->GpuNodeHeartbeatsSince(0).version;
  EXPECT_FALSE(first_beat.empty());

  // A heartbeat, then a task with progress: both are seen, and the placement list stays.
  agent_clock.Advance(std::chrono::seconds(10));
  ASSERT_OK(nodes.agents->Heartbeat("node-a"));
  ASSERT_TRUE(Eventually([&] { return heartbeats().at("node-a") != first_beat; }, kCatchUp));
  const HeartbeatChanges since = cluster->GpuNodeHeartbeatsSince(version);
  EXPECT_FALSE(since.complete);
  ASSERT_THAT(since.changed, SizeIs(1)) << "only the node that beat";
  EXPECT_EQ(since.changed[0].first, "node-a");
  EXPECT_THAT(cluster->GpuNodeHeartbeatsSince(since.version).changed, IsEmpty());
  api::GpuTask task;
  task.namespace_ = "default";
  task.job = "resnet";
  task.pod = "resnet-g0-0";
  task.pid = 4242;
  task.progress = api::TrainingProgress{};
  task.progress->step = 7;
  ASSERT_OK(nodes.agents->SetTasks("node-a", 1, {task}));
  ASSERT_TRUE(Eventually(
      [&] { return cluster->GpuNodesWithTasksOf("default", "resnet").size() == 1; }, kCatchUp));
  const std::vector<api::GpuNode> running = cluster->GpuNodesWithTasksOf("default", "resnet");
  EXPECT_EQ(running.at(0).metadata.name, "node-a");
  ASSERT_THAT(running.at(0).status.gpus.at(1).tasks, SizeIs(1));
  EXPECT_EQ(running.at(0).status.gpus.at(1).tasks.at(0).progress->step, 7);
  EXPECT_THAT(cluster->GpuNodesWithTasksOf("default", "other"), IsEmpty());
  EXPECT_THAT(cluster->GpuNodesWithTasksOf("other", "resnet"), IsEmpty());
  EXPECT_EQ(cluster->GpuNodes(), listed) << "neither changes what placement reads";

  // GetGpuNode is the whole object, for writes.
  std::optional<api::GpuNode> whole = cluster->GetGpuNode("node-a");
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->status.heartbeat_time, heartbeats().at("node-a"));
  EXPECT_THAT(whole->status.gpus.at(1).tasks, SizeIs(1));
  EXPECT_FALSE(cluster->GetGpuNode("node-c").has_value());

  // The task gone: the job's index entry goes with it.
  ASSERT_OK(nodes.agents->SetTasks("node-a", 1, {}));
  EXPECT_TRUE(Eventually([&] { return cluster->GpuNodesWithTasksOf("default", "resnet").empty(); },
                         kCatchUp));

  // A GPU's memory is what placement reads: a new list.
  ASSERT_OK(
      nodes.agents->UpdateGpu("node-b", 0, [](api::GpuStatus& gpu) { gpu.memory_bytes /= 2; }));
  EXPECT_TRUE(Eventually([&] { return cluster->GpuNodes() != listed; }, kCatchUp));
}

TEST_F(KubeClusterTest, MistypedPodAndConfigMapAreNamedWithTheFieldAndNeverCrashAReader) {
  const api::TrainingJob job = CreateJob("resnet");
  json mistyped = Pod(job, 1);
  mistyped["spec"]["nodeName"] = 42;  // a field of the wrong type, as no API server sends it
  ASSERT_OK(client_->Create(kube::kPods, Pod(job, 0)).status());
  ASSERT_OK(client_->Create(kube::kPods, mistyped).status());
  ASSERT_OK(client_
                ->Create(kube::kConfigMaps, json::parse(R"({"apiVersion": "v1",
      "kind": "ConfigMap", "metadata": {"name": "layers", "namespace": "default"},
      "data": {"k": ["not", "text"]}})"))
                .status());
  absl::Mutex mu;
  std::vector<std::string> logged;
  KubeClusterOptions options;
  options.log = [&](std::string_view line) {
    absl::MutexLock lock(&mu);
    logged.emplace_back(line);
  };
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<KubeCluster> cluster,
                       KubeCluster::Create(*client_, std::move(options)));
  cluster->Start();
  ASSERT_TRUE(cluster->WaitForSync(std::chrono::seconds(20)));

  EXPECT_THAT(PodNames(cluster->PodsOfJob("default", "resnet")), ElementsAre("resnet-g0-0"));
  EXPECT_THAT(cluster->GetConfigMap("default", "layers").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ConfigMap default/layers: data[k]: must be a string")));
  // The mistyped pod holds no GPU we can count; both the pod event and the read say why.
  EXPECT_THAT(AssignedPods(cluster->Assignments()), ElementsAre("default/resnet-g0-0"));
  absl::MutexLock lock(&mu);
  EXPECT_THAT(logged, Contains(AllOf(HasSubstr("Pod default/resnet-g0-1 ignored"),
                                     HasSubstr("spec.nodeName: must be a string, got number"))));
  EXPECT_THAT(logged, Contains(AllOf(HasSubstr("pod default/resnet-g0-1 holds no GPUs"),
                                     HasSubstr("spec.nodeName"))));
}

TEST_F(KubeClusterTest, WatchNamespaceLimitsJobsPodsAndConfigMaps) {
  ASSERT_OK(client_
                ->Create(kube::kNamespaces, json::parse(R"({"apiVersion": "v1",
                    "kind": "Namespace", "metadata": {"name": "team-a"}})"))
                .status());
  json other = JobManifest("theirs");
  other["metadata"]["namespace"] = "team-a";
  ASSERT_OK(client_->Create(api::kTrainingJobs, other).status());
  CreateJob("ours");
  KubeClusterOptions options;
  options.watch_namespace = "team-a";
  std::unique_ptr<KubeCluster> cluster = MakeCluster(options);
  ASSERT_NE(cluster, nullptr);
  cluster->Start();
  ASSERT_TRUE(cluster->WaitForSync(std::chrono::seconds(20)));
  EXPECT_TRUE(cluster->GetJob("team-a", "theirs").has_value());
  EXPECT_FALSE(cluster->GetJob("default", "ours").has_value());
  EXPECT_THAT(cluster->ListJobs(), SizeIs(1));
}

TEST_F(KubeClusterTest, BadOptionsAreRefusedNamingTheOption) {
  KubeClusterOptions options;
  options.assume_timeout = std::chrono::seconds(-1);
  EXPECT_THAT(KubeCluster::Create(*client_, options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("assume_timeout")));
  options = {};
  options.informer_initial_backoff = std::chrono::nanoseconds(0);
  EXPECT_THAT(KubeCluster::Create(*client_, options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("informer_initial_backoff")));
}

TEST(NodeStateFromNode, ReadyConditionAndManagedLabel) {
  EXPECT_FALSE(NodeStateFromNode(json::object()).ready);
  const NodeState state = NodeStateFromNode(json::parse(R"({
      "metadata": {"name": "n", "labels": {"wavepool.dev/managed": "true"}},
      "status": {"conditions": [{"type": "MemoryPressure", "status": "True"},
                                {"type": "Ready", "status": "True"}]}})"));
  EXPECT_TRUE(state.ready);
  EXPECT_TRUE(state.managed);
  const NodeState unknown = NodeStateFromNode(json::parse(R"({
      "metadata": {"name": "n", "labels": {"wavepool.dev/managed": "false"}},
      "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}})"));
  EXPECT_FALSE(unknown.ready);
  EXPECT_FALSE(unknown.managed);
}

}  // namespace
}  // namespace wavepool::controller
