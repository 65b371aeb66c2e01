// The socket server asks who a registering peer is (SessionHandler::IdentifyPeer) off its event
// loop: an identity source that takes its time (an API server listing pods) delays only the
// connection it is asked about. Other sessions keep reporting and receiving, other workers keep
// registering, and the waiting connection still ends cleanly at its register deadline or when its
// worker goes away, its late answer dropped.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/socket_test_util.h"
#include "tests/support/status_matchers.h"
#include "wavepool/agent/socket_server.h"

namespace wavepool::agent {
namespace {

using ::testing::HasSubstr;
using ::wavepool::agent::testing::RawClient;
using ::wavepool::agent::testing::RecordingHandler;
using ::wavepool::agent::testing::WaitUntil;

constexpr char kSlowPod[] = "slow-0";

// A RecordingHandler whose IdentifyPeer, for a Register of pod kSlowPod, waits until the test
// lets it answer, as an identity source waiting for a slow API server does. Others answer at once.
class SlowIdentityHandler : public RecordingHandler {
 public:
  absl::StatusOr<std::optional<WorkerIdentity>> IdentifyPeer(
      const PeerCredentials& peer, const RegisterRequest& request) override {
    if (request.pod == kSlowPod) {
      std::unique_lock<std::mutex> lock(slow_mu_);
      ++slow_waiting_;
      slow_changed_.notify_all();
      // Bounded, so that a broken server fails the test instead of hanging it.
      slow_changed_.wait_for(lock, std::chrono::seconds(60), [&] { return answer_; });
      --slow_waiting_;
      ++slow_answered_;
      slow_changed_.notify_all();
    }
    return RecordingHandler::IdentifyPeer(peer, request);
  }

  // Lets every slow identification answer, now and later.
  void Answer() {
    std::lock_guard<std::mutex> lock(slow_mu_);
    answer_ = true;
    slow_changed_.notify_all();
  }
  // Waits (20 s at most) until `n` slow identifications wait, or have answered.
  bool WaitForWaiting(int n) {
    return WaitFor([&] { return slow_waiting_ == n; });
  }
  bool WaitForAnswered(int n) {
    return WaitFor([&] { return slow_answered_ == n; });
  }

 private:
  template <typename Predicate>
  bool WaitFor(Predicate done) {
    std::unique_lock<std::mutex> lock(slow_mu_);
    return slow_changed_.wait_for(lock, std::chrono::seconds(20), done);
  }

  std::mutex slow_mu_;
  std::condition_variable slow_changed_;
  bool answer_ = false;
  int slow_waiting_ = 0;
  int slow_answered_ = 0;
};

class RegisterIdentityTest : public testing::SocketServerFixture<SlowIdentityHandler> {
 protected:
  void TearDown() override {
    handler_.Answer();  // so that Stop, which waits for the identifications, returns
    server_.reset();
  }

  // A client that registered as `pod` and read its Registered.
  std::unique_ptr<RawClient> RegisteredClient(const std::string& pod = "resnet-0") {
    RegisterRequest request = RawClient::TypicalRequest(Role::kForeground);
    request.pod = pod;
    return SocketServerFixture::RegisteredClient(request);
  }

