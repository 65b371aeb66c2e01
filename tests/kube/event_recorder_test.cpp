#include "wavepool/kube/event_recorder.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

#ifdef WAVEPOOL_TEST_APISERVER
#include "tests/support/apiserver/test_server.h"
#endif

namespace wavepool::kube {
namespace {

using ::testing::HasSubstr;
using testing::IsOk;
using ::testing::MatchesRegex;
using ::testing::StartsWith;

// Holds every request until released, then answers each with `status`: an API server that is
// slow, then failing.
class GatedTransport final : public Transport {
 public:
  explicit GatedTransport(int status) : status_(status) {}
  absl::StatusOr<HttpResponse> Send(const HttpRequest& request) override {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_;
    targets_.push_back(request.method + " " + request.target);
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_; });
    --waiting_;
    return HttpResponse{status_, "application/json",
                        R"({"kind":"Status","apiVersion":"v1","status":"Failure",)"
                        R"("reason":"InternalError","message":"etcd is down","code":500})"};
  }
  absl::StatusOr<std::unique_ptr<LineReader>> Stream(const HttpRequest&) override {
    return absl::UnimplementedError("no watches here");
  }
  void WaitForRequests(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return waiting_ >= n; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  std::vector<std::string> targets() {
    std::lock_guard<std::mutex> lock(mu_);
    return targets_;
  }

 private:
  const int status_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int waiting_ = 0;
  std::vector<std::string> targets_;
};

nlohmann::json Job(const std::string& name) {
  return {{"apiVersion", "wavepool.dev/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", name}, {"namespace", "default"}, {"uid", "uid-" + name}}}};
}

TEST(EventRecorder, NeverBlocksDropsWhenFullAndLogsApiErrors) {
  auto owned = std::make_unique<GatedTransport>(500);
  GatedTransport* transport = owned.get();
  ClientConfig config;
  config.server = "http://unused";
  Client client(config, std::move(owned));
  std::mutex log_mu;
  std::vector<std::string> log;
  EventRecorder::Options options;
  options.queue_capacity = 2;
  options.log = [&](std::string_view line) {
    std::lock_guard<std::mutex> lock(log_mu);
    log.emplace_back(line);
  };
  {
    EventRecorder recorder(client, "wavepool-controller", "node-1", options);
    recorder.Event(Job("a"), EventType::kNormal, "Planned", "first");
    transport->WaitForRequests(1);  // the writer holds "first"; the queue is empty
    recorder.Event(Job("a"), EventType::kNormal, "Planned", "second");
    recorder.Event(Job("a"), EventType::kNormal, "Planned", "third");
    recorder.Event(Job("a"), EventType::kNormal, "Planned", "fourth");  // queue full: dropped
    recorder.Event(nlohmann::json::object(), EventType::kNormal, "Planned", "nameless");
    EXPECT_EQ(recorder.dropped(), 2u);
    transport->Open();
    recorder.Flush();
  }
  EXPECT_EQ(transport->targets().size(), 3u);
  EXPECT_EQ(transport->targets()[0], "POST /api/v1/namespaces/default/events");
  std::lock_guard<std::mutex> lock(log_mu);
  int dropped_lines = 0;
  int failed_lines = 0;
  for (const auto& line : log) {
    dropped_lines += line.find("dropped event Planned") != std::string::npos ? 1 : 0;
    failed_lines += line.find("creating event Planned for default/a failed") != std::string::npos;
  }
  EXPECT_EQ(dropped_lines, 2);
  EXPECT_EQ(failed_lines, 3);
}

#ifdef WAVEPOOL_TEST_APISERVER

using testing::apiserver::TestApiServer;

class EventRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(server_, TestApiServer::Start({}));
    ClientConfig config;
    config.server = server_->url();
    ASSERT_OK_AND_ASSIGN(client_, Client::Connect(config));
    EventRecorder::Options options;
    options.log = [](std::string_view) {};
    recorder_ = std::make_unique<EventRecorder>(*client_, "wavepool-controller", "node-1", options);
  }

  std::vector<nlohmann::json> Events(const std::string& ns) {
    auto list = client_->List(kEvents, ns);
    EXPECT_THAT(list, IsOk());
    return list.ok() ? list->items : std::vector<nlohmann::json>{};
  }

  nlohmann::json MakeConfigMap(const std::string& name) {
    auto created =
        client_->Create(kConfigMaps, {{"apiVersion", "v1"},
                                      {"kind", "ConfigMap"},
                                      {"metadata", {{"name", name}, {"namespace", "default"}}}});
    EXPECT_THAT(created, IsOk());
    return created.ok() ? *created : nlohmann::json();
  }

  std::unique_ptr<TestApiServer> server_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<EventRecorder> recorder_;
};

