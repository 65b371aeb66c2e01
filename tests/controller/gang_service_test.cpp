// How a gang's pods find each other on Kubernetes: the headless Service of each gang, the pods'
// hostname and subdomain, and the rendezvous env (controller/owned_objects.h).
#include <cctype>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"
#include "wavepool/controller/owned_objects.h"

namespace wavepool::controller {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::wavepool::testing::StatusIs;

api::TrainingJob MakeJob(const std::string& name, api::Role role = api::Role::kForeground) {
  api::TrainingJob job;
  job.metadata.name = name;
  job.metadata.namespace_ = "team-a";
  job.metadata.uid = "11111111-2222-3333-4444-555555555555";
  job.spec.role = role;
  job.spec.gpus = role == api::Role::kForeground ? 4 : 1;
  job.spec.pod_template = json::parse(R"({
    "metadata": {"labels": {"wavepool.dev/gang-generation": "99", "team": "a"}},
    "spec": {"hostname": "mine", "subdomain": "theirs",
             "containers": [{"name": "worker", "image": "registry/wavepool-worker:1.0",
                             "env": [{"name": "USER_VAR", "value": "u"},
                                     {"name": "WAVEPOOL_STORE", "value": "tcp://elsewhere:1"}]}]}
  })");
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

json Pod(const api::TrainingJob& job, std::int64_t rank, std::int64_t generation) {
  absl::StatusOr<json> pod = BuildPod(job, MakePlan(job.spec.gpus.value_or(1)),
                                      PodAssignment{rank, "node-a", {"GPU-a", "GPU-b"}, {5, 6}},
                                      generation, OwnedObjectOptions());
  EXPECT_TRUE(pod.ok()) << pod.status();
  return pod.ok() ? *pod : json();
}

const json& Worker(const json& pod) { return pod["spec"]["containers"][0]; }

// The env entry `name` of the worker, or null; fails on a duplicate.
json EnvEntry(const json& pod, const std::string& name) {
  json found;
  int count = 0;
  for (const json& e : Worker(pod)["env"]) {
    if (e["name"] == name) {
      found = e;
      ++count;
    }
  }
  EXPECT_LE(count, 1) << name;
  return found;
}

std::string Env(const json& pod, const std::string& name) {
  const json entry = EnvEntry(pod, name);
  return entry.is_object() ? entry.value("value", "<valueFrom>") : "<absent>";
}

// RFC 1123 label: at most 63 of [a-z0-9-], starting and ending with a letter or digit. With
// `letter_first`, RFC 1035 (Service names): starting with a letter.
bool IsDnsLabel(const std::string& s, bool letter_first) {
  if (s.empty() || s.size() > 63) return false;
  for (const char c : s) {
    if (!std::islower(static_cast<unsigned char>(c)) &&
        !std::isdigit(static_cast<unsigned char>(c)) && c != '-') {
      return false;
    }
  }
  if (s.front() == '-' || s.back() == '-') return false;
  return !letter_first || std::islower(static_cast<unsigned char>(s.front()));
}

TEST(GangNames, ShortNamesAreTheJobAndGenerationAndHostnamesArePodNames) {
  EXPECT_EQ(GangServiceName("resnet", 3), "resnet-g3");
  EXPECT_EQ(PodHostname("resnet", 3, 1), "resnet-g3-1");
  EXPECT_EQ(PodHostname("resnet", 3, 1), PodName("resnet", 3, 1));
  EXPECT_NE(GangServiceName("resnet", 3), GangServiceName("resnet", 4));  // One per gang.
  EXPECT_EQ(RendezvousStore(MakeJob("resnet"), 3), "tcp://resnet-g3-0.resnet-g3.team-a.svc:29500");
}

TEST(GangNames, LongJobNamesGiveDnsLabelsUniqueWithinTheGang) {
  const std::string long_a(250, 'a');
  const std::string long_b = std::string(249, 'a') + "b";
  const std::string service = GangServiceName(long_a, 12);
  EXPECT_TRUE(IsDnsLabel(service, /*letter_first=*/true)) << service;
  EXPECT_THAT(service, ::testing::EndsWith("-g12"));
  EXPECT_NE(service, GangServiceName(long_b, 12));  // Same prefix, other hash.
  std::set<std::string> hostnames;
  for (std::int64_t rank = 0; rank < 128; ++rank) {
    const std::string hostname = PodHostname(long_a, 12, rank);
    EXPECT_TRUE(IsDnsLabel(hostname, /*letter_first=*/false)) << hostname;
    EXPECT_EQ(hostname, PodName(long_a, 12, rank));
    hostnames.insert(hostname);
  }
  EXPECT_EQ(hostnames.size(), 128u);
  // The store's host name: hostname.service.namespace.svc, each part a label.
  const std::string store = RendezvousStore(MakeJob(long_a), 12);
  EXPECT_THAT(store, StartsWith("tcp://" + PodHostname(long_a, 12, 0) + "." + service +
                                ".team-a.svc:29500"));
}

TEST(GangNames, DottedAndDigitLeadingJobNamesAreMappedToDistinctLabels) {
  // Pod names may hold dots (DNS subdomains); hostnames and Service names may not.
  EXPECT_EQ(PodName("bert.large", 0, 1), "bert.large-g0-1");
  const std::string hostname = PodHostname("bert.large", 0, 1);
  EXPECT_TRUE(IsDnsLabel(hostname, false)) << hostname;
  EXPECT_THAT(hostname, StartsWith("bert-large-"));
  EXPECT_THAT(hostname, ::testing::EndsWith("-g0-1"));
  // "bert.large" and "bert-large" are two jobs: they must not share a name.
  EXPECT_NE(hostname, PodHostname("bert-large", 0, 1));
  EXPECT_NE(GangServiceName("bert.large", 0), GangServiceName("bert-large", 0));
  EXPECT_EQ(GangServiceName("bert-large", 0), "bert-large-g0");
  // Service names start with a letter; hostnames may start with a digit.
  const std::string service = GangServiceName("3d-unet", 2);
  EXPECT_TRUE(IsDnsLabel(service, /*letter_first=*/true)) << service;
  EXPECT_EQ(PodHostname("3d-unet", 2, 0), "3d-unet-g2-0");
  // Long and dotted at once.
  const std::string dotted = std::string(40, 'x') + "." + std::string(40, 'y');
  std::set<std::string> hostnames;
  for (std::int64_t rank = 0; rank < 16; ++rank) {
    const std::string h = PodHostname(dotted, 7, rank);
    EXPECT_TRUE(IsDnsLabel(h, false)) << h;
    hostnames.insert(h);
  }
  EXPECT_EQ(hostnames.size(), 16u);
  EXPECT_TRUE(IsDnsLabel(GangServiceName(dotted, 7), true));
}

TEST(GangService, IsHeadlessPublishesNotReadyPodsAndServesTheRendezvousPort) {
  ASSERT_OK_AND_ASSIGN(const json service, BuildGangService(MakeJob("resnet"), 3));
  EXPECT_EQ(service["apiVersion"], "v1");
  EXPECT_EQ(service["kind"], "Service");
  EXPECT_EQ(service["metadata"]["name"], "resnet-g3");
  EXPECT_EQ(service["metadata"]["namespace"], "team-a");
  EXPECT_EQ(service["spec"]["clusterIP"], "None");
  EXPECT_EQ(service["spec"]["publishNotReadyAddresses"], true);
  ASSERT_EQ(service["spec"]["ports"].size(), 1u);
  const json& port = service["spec"]["ports"][0];
  EXPECT_EQ(port["name"], "rendezvous");
  EXPECT_EQ(port["port"], 29500);
  EXPECT_EQ(port["targetPort"], 29500);
  EXPECT_EQ(port["protocol"], "TCP");
}

TEST(GangService, IsOwnedByTheJobAsControllerAndLabelledWithItsGeneration) {
  ASSERT_OK_AND_ASSIGN(const json service, BuildGangService(MakeJob("resnet"), 3));
  const json& owners = service["metadata"]["ownerReferences"];
  ASSERT_EQ(owners.size(), 1u);
  EXPECT_EQ(owners[0]["apiVersion"], "wavepool.dev/v1alpha1");
  EXPECT_EQ(owners[0]["kind"], "TrainingJob");
  EXPECT_EQ(owners[0]["name"], "resnet");
  EXPECT_EQ(owners[0]["uid"], "11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(owners[0]["controller"], true);
  EXPECT_EQ(owners[0]["blockOwnerDeletion"], true);
  const json& labels = service["metadata"]["labels"];
  for (const auto& [key, value] : JobSelector("resnet")) EXPECT_EQ(labels[key], value) << key;
  EXPECT_EQ(labels["wavepool.dev/gang-generation"], "3");
  EXPECT_EQ(service["metadata"]["annotations"]["wavepool.dev/job-name"], "resnet");
}

// Whether `selector` selects an object with `labels` (equality-based, as a Service selects).
bool Selects(const json& selector, const json& labels) {
  for (const auto& [key, value] : selector.items()) {
    if (!labels.contains(key) || labels[key] != value) return false;
  }
  return true;
}

TEST(GangService, SelectsEveryPodOfItsGangAndNoPodOfAnotherGang) {
  const api::TrainingJob job = MakeJob("resnet");
  ASSERT_OK_AND_ASSIGN(const json service, BuildGangService(job, 3));
  const json& selector = service["spec"]["selector"];
  EXPECT_EQ(selector.size(), GangSelector("resnet", 3).size());
  for (std::int64_t rank = 0; rank < 4; ++rank) {
    // The template's own gang-generation label ("99") loses to ours.
    EXPECT_TRUE(Selects(selector, Pod(job, rank, 3)["metadata"]["labels"])) << rank;
    EXPECT_FALSE(Selects(selector, Pod(job, rank, 4)["metadata"]["labels"])) << rank;
  }
  EXPECT_FALSE(Selects(selector, Pod(MakeJob("other"), 0, 3)["metadata"]["labels"]));
}

TEST(GangService, RejectsJobsWithoutIdentityAndNegativeGenerations) {
  api::TrainingJob job = MakeJob("resnet");
  job.metadata.uid.clear();
  EXPECT_THAT(BuildGangService(job, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("metadata.uid")));
  EXPECT_THAT(BuildGangService(MakeJob("resnet"), -1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("gangGeneration")));
}

TEST(PodRendezvous, HostnameAndSubdomainNameThePodWithinItsGangsService) {
  const api::TrainingJob job = MakeJob("resnet");
  for (std::int64_t rank = 0; rank < 4; ++rank) {
    const json pod = Pod(job, rank, 3);
    // Ours replace the template's "mine" and "theirs".
    EXPECT_EQ(pod["spec"]["hostname"], PodHostname("resnet", 3, rank));
    EXPECT_EQ(pod["spec"]["subdomain"], GangServiceName("resnet", 3));
  }
  // Every rank points at rank 0's pod: its hostname under its subdomain.
  const json rank0 = Pod(job, 0, 3);
  const std::string host = absl::StrCat(rank0["spec"]["hostname"].get<std::string>(), ".",
                                        rank0["spec"]["subdomain"].get<std::string>(), ".",
                                        rank0["metadata"]["namespace"].get<std::string>(), ".svc");
  for (std::int64_t rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(Env(Pod(job, rank, 3), "WAVEPOOL_STORE"), "tcp://" + host + ":29500");
  }
}

TEST(PodRendezvous, LongJobNamesGiveEveryPodOfTheGangItsOwnHostname) {
  const api::TrainingJob job = MakeJob(std::string(200, 'z') + ".a");
  std::set<std::string> hostnames;
  for (std::int64_t rank = 0; rank < 4; ++rank) {
    const json pod = Pod(job, rank, 0);
    const std::string hostname = pod["spec"]["hostname"].get<std::string>();
    EXPECT_TRUE(IsDnsLabel(hostname, false)) << hostname;
    EXPECT_TRUE(IsDnsLabel(pod["spec"]["subdomain"].get<std::string>(), true));
    hostnames.insert(hostname);
  }
  EXPECT_EQ(hostnames.size(), 4u);
}

TEST(PodRendezvous, WorkerGetsPodNameGpuIndexAndTheSlowdownSlo) {
  api::TrainingJob job = MakeJob("resnet");
  json pod = Pod(job, 1, 3);
  const json pod_name = EnvEntry(pod, "WAVEPOOL_POD_NAME");
  ASSERT_TRUE(pod_name.is_object());
  EXPECT_FALSE(pod_name.contains("value"));
  EXPECT_EQ(pod_name["valueFrom"]["fieldRef"]["fieldPath"], "metadata.name");
  EXPECT_EQ(pod_name["valueFrom"]["fieldRef"]["apiVersion"], "v1");
  EXPECT_EQ(Env(pod, "WAVEPOOL_GPU_INDEX"), "5");  // The first GPU's node-local index.
  EXPECT_EQ(Env(pod, "WAVEPOOL_MAX_FOREGROUND_SLOWDOWN"), "1.1");  // The default SLO.
  job.spec.collocation.max_foreground_slowdown = 1.25;
  EXPECT_EQ(Env(Pod(job, 1, 3), "WAVEPOOL_MAX_FOREGROUND_SLOWDOWN"), "1.25");
  // A background pod has no SLO of its own.
  const json background = Pod(MakeJob("bg", api::Role::kBackground), 0, 0);
  EXPECT_EQ(Env(background, "WAVEPOOL_MAX_FOREGROUND_SLOWDOWN"), "<absent>");
  EXPECT_EQ(Env(background, "WAVEPOOL_STORE"), "tcp://bg-g0-0.bg-g0.team-a.svc:29500");
}

TEST(PodRendezvous, OursComeFirstAndWinOverTheTemplatesEnv) {
  const json pod = Pod(MakeJob("resnet"), 2, 3);
  EXPECT_EQ(Env(pod, "WAVEPOOL_STORE"), "tcp://resnet-g3-0.resnet-g3.team-a.svc:29500");
  const json& env = Worker(pod)["env"];
  ASSERT_FALSE(env.empty());
  EXPECT_EQ(env.back()["name"], "USER_VAR");  // The user's variables follow ours.
  for (std::size_t i = 0; i + 1 < env.size(); ++i) {
    EXPECT_NE(env[i]["name"], "USER_VAR") << i;
  }
}

}  // namespace
}  // namespace wavepool::controller