  // A client whose Register waits for its identity (asserted).
  std::unique_ptr<RawClient> WaitingClient() {
    auto client = std::make_unique<RawClient>(options_.path);
    RegisterRequest request = RawClient::TypicalRequest(Role::kBackground);
    request.pod = kSlowPod;
    EXPECT_TRUE(client->Send(request));
    EXPECT_TRUE(handler_.WaitForWaiting(1));
    return client;
  }
};

TEST_F(RegisterIdentityTest, AWorkerWaitingForItsIdentityHoldsUpNoOtherSession) {
  StartServer();
  auto serving = RegisteredClient();
  const SessionId session = handler_.last_session();
  auto waiting = WaitingClient();

  // Meanwhile the registered worker's reports are handled, the agent's policies reach it, and
  // another worker registers (on the second identity thread).
  ReportOps ops;
  ops.groups.push_back({7, OpKind::kCompute, 1000});
  ASSERT_TRUE(serving->Send(ops));
  ASSERT_TRUE(WaitUntil([&] { return handler_.op_count(session) == 1; }));
  ASSERT_OK(server_->Send(session, Policy{1, StreamPriority::kHigh, 0, "pause"}));
  ASSERT_OK_AND_ASSIGN(Frame policy, serving->Receive());
  EXPECT_TRUE(std::holds_alternative<Policy>(policy.message));
  auto another = RegisteredClient("resnet-1");
  EXPECT_EQ(handler_.registration_count(), 2u);  // not the waiting one

  handler_.Answer();
  ASSERT_OK_AND_ASSIGN(Frame answer, waiting->Receive());
  EXPECT_TRUE(std::holds_alternative<Registered>(answer.message));
  EXPECT_EQ(handler_.registration_count(), 3u);
}

TEST_F(RegisterIdentityTest, FramesSentAfterRegisterWaitForItsIdentityAndKeepTheirOrder) {
  StartServer();
  RawClient client(options_.path);
  RegisterRequest request = RawClient::TypicalRequest(Role::kBackground);
  request.pod = kSlowPod;
  ASSERT_TRUE(client.Send(request));
  ASSERT_TRUE(client.Send(ReportIteration{1, 0.5, 32}));
  ASSERT_TRUE(client.Send(Goodbye{}));
  ASSERT_TRUE(handler_.WaitForWaiting(1));
  {
    std::lock_guard<std::mutex> lock(handler_.mu);
    EXPECT_TRUE(handler_.reports.empty());
  }
  handler_.Answer();
  ASSERT_OK_AND_ASSIGN(Frame answer, client.Receive());
  EXPECT_TRUE(std::holds_alternative<Registered>(answer.message));
  ASSERT_TRUE(WaitUntil([&] { return handler_.closed_count() == 1; }));
  std::lock_guard<std::mutex> lock(handler_.mu);
  EXPECT_TRUE(handler_.closed.begin()->second);  // said goodbye, after its report
  ASSERT_EQ(handler_.reports.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<ReportIteration>(handler_.reports[0].second));
}

TEST_F(RegisterIdentityTest, AnIdentityNotKnownByTheRegisterDeadlineEndsThatConnectionOnly) {
  options_.register_timeout = std::chrono::milliseconds(300);
  options_.identity_threads = 1;  // so that the late answer is delivered before later ones
  StartServer();
  auto serving = RegisteredClient();
  auto waiting = WaitingClient();
  ASSERT_OK_AND_ASSIGN(Frame frame, waiting->Receive());
  ASSERT_TRUE(std::holds_alternative<ErrorReply>(frame.message));
  const ErrorReply& error = std::get<ErrorReply>(frame.message);
  EXPECT_EQ(error.code, absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(error.message, HasSubstr("was not known within 300 ms of connecting"));
  EXPECT_TRUE(waiting->ClosedByPeer(0));

  // The late answer finds nobody waiting: no session opens, none closes.
  handler_.Answer();
  ASSERT_TRUE(handler_.WaitForAnswered(1));
  auto later = RegisteredClient("resnet-1");  // its answer comes after the late one
  EXPECT_EQ(handler_.registration_count(), 2u);
  EXPECT_EQ(handler_.closed_count(), 0u);
  EXPECT_EQ(server_->connection_count(), 2u);
}

TEST_F(RegisterIdentityTest, AWorkerThatLeavesWhileBeingIdentifiedIsForgotten) {
  options_.identity_threads = 1;  // so that the late answer is delivered before later ones
  StartServer();
  auto waiting = WaitingClient();
  waiting.reset();  // the worker exits before the agent knows who it is
  ASSERT_TRUE(WaitUntil([&] { return server_->connection_count() == 0; }));

  handler_.Answer();
  ASSERT_TRUE(handler_.WaitForAnswered(1));
  auto later = RegisteredClient();
  EXPECT_EQ(handler_.registration_count(), 1u);
  EXPECT_EQ(handler_.closed_count(), 0u);
  EXPECT_EQ(server_->connection_count(), 1u);
}

TEST_F(RegisterIdentityTest, BytesPiledUpBehindAWaitingRegisterAreBounded) {
  options_.max_unregistered_bytes = 4096;
  StartServer();
  auto waiting = WaitingClient();
  ReportMemory memory;
  for (std::int64_t i = 0; i < 400; ++i) memory.samples.push_back({i, 1, 1});  // 9.6 KB
  ASSERT_TRUE(waiting->Send(memory));
  ASSERT_OK_AND_ASSIGN(Frame frame, waiting->Receive());
  ASSERT_TRUE(std::holds_alternative<ErrorReply>(frame.message));
  EXPECT_EQ(std::get<ErrorReply>(frame.message).code, absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::get<ErrorReply>(frame.message).message,
              HasSubstr("sent after Register before the agent answered it"));
}

TEST_F(RegisterIdentityTest, IdentityThreadsMustBeBetweenOneAnd64) {
  for (std::size_t threads : {std::size_t{0}, std::size_t{65}}) {
    options_.identity_threads = threads;
    EXPECT_THAT(SocketServer::Start(options_, &handler_).status(),
                ::wavepool::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                              HasSubstr("identity_threads: must be in [1, 64]")));
  }
}

}  // namespace
}  // namespace wavepool::agent
