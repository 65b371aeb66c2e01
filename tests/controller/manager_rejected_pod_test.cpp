// A pod the API server refuses as invalid, end to end: ControllerManager over real HTTP against the
// embedded test API server, with kube-apiserver's downward API field rule applied to pod creations
// in front of it (the test API server checks a pod's metadata only). The job must fail for its
// generation with Invalid, give its GPU back, never try the pod again, and run once its spec is
// fixed.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/controller/api_server_scene.h"
#include "tests/controller/pod_validation.h"
#include "tests/support/eventually.h"
#include "tests/support/status_matchers.h"
#include "wavepool/api/kube_resources.h"
#include "wavepool/controller/manager.h"
#include "wavepool/kube/client.h"
#include "wavepool/kube/http_transport.h"
#include "wavepool/kube/resource.h"

namespace wavepool::controller {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::wavepool::testing::Eventually;

// Whether `target` ("/api/v1/namespaces/ns/pods?fieldManager=x") is the pods collection of a
// namespace: where a pod is created.
bool IsPodCollection(std::string_view target) {
  const std::string_view path = target.substr(0, target.find('?'));
  constexpr std::string_view kPrefix = "/api/v1/namespaces/";
  constexpr std::string_view kSuffix = "/pods";
  if (path.size() <= kPrefix.size() + kSuffix.size() || path.substr(0, kPrefix.size()) != kPrefix ||
      path.substr(path.size() - kSuffix.size()) != kSuffix) {
    return false;
  }
  const std::string_view ns =
      path.substr(kPrefix.size(), path.size() - kPrefix.size() - kSuffix.size());
  return ns.find('/') == std::string_view::npos;
}

// Passes every request on to `next`, except a pod creation that EnvFieldPathError refuses: that one
// gets kube-apiserver's 422 answer and never reaches the server. Safe for concurrent use, as
// `next` is.
class PodValidatingTransport : public kube::Transport {
 public:
  explicit PodValidatingTransport(std::unique_ptr<kube::Transport> next) : next_(std::move(next)) {}

  absl::StatusOr<kube::HttpResponse> Send(const kube::HttpRequest& request) override {
    if (request.method == "POST" && IsPodCollection(request.target)) {
      const json pod = json::parse(request.body, nullptr, /*allow_exceptions=*/false);
      if (pod.is_object()) {
        if (std::optional<PodFieldError> error = EnvFieldPathError(pod)) {
          refused_.fetch_add(1);
          const std::string name = pod.value("/metadata/name"_json_pointer, "");
          return kube::HttpResponse{422, "application/json", InvalidPodStatus(name, *error).dump()};
        }
      }
    }
    return next_->Send(request);
  }

  absl::StatusOr<std::unique_ptr<kube::LineReader>> Stream(
      const kube::HttpRequest& request) override {
    return next_->Stream(request);
  }

  int refused() const { return refused_.load(); }

 private:
  const std::unique_ptr<kube::Transport> next_;
  std::atomic<int> refused_{0};
};

class ManagerRejectedPodTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::wavepool::testing::apiserver::TestApiServer::Options server_options;
    server_options.store.finish_pod_deletion_after_grace = false;  // the kubelet confirms
    kube::ClientConfig config;
    config.timeout = std::chrono::seconds(5);
    ASSERT_OK_AND_ASSIGN(scene_, StartApiServerScene(server_options, config));
    config.server = scene_.server->url();
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<kube::Transport> http, kube::NewHttpTransport(config));
    auto validating = std::make_unique<PodValidatingTransport>(std::move(http));
    transport_ = validating.get();
    controller_client_ = std::make_unique<kube::Client>(config, std::move(validating));
  }

  std::unique_ptr<ControllerManager> StartManager() {
    return StartTestManager(*controller_client_, TestManagerOptions());
  }

  // JobManifest(name) on one GPU, its worker container given the env var NODE from the pod field
  // `field_path` (the downward API).
  static json OneGpuJob(const std::string& name, const std::string& field_path) {
    json job = JobManifest(name);
    job["spec"]["gpus"] = 1;
    const json node = {{"name", "NODE"},
                       {"valueFrom", {{"fieldRef", {{"fieldPath", field_path}}}}}};
    job["spec"]["template"] = {
        {"spec",
         {{"containers", json::array({{{"name", "worker"}, {"env", json::array({node})}}})}}}};
    return job;
  }

  json Job(const std::string& name) const {
    absl::StatusOr<json> job = scene_.client->Get(api::kTrainingJobs, "default", name);
    return job.ok() ? *job : json::object();
  }

  // The job's condition of `type`; {} when absent.
  json Condition(const std::string& name, std::string_view type) const {
    for (const json& c : Job(name).value("/status/conditions"_json_pointer, json::array())) {
      if (c.value("type", "") == type) return c;
    }
    return json::object();
  }

  // Names of the job's pods on the server, in its order.
  std::vector<std::string> PodsOf(const std::string& name) const {
    kube::ListOptions selector;
    selector.label_selector = "wavepool.dev/job=" + name;
    absl::StatusOr<kube::ObjectList> pods = scene_.client->List(kube::kPods, "default", selector);
    std::vector<std::string> names;
    if (!pods.ok()) return {"(list failed)"};
    for (const json& pod : pods->items) {
      names.push_back(pod.value("/metadata/name"_json_pointer, ""));
    }
    return names;
  }

  ApiServerScene scene_;
  std::unique_ptr<kube::Client> controller_client_;
  PodValidatingTransport* transport_ = nullptr;  // controller_client_'s
};