TEST_F(EventRecorderTest, CreatesAnEventAboutTheObject) {
  const nlohmann::json plan = MakeConfigMap("plan");
  recorder_->Event(plan, EventType::kWarning, "PlanFailed", "spec.gpus: must be >= 1, got 0");
  recorder_->Flush();
  const auto events = Events("default");
  ASSERT_EQ(events.size(), 1u);
  const nlohmann::json& event = events[0];
  EXPECT_THAT(event["metadata"]["name"].get<std::string>(), MatchesRegex("plan\\.[0-9a-f]+"));
  EXPECT_EQ(event["involvedObject"]["kind"], "ConfigMap");
  EXPECT_EQ(event["involvedObject"]["apiVersion"], "v1");
  EXPECT_EQ(event["involvedObject"]["name"], "plan");
  EXPECT_EQ(event["involvedObject"]["namespace"], "default");
  EXPECT_EQ(event["involvedObject"]["uid"], plan["metadata"]["uid"]);
  EXPECT_EQ(event["type"], "Warning");
  EXPECT_EQ(event["reason"], "PlanFailed");
  EXPECT_EQ(event["message"], "spec.gpus: must be >= 1, got 0");
  EXPECT_EQ(event["source"]["component"], "wavepool-controller");
  EXPECT_EQ(event["source"]["host"], "node-1");
  EXPECT_EQ(event["reportingComponent"], "wavepool-controller");
  EXPECT_EQ(event["reportingInstance"], "node-1");
  EXPECT_EQ(event["count"], 1);
  EXPECT_THAT(event["firstTimestamp"].get<std::string>(),
              MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"));
  EXPECT_EQ(event["lastTimestamp"], event["firstTimestamp"]);
}

TEST_F(EventRecorderTest, RepeatsBecomeACountOnOneEvent) {
  const nlohmann::json plan = MakeConfigMap("plan");
  for (int i = 0; i < 3; ++i) recorder_->Event(plan, EventType::kNormal, "Planned", "8 GPUs");
  recorder_->Event(plan, EventType::kNormal, "Planned", "16 GPUs");  // another message
  recorder_->Event(plan, EventType::kWarning, "Planned", "8 GPUs");  // another type
  recorder_->Flush();
  const auto events = Events("default");
  ASSERT_EQ(events.size(), 3u);
  int counted = 0;
  for (const auto& event : events) {
    if (event["type"] == "Normal" && event["message"] == "8 GPUs") {
      EXPECT_EQ(event["count"], 3);
      ++counted;
    } else {
      EXPECT_EQ(event["count"], 1);
    }
  }
  EXPECT_EQ(counted, 1);
}

TEST_F(EventRecorderTest, AnEventDeletedMeanwhileIsCreatedAgain) {
  const nlohmann::json plan = MakeConfigMap("plan");
  recorder_->Event(plan, EventType::kNormal, "Planned", "8 GPUs");
  recorder_->Flush();
  auto events = Events("default");
  ASSERT_EQ(events.size(), 1u);
  ASSERT_THAT(client_->Delete(kEvents, "default", events[0]["metadata"]["name"].get<std::string>()),
              IsOk());
  recorder_->Event(plan, EventType::kNormal, "Planned", "8 GPUs");
  recorder_->Flush();
  events = Events("default");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["count"], 1);
}

TEST_F(EventRecorderTest, ClusterScopedObjectsGetTheirEventsInDefault) {
  ASSERT_OK_AND_ASSIGN(auto ns, client_->Create(kNamespaces, {{"apiVersion", "v1"},
                                                              {"kind", "Namespace"},
                                                              {"metadata", {{"name", "team-a"}}}}));
  recorder_->Event(ns, EventType::kNormal, "Admitted", "quota 8 GPUs");
  recorder_->Flush();
  const auto events = Events("default");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_THAT(events[0]["metadata"]["name"].get<std::string>(), StartsWith("team-a."));
  EXPECT_EQ(events[0]["involvedObject"]["kind"], "Namespace");
  EXPECT_FALSE(events[0]["involvedObject"].contains("namespace"));
}

#endif  // WAVEPOOL_TEST_APISERVER

}  // namespace
}  // namespace wavepool::kube
