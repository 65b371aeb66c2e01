#include "wavepool/agent/socket_server.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/socket_test_util.h"
#include "tests/support/status_matchers.h"

namespace wavepool::agent {
namespace {

using ::testing::HasSubstr;
using ::wavepool::agent::testing::RawClient;
using ::wavepool::agent::testing::RecordingHandler;
using ::wavepool::agent::testing::WaitUntil;
using ::wavepool::testing::StatusIs;

class SocketServerTest : public testing::SocketServerFixture<RecordingHandler> {
 protected:
  // A registered raw client of `role` (a typical request); its Registered has been read.
  std::unique_ptr<RawClient> RegisteredClient(Role role = Role::kForeground) {
    return SocketServerFixture::RegisteredClient(RawClient::TypicalRequest(role));
  }

  // The Error the server sent before closing, checked to be followed by EOF.
  ErrorReply ExpectErrorAndClose(RawClient& client) {
    absl::StatusOr<Frame> frame = client.Receive();
    EXPECT_TRUE(frame.ok()) << frame.status();
    ErrorReply error;
    if (frame.ok() && std::holds_alternative<ErrorReply>(frame->message)) {
      error = std::get<ErrorReply>(frame->message);
    } else {
      ADD_FAILURE() << "no Error reply";
    }
    EXPECT_TRUE(client.ClosedByPeer(0));
    return error;
  }
};

TEST_F(SocketServerTest, RegisterRepliesWithTheHandlersAnswerAndThePeersPid) {
  handler_.registered.slot = 5;
  handler_.registered.gate_epoch = 99;
  handler_.registered.credit_limit = 2;
  StartServer();
  RawClient client(options_.path);
  ASSERT_TRUE(client.Register(Role::kBackground));
  ASSERT_OK_AND_ASSIGN(Frame answer, client.Receive());
  EXPECT_EQ(answer.sequence, 1u);
  const auto& registered = std::get<Registered>(answer.message);
  EXPECT_EQ(registered.slot, 5u);
  EXPECT_EQ(registered.gate_epoch, 99u);
  ASSERT_EQ(handler_.registration_count(), 1u);
  std::lock_guard<std::mutex> lock(handler_.mu);
  EXPECT_EQ(handler_.registrations[0].peer.pid, getpid());  // from SO_PEERCRED
  EXPECT_EQ(handler_.registrations[0].peer.uid, getuid());
  EXPECT_EQ(handler_.registrations[0].request.job, "resnet");
  EXPECT_EQ(handler_.registrations[0].request.role, Role::kBackground);
}

TEST_F(SocketServerTest, DeliversReportsInOrderAndGoodbyeClosesCleanly) {
  StartServer();
  auto client = RegisteredClient();
  const SessionId session = handler_.last_session();
  for (std::uint32_t i = 0; i < 300; ++i) {
    ReportOps ops;
    ops.groups.push_back({i % kMaxOpGroups, OpKind::kCompute, i});
    ASSERT_TRUE(client->Send(ops));
  }
  ASSERT_TRUE(client->Send(ReportMemory{{{1, 2, 3}}}));
  ASSERT_TRUE(client->Send(ReportIteration{1, 0.5, 32}));
  ASSERT_TRUE(client->Send(Goodbye{}));
  ASSERT_TRUE(WaitUntil([&] { return handler_.closed_count() == 1; }));
  std::lock_guard<std::mutex> lock(handler_.mu);
  EXPECT_TRUE(handler_.closed[session]);  // said goodbye
  ASSERT_EQ(handler_.op_groups[session].size(), 300u);
  for (std::uint32_t i = 0; i < 300; ++i) EXPECT_EQ(handler_.op_groups[session][i], i);
  ASSERT_EQ(handler_.reports.size(), 302u);
  EXPECT_TRUE(std::holds_alternative<ReportMemory>(handler_.reports[300].second));
  EXPECT_TRUE(std::holds_alternative<ReportIteration>(handler_.reports[301].second));
}

TEST_F(SocketServerTest, SendDeliversPoliciesInOrder) {
  StartServer();
  auto client = RegisteredClient();
  const SessionId session = handler_.last_session();
  ASSERT_OK(server_->Send(session, Policy{1, StreamPriority::kLow, 16, "slow down"}));
  ASSERT_OK(server_->Send(session, Policy{2, StreamPriority::kLow, 0, ""}));
  ASSERT_OK_AND_ASSIGN(Frame first, client->Receive());
  ASSERT_OK_AND_ASSIGN(Frame second, client->Receive());
  EXPECT_EQ(first.sequence, 2u);  // after Registered
  EXPECT_EQ(second.sequence, 3u);
  EXPECT_EQ(std::get<Policy>(first.message).recommended_batch_size, 16u);
  EXPECT_EQ(std::get<Policy>(first.message).reason, "slow down");
  EXPECT_EQ(std::get<Policy>(second.message).credit_limit, 2u);
  EXPECT_THAT(server_->Send(session + 100, Policy{}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("is not open")));
  EXPECT_THAT(server_->Send(session, Policy{1, StreamPriority::kLow, 0, std::string(300, 'r')}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Policy.reason")));
}

TEST_F(SocketServerTest, FirstMessageMustBeRegister) {
  StartServer();
  RawClient client(options_.path);
  ASSERT_TRUE(client.Send(ReportIteration{1, 1.0, 1}));
  const ErrorReply error = ExpectErrorAndClose(client);
  EXPECT_EQ(error.code, absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(error.message, HasSubstr("ReportIteration before Register"));
  EXPECT_EQ(handler_.registration_count(), 0u);
  EXPECT_EQ(handler_.closed_count(), 0u);  // never a session
  EXPECT_TRUE(log_.Contains(absl::StrCat("pid ", getpid())));
}

TEST_F(SocketServerTest, SecondRegisterIsAnError) {
  StartServer();
  auto client = RegisteredClient();
  ASSERT_TRUE(client->Register());
  const ErrorReply error = ExpectErrorAndClose(*client);
  EXPECT_EQ(error.code, absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(error.message, HasSubstr("registered already"));
  ASSERT_TRUE(WaitUntil([&] { return handler_.closed_count() == 1; }));
  std::lock_guard<std::mutex> lock(handler_.mu);
  EXPECT_FALSE(handler_.closed.begin()->second);
}

TEST_F(SocketServerTest, AWorkerOfThePreviousVersionIsAnsweredInItsVersion) {
  StartServer();
  RawClient client(options_.path);
  client.set_version(kOldestProtocolVersion);
  ASSERT_TRUE(client.Register());
  ASSERT_OK_AND_ASSIGN(Frame registered, client.Receive());
  EXPECT_EQ(registered.version, kOldestProtocolVersion);
  EXPECT_TRUE(std::holds_alternative<Registered>(registered.message));
  const SessionId session = handler_.last_session();
  ASSERT_OK(server_->Send(session, Policy{1, StreamPriority::kLow, 0, ""}));
  ASSERT_OK_AND_ASSIGN(Frame policy, client.Receive());
  EXPECT_EQ(policy.version, kOldestProtocolVersion);
  ASSERT_TRUE(client.Send(ReportMemory{{{1, 2, 3}}}));
  // A frame in another version than the Register's ends the session, answered in its version.
  client.set_version(kProtocolVersion);
  ASSERT_TRUE(client.Send(ReportWaveMemory{{{0, 1, 2}}}));
  ASSERT_OK_AND_ASSIGN(Frame error, client.Receive());
  EXPECT_EQ(error.version, kOldestProtocolVersion);
  EXPECT_EQ(std::get<ErrorReply>(error.message).code, absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::get<ErrorReply>(error.message).message,
              HasSubstr("frame.version: 3, but the worker registered in version 2"));
  ASSERT_TRUE(WaitUntil([&] { return handler_.closed_count() == 1; }));
  std::lock_guard<std::mutex> lock(handler_.mu);
  ASSERT_EQ(handler_.reports.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<ReportMemory>(handler_.reports[0].second));
}

TEST_F(SocketServerTest, DeliversWaveMemoryReports) {
  StartServer();
  auto client = RegisteredClient();
  ASSERT_TRUE(client->Send(ReportWaveMemory{{{0, 1, 2}, {1, 1, 5}}}));
  ASSERT_TRUE(WaitUntil([&] {
    std::lock_guard<std::mutex> lock(handler_.mu);
    return handler_.reports.size() == 1;
  }));
  std::lock_guard<std::mutex> lock(handler_.mu);
  const auto& waves = std::get<ReportWaveMemory>(handler_.reports[0].second);
  ASSERT_EQ(waves.samples.size(), 2u);
  EXPECT_EQ(waves.samples[1].wave, 1);
  EXPECT_EQ(waves.samples[1].allocated_bytes, 5u);
}

TEST_F(SocketServerTest, SequenceNumbersMustGrowByOne) {
  StartServer();
  auto client = RegisteredClient();
  ASSERT_TRUE(client->Send(Goodbye{}, 5));  // 2 expected
  const ErrorReply error = ExpectErrorAndClose(*client);
  EXPECT_EQ(error.code, absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(error.message, HasSubstr("frame.sequence: expected 2, got 5"));
  ASSERT_TRUE(WaitUntil([&] { return handler_.closed_count() == 1; }));
}

TEST_F(SocketServerTest, MalformedFramesGetAnErrorNamingTheField) {
  StartServer();
  {
    RawClient client(options_.path);
    ASSERT_TRUE(client.SendBytes(std::string(16, 'z')));
    const ErrorReply error = ExpectErrorAndClose(client);
    EXPECT_EQ(error.code, absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(error.message, HasSubstr("frame.magic"));
  }
  {
    // The header alone announces a body over the limit: refused before any body is sent.
    RawClient client(options_.path);
    std::string header = *EncodeFrame(Goodbye{}, 1);
    header[15] = '\x7f';
    ASSERT_TRUE(client.SendBytes(header));
    EXPECT_THAT(ExpectErrorAndClose(client).message, HasSubstr("frame.length"));
  }
  {
    auto client = RegisteredClient();
    ReportOps ops;
    ops.groups.resize(13);
    std::string frame = *EncodeFrame(ops, 2);
    frame.replace(kFrameHeaderBytes + 4 + 12 * 13, 2, std::string("\x88\x13", 2));  // 5000
    ASSERT_TRUE(client->SendBytes(frame));
    EXPECT_THAT(ExpectErrorAndClose(*client).message,
                HasSubstr("ReportOps.groups[12].op_group: 5000 >= 4096"));
  }
  {
    auto client = RegisteredClient();
    ASSERT_TRUE(client->Send(Policy{}));
    const ErrorReply error = ExpectErrorAndClose(*client);
    EXPECT_EQ(error.code, absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(error.message, HasSubstr("only the agent sends"));
  }
  EXPECT_TRUE(WaitUntil([&] { return server_->connection_count() == 0; }));
}

TEST_F(SocketServerTest, HandlerRegisterErrorIsSentBack) {
  handler_.register_error = absl::ResourceExhaustedError("gpu 0: all 32 slots are taken");
  StartServer();
  RawClient client(options_.path);
  ASSERT_TRUE(client.Register());
  const ErrorReply error = ExpectErrorAndClose(client);
  EXPECT_EQ(error.code, absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(error.message, "gpu 0: all 32 slots are taken");
  EXPECT_EQ(handler_.closed_count(), 0u);  // the session never opened
}

TEST_F(SocketServerTest, HandlerReportErrorClosesTheSession) {
  handler_.report_error = absl::InvalidArgumentError("op group 3 is not in the plan");
  StartServer();
  auto client = RegisteredClient();
  ASSERT_TRUE(client->Send(ReportIteration{1, 1.0, 1}));
  const ErrorReply error = ExpectErrorAndClose(*client);
  EXPECT_EQ(error.message, "op group 3 is not in the plan");
  ASSERT_TRUE(WaitUntil([&] { return handler_.closed_count() == 1; }));
}

TEST_F(SocketServerTest, AViolationDoesNotDisturbAnotherSession) {
  StartServer();
  auto good = RegisteredClient();
  const SessionId good_session = handler_.last_session();
  auto bad = RegisteredClient();
  ASSERT_TRUE(bad->SendBytes("this is not a frame at all"));
  ExpectErrorAndClose(*bad);
  ReportOps ops;
  ops.groups.push_back({7, OpKind::kCompute, 1});
  ASSERT_TRUE(good->Send(ops));
  ASSERT_TRUE(WaitUntil([&] { return handler_.op_count(good_session) == 1; }));
  ASSERT_OK(server_->Send(good_session, Policy{3, StreamPriority::kHigh, 0, ""}));
  ASSERT_OK_AND_ASSIGN(Frame policy, good->Receive());
  EXPECT_EQ(std::get<Policy>(policy.message).credit_limit, 3u);
  std::lock_guard<std::mutex> lock(handler_.mu);
  EXPECT_EQ(handler_.closed.count(good_session), 0u);
}

TEST_F(SocketServerTest, ServesManyConcurrentClients) {
  StartServer();
  constexpr int kClients = 64;
  constexpr std::uint32_t kReports = 200;
  std::atomic<int> failures{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < kClients; ++w) {
    workers.emplace_back([&, w] {
      RawClient client(options_.path);
      bool ok = client.Register(w % 2 == 0 ? Role::kForeground : Role::kBackground);
      absl::StatusOr<Frame> answer = client.Receive();
      ok = ok && answer.ok() && std::holds_alternative<Registered>(answer->message);
      for (std::uint32_t i = 0; ok && i < kReports; ++i) {
        ReportOps ops;
        ops.groups.push_back({i, OpKind::kCompute, static_cast<std::uint64_t>(w)});
        ok = client.Send(ops);
      }
      ok = ok && client.Send(Goodbye{});
      if (!ok) ++failures;
    });
  }
  for (std::thread& t : workers) t.join();
  EXPECT_EQ(failures.load(), 0);
  ASSERT_TRUE(WaitUntil([&] { return handler_.closed_count() == kClients; }));
  std::lock_guard<std::mutex> lock(handler_.mu);
  for (const auto& [session, goodbye] : handler_.closed) {
    EXPECT_TRUE(goodbye);
    ASSERT_EQ(handler_.op_groups[session].size(), kReports);
    for (std::uint32_t i = 0; i < kReports; ++i) EXPECT_EQ(handler_.op_groups[session][i], i);
  }
}

TEST_F(SocketServerTest, AWorkerThatNeverReadsIsDisconnectedAtTheOutputBound) {
  options_.max_output_bytes = 4096;
  StartServer();
  auto stuck = RegisteredClient();  // never reads again
  auto fine = RegisteredClient();
  SessionId stuck_session;
  {
    std::lock_guard<std::mutex> lock(handler_.mu);
    stuck_session = handler_.registrations[0].session;
  }
  const Policy policy{1, StreamPriority::kLow, 0, std::string(200, 'p')};
  // The kernel's socket buffer takes the first few hundred kilobytes; then the server's queue
  // fills up to 4 KiB and the session is closed. Send answers NotFound from then on.
  bool closed = false;
  for (int i = 0; i < 1'000'000 && !closed; ++i) {
    const absl::Status sent = server_->Send(stuck_session, policy);
    if (absl::IsResourceExhausted(sent)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    closed = absl::IsNotFound(sent);
  }
  ASSERT_TRUE(closed);
  ASSERT_TRUE(WaitUntil([&] { return handler_.closed_count() == 1; }));
  EXPECT_TRUE(log_.Contains("does not read its socket"));
  // The other session is unaffected.
  ASSERT_OK(server_->Send(handler_.last_session(), Policy{}));
  ASSERT_OK_AND_ASSIGN(Frame frame, fine->Receive());
  EXPECT_TRUE(std::holds_alternative<Policy>(frame.message));
}

TEST_F(SocketServerTest, ASilentConnectionIsClosedAfterTheRegisterTimeout) {
  options_.register_timeout = std::chrono::milliseconds(50);
  StartServer();
  RawClient client(options_.path);
  const ErrorReply error = ExpectErrorAndClose(client);
  EXPECT_EQ(error.code, absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(error.message, HasSubstr("no Register within 50 ms"));
}

TEST_F(SocketServerTest, RefusesConnectionsBeyondTheLimit) {
  options_.max_connections = 2;
  StartServer();
  auto first = RegisteredClient();
  auto second = RegisteredClient();
  RawClient third(options_.path);
  const ErrorReply error = ExpectErrorAndClose(third);
  EXPECT_EQ(error.code, absl::StatusCode::kResourceExhausted);
  first.reset();  // a slot frees up
  ASSERT_TRUE(WaitUntil([&] { return server_->connection_count() == 1; }));
  auto fourth = RegisteredClient();
}

TEST_F(SocketServerTest, StopClosesOpenSessionsAndRemovesTheSocket) {
  StartServer();
  auto a = RegisteredClient();
  auto b = RegisteredClient(Role::kBackground);
  RawClient unregistered(options_.path);
  server_->Stop();
  EXPECT_EQ(handler_.closed_count(), 2u);
  {
    std::lock_guard<std::mutex> lock(handler_.mu);
    for (const auto& [session, goodbye] : handler_.closed) EXPECT_FALSE(goodbye);
  }
  EXPECT_TRUE(a->ClosedByPeer());
  EXPECT_TRUE(unregistered.ClosedByPeer());
  struct stat st;
  EXPECT_NE(lstat(options_.path.c_str(), &st), 0);
  server_->Stop();  // idempotent
  EXPECT_THAT(server_->Send(1, Policy{}), StatusIs(absl::StatusCode::kNotFound, ::testing::_));
}

TEST_F(SocketServerTest, ReplacesAStaleSocketFileButNotALiveOneOrAnotherFile) {
  {
    // A socket file left behind by a process that died: nobody listens on it.
    RecordingHandler other;
    SocketServer::Options stale = options_;
    ASSERT_OK_AND_ASSIGN(auto first, SocketServer::Start(stale, &other));
    const std::string moved = dir_.File("kept.sock");
    ASSERT_EQ(link(options_.path.c_str(), moved.c_str()), 0);  // survives the cleanup below
    first.reset();
    ASSERT_EQ(rename(moved.c_str(), options_.path.c_str()), 0);
  }
  StartServer();  // replaces the stale file
  auto client = RegisteredClient();
  RecordingHandler second;
  EXPECT_THAT(SocketServer::Start(options_, &second),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("listening on it")));
  SocketServer::Options file = options_;
  file.path = dir_.File("plain-file");
  std::ofstream(file.path) << "not a socket";
  EXPECT_THAT(SocketServer::Start(file, &second),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("is not a socket")));
  file.path = dir_.File(std::string(120, 'p'));
  EXPECT_THAT(SocketServer::Start(file, &second),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be 1..107 bytes")));
}

TEST_F(SocketServerTest, TheSocketFileGetsTheConfiguredModeAndGroup) {
  options_.mode = 0600;
  options_.group = getgid();
  StartServer();
  struct stat st;
  ASSERT_EQ(lstat(options_.path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(st.st_gid, getgid());
}

TEST_F(SocketServerTest, AnUnfinishedFrameThenEofClosesTheSession) {
  StartServer();
  {
    auto client = RegisteredClient();
    ASSERT_TRUE(client->SendBytes(EncodeFrame(ReportIteration{1, 1.0, 1}, 2)->substr(0, 20)));
  }  // closed mid-frame: the worker died
  ASSERT_TRUE(WaitUntil([&] { return handler_.closed_count() == 1; }));
  std::lock_guard<std::mutex> lock(handler_.mu);
  EXPECT_FALSE(handler_.closed.begin()->second);
  EXPECT_TRUE(handler_.reports.empty());
}

// A handler that stops the server from inside a callback: the loop ends after it, no deadlock.
class StoppingHandler : public RecordingHandler {
 public:
  absl::Status OnReport(SessionId session, const Message& report) override {
    server->Stop();
    return RecordingHandler::OnReport(session, report);
  }
  SocketServer* server = nullptr;
};

TEST_F(SocketServerTest, StopFromInsideAHandlerEndsTheLoop) {
  StoppingHandler handler;
  ASSERT_OK_AND_ASSIGN(auto server, SocketServer::Start(options_, &handler));
  handler.server = server.get();
  RawClient client(options_.path);
  ASSERT_TRUE(client.Register());
  ASSERT_TRUE(client.Receive().ok());
  ASSERT_TRUE(client.Send(ReportIteration{1, 1.0, 1}));
  ASSERT_TRUE(WaitUntil([&] { return handler.closed_count() == 1; }));
  server.reset();  // joins
  EXPECT_TRUE(client.ClosedByPeer());
}

}  // namespace
}  // namespace wavepool::agent