TEST_F(ManagerRejectedPodTest, FailsInvalidForItsGenerationFreesItsGpuAndRunsOnceFixed) {
  ASSERT_OK_AND_ASSIGN(SimulatedNodes nodes, StartSimulatedNodes(*scene_.client, {"node-a"}, 1));
  std::unique_ptr<ControllerManager> manager = StartManager();
  ASSERT_NE(manager, nullptr);
  ASSERT_OK(scene_.client->Create(api::kTrainingJobs, OneGpuJob("typo", "spec.nodeNmae")).status());

  ASSERT_TRUE(Eventually([&] {
    return Job("typo").value("/status/phase"_json_pointer, "") == "Failed";
  })) << Job("typo").dump();
  const json invalid = Condition("typo", "Invalid");
  EXPECT_EQ(invalid.value("status", ""), "True");
  EXPECT_EQ(invalid.value("reason", ""), "PodRejected");
  EXPECT_THAT(invalid.value("message", ""), HasSubstr("default/typo-g0-0"));
  EXPECT_THAT(invalid.value("message", ""), HasSubstr("spec.nodeNmae"));
  EXPECT_EQ(Condition("typo", "Placed").value("status", ""), "False");
  EXPECT_THAT(Job("typo").value("/status/placement"_json_pointer, json::array()), IsEmpty());
  EXPECT_THAT(PodsOf("typo"), IsEmpty());

  // Its one GPU is free: another job gets it and runs.
  ASSERT_OK(
      scene_.client->Create(api::kTrainingJobs, OneGpuJob("honest", "spec.nodeName")).status());
  EXPECT_TRUE(Eventually([&] {
    return Job("honest").value("/status/phase"_json_pointer, "") == "Running";
  })) << Job("honest").dump();

  // Resyncs and the other job's events bring the job back to the workers: it stays failed, and
  // its pod is never tried again.
  ASSERT_TRUE(manager->WaitForIdle(std::chrono::seconds(10)));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ASSERT_TRUE(manager->WaitForIdle(std::chrono::seconds(10)));
  EXPECT_EQ(transport_->refused(), 1);
  EXPECT_EQ(Job("typo").value("/status/phase"_json_pointer, ""), "Failed");
  EXPECT_EQ(Condition("typo", "Invalid").value("reason", ""), "PodRejected");

  // Fixed (a new generation) once the GPU is free again: placed and running under a new gang.
  ASSERT_OK(scene_.client->Delete(api::kTrainingJobs, "default", "honest"));
  json fix = {{"spec", {{"template", OneGpuJob("typo", "spec.nodeName")["spec"]["template"]}}}};
  ASSERT_OK(
      scene_.client->Patch(api::kTrainingJobs, "default", "typo", kube::PatchType::kMerge, fix)
          .status());
  EXPECT_TRUE(Eventually([&] {
    return Job("typo").value("/status/phase"_json_pointer, "") == "Running";
  })) << Job("typo").dump();
  EXPECT_EQ(Condition("typo", "Invalid").value("status", ""), "False");
  EXPECT_THAT(PodsOf("typo"), ElementsAre("typo-g1-0"));
  EXPECT_EQ(transport_->refused(), 1);
}

}  // namespace
}  // namespace wavepool::controller
