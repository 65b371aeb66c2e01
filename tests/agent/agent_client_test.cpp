#include "wavepool/agent/client/agent_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/socket_test_util.h"
#include "tests/support/status_matchers.h"
#include "wavepool/agent/gate_segment.h"
#include "wavepool/agent/socket_server.h"

namespace wavepool::agent {
namespace {

using ::testing::HasSubstr;
using ::wavepool::agent::testing::LogLines;
using ::wavepool::agent::testing::RecordingHandler;
using ::wavepool::agent::testing::WaitUntil;
using ::wavepool::testing::StatusIs;
using ::wavepool::testing::TempDir;

// An agent: a server whose handler hands out real slots of a real gate file (epoch = generation
// of the agent, so that a restarted agent has a new one).
struct FakeAgent {
  RecordingHandler handler;
  std::unique_ptr<SocketServer> server;
};

// An agent of the previous release, which speaks only kOldestProtocolVersion: a frame in a newer
// version gets the Error such an agent sends (Unimplemented, in its own version) and the
// connection closed; a Register in its version is answered by `handler` (a real gate slot), and
// the types of the frames that follow are recorded. One connection at a time.
class PreviousReleaseAgent {
 public:
  PreviousReleaseAgent(const std::string& path, RecordingHandler* handler) : handler_(handler) {
    listener_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
    EXPECT_EQ(bind(listener_, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
    EXPECT_EQ(listen(listener_, 8), 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~PreviousReleaseAgent() {
    stop_.store(true);
    thread_.join();
    close(listener_);
  }

  std::vector<MessageType> received() {
    std::lock_guard<std::mutex> lock(mu_);
    return received_;
  }

 private:
  void Serve() {
    while (!stop_.load()) {
      pollfd ready{listener_, POLLIN, 0};
      if (poll(&ready, 1, 50) != 1) continue;
      const int fd = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) Converse(fd);
      if (fd >= 0) close(fd);
    }
  }

  void Send(int fd, const Message& message, std::uint32_t sequence) {
    absl::StatusOr<std::string> frame = EncodeFrame(message, sequence, kOldestProtocolVersion);
    absl::StatusOr<std::vector<SharedFd>> fds = DescriptorsOf(message);
    ASSERT_TRUE(frame.ok() && fds.ok());
    OutgoingDescriptors outgoing;
    outgoing.Add(0, *std::move(fds));
    for (std::size_t sent = 0; sent < frame->size();) {
      const long n = outgoing.Send(fd, sent, frame->data() + sent, frame->size() - sent);
      if (n <= 0) return;
      sent += static_cast<std::size_t>(n);
    }
  }

  void Converse(int fd) {
    FrameReader reader;
    std::deque<ScopedFd> descriptors;
    std::uint32_t sequence = 1;
    const SessionId session = ++sessions_;
    while (!stop_.load()) {
      absl::StatusOr<std::optional<Frame>> next = reader.Next();
      if (!next.ok()) break;
      if (!next->has_value()) {
        pollfd ready{fd, POLLIN, 0};
        if (poll(&ready, 1, 50) != 1) continue;
        char buffer[4096];
        bool truncated = false;
        const long n = ReceiveWithDescriptors(fd, buffer, sizeof buffer, &descriptors, &truncated);
        if (n <= 0) break;
        reader.Append(std::string_view(buffer, static_cast<std::size_t>(n)));
        continue;
      }
      Frame& frame = **next;
      if (frame.version != kOldestProtocolVersion) {
        Send(fd, ErrorReply{absl::StatusCode::kUnimplemented, "frame.version: 3, expected 2"},
             sequence);
        break;
      }
      if (auto* request = std::get_if<RegisterRequest>(&frame.message)) {
        EXPECT_OK(AdoptDescriptors(&frame.message, &descriptors));
        absl::StatusOr<Registered> registered =
            handler_->OnRegister(session, PeerCredentials{getpid(), getuid(), getgid()}, *request);
        ASSERT_TRUE(registered.ok()) << registered.status();
        Send(fd, *registered, sequence++);
        continue;
      }
      std::lock_guard<std::mutex> lock(mu_);
      received_.push_back(TypeOf(frame.message));
    }
    handler_->OnClosed(session, false);
  }

  RecordingHandler* handler_;
  int listener_ = -1;
  std::atomic<bool> stop_{false};
  SessionId sessions_ = 0;
  std::mutex mu_;
  std::vector<MessageType> received_;
  std::thread thread_;
};

class AgentClientTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK_AND_ASSIGN(dir_, TempDir::Create("wavepool-sock")); }

  FakeAgent& StartAgent(std::uint64_t epoch) {
    agents_.push_back(std::make_unique<FakeAgent>());
    FakeAgent& agent = *agents_.back();
    agent.handler.gate_directory = dir_.path();
    agent.handler.epoch = epoch;
    SocketServer::Options options;
    options.path = socket_path();
    options.log = server_log_.Sink();
    absl::StatusOr<std::unique_ptr<SocketServer>> server =
        SocketServer::Start(options, &agent.handler);
    EXPECT_TRUE(server.ok()) << server.status();
    if (server.ok()) agent.server = std::move(*server);
    agent.handler.server = agent.server.get();
    return agent;
  }

  AgentClient::Options ClientOptions(Role role = Role::kForeground) {
    AgentClient::Options options;
    options.socket_path = socket_path();
    options.registration.namespace_name = "default";
    options.registration.job = role == Role::kForeground ? "vgg16" : "resnet-bg";
    options.registration.pod = options.registration.job + "-0";
    options.registration.role = role;
    options.flush_interval = std::chrono::milliseconds(2);
    options.reconnect_backoff_min = std::chrono::milliseconds(1);
    options.reconnect_backoff_max = std::chrono::milliseconds(20);
    options.log = client_log_.Sink();
    return options;
  }

  std::string socket_path() const { return dir_.File("agent.sock"); }

  TempDir dir_;
  LogLines server_log_;
  LogLines client_log_;
  std::vector<std::unique_ptr<FakeAgent>> agents_;
};

TEST_F(AgentClientTest, ConnectRegistersAndMapsTheGate) {
  FakeAgent& agent = StartAgent(1);
  ASSERT_OK_AND_ASSIGN(auto client, AgentClient::Connect(ClientOptions()));
  EXPECT_TRUE(client->connected());
  WorkerGate* gate = client->gate();
  ASSERT_NE(gate, nullptr);
  EXPECT_TRUE(gate->agent_alive());
  EXPECT_EQ(gate->credit_limit(), 2);
  EXPECT_EQ(client->registration().stream_priority, StreamPriority::kHigh);
  // The foreground's two credits, then none.
  EXPECT_TRUE(gate->TryAcquire());
  EXPECT_TRUE(gate->TryAcquire());
  EXPECT_FALSE(gate->TryAcquire());
  const SlotSnapshot slot = agent.handler.segment->Read(client->registration().slot);
  EXPECT_EQ(slot.in_flight, 2);
  EXPECT_EQ(slot.pid, getpid());
  gate->Release();
  gate->Release();
  EXPECT_EQ(agent.handler.segment->Read(client->registration().slot).in_flight, 0);
  std::lock_guard<std::mutex> lock(agent.handler.mu);
  EXPECT_EQ(agent.handler.registrations[0].request.pid, getpid());
}

TEST_F(AgentClientTest, ReportsArriveInOrderInBatches) {
  FakeAgent& agent = StartAgent(1);
  AgentClient::Options options = ClientOptions();
  options.batch_size = 256;
  ASSERT_OK_AND_ASSIGN(auto client, AgentClient::Connect(options));
  for (std::uint32_t i = 0; i < 3000; ++i) {
    ASSERT_OK(client->ReportOp({i % kMaxOpGroups, OpKind::kCompute, i}));
  }
  for (std::int64_t t = 0; t < 10; ++t) ASSERT_OK(client->ReportMemory({t, 100, 200}));
  ASSERT_OK(client->ReportIteration({1, 0.25, 64}));
  const SessionId session = agent.handler.last_session();
  ASSERT_TRUE(WaitUntil([&] { return agent.handler.op_count(session) == 3000; }));
  client->Close();
  ASSERT_TRUE(WaitUntil([&] { return agent.handler.closed_count() == 1; }));
  std::lock_guard<std::mutex> lock(agent.handler.mu);
  const std::vector<std::uint32_t>& groups = agent.handler.op_groups[session];
  for (std::uint32_t i = 0; i < 3000; ++i) ASSERT_EQ(groups[i], i % kMaxOpGroups);
  std::size_t samples = 0, iterations = 0, largest_batch = 0;
  for (const auto& [id, report] : agent.handler.reports) {
    if (const auto* m = std::get_if<ReportMemory>(&report)) samples += m->samples.size();
    if (std::holds_alternative<ReportIteration>(report)) ++iterations;
    if (const auto* ops = std::get_if<ReportOps>(&report)) {
      largest_batch = std::max(largest_batch, ops->groups.size());
    }
  }
  EXPECT_EQ(samples, 10u);
  EXPECT_EQ(iterations, 1u);
  EXPECT_LE(largest_batch, 256u);
  EXPECT_TRUE(agent.handler.closed[session]);  // Close said goodbye
  EXPECT_EQ(client->stats().reports_dropped, 0u);
}

TEST_F(AgentClientTest, RejectsReportsThatCannotBeEncoded) {
  StartAgent(1);
  ASSERT_OK_AND_ASSIGN(auto client, AgentClient::Connect(ClientOptions()));
  EXPECT_THAT(client->ReportOp({kMaxOpGroups, OpKind::kCompute, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("op_group 4096 >= 4096")));
  ASSERT_OK(client->ReportMemory({10, 1, 1}));
  EXPECT_THAT(client->ReportMemory({9, 1, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("time order")));
  EXPECT_THAT(client->ReportIteration({1, -1.0, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("seconds")));
  // Finite but past the protocol's bound (the agent's sums would overflow): refused here, not
  // a dropped connection later.
  EXPECT_THAT(client->ReportIteration({1, 1e308, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("<= 1e+06, got 1e+308")));
  client->Close();
  EXPECT_THAT(client->ReportOp({1, OpKind::kCompute, 1}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("closed")));
  EXPECT_FALSE(client->gate()->agent_alive());  // after Close: the agent-gone rules
}

TEST_F(AgentClientTest, ThePolicyTheAgentSendsBecomesTheLatest) {
  FakeAgent& agent = StartAgent(1);
  ASSERT_OK_AND_ASSIGN(auto client, AgentClient::Connect(ClientOptions(Role::kBackground)));
  EXPECT_FALSE(client->LatestPolicy().has_value());
  const SessionId session = agent.handler.last_session();
  ASSERT_OK(agent.server->Send(session, Policy{1, StreamPriority::kLow, 32, "fg over its SLO"}));
  ASSERT_OK(agent.server->Send(session, Policy{1, StreamPriority::kLow, 16, "still over"}));
  ASSERT_TRUE(WaitUntil([&] {
    const std::optional<Policy> policy = client->LatestPolicy();
    return policy && policy->recommended_batch_size == 16;
  }));
  EXPECT_EQ(client->LatestPolicy()->reason, "still over");
}

TEST_F(AgentClientTest, ConnectFailsCleanly) {
  EXPECT_THAT(AgentClient::Connect(ClientOptions()),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("agent.sock")));
  AgentClient::Options bad = ClientOptions();
  bad.batch_size = 0;
  EXPECT_THAT(AgentClient::Connect(bad),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("batch_size")));
  FakeAgent& agent = StartAgent(1);
  bad = ClientOptions();
  bad.registration.max_foreground_slowdown = 0.5;
  EXPECT_THAT(AgentClient::Connect(bad), StatusIs(absl::StatusCode::kInvalidArgument,
                                                  HasSubstr("Register.max_foreground_slowdown")));
  {
    std::lock_guard<std::mutex> lock(agent.handler.mu);
    agent.handler.register_error = absl::ResourceExhaustedError("gpu 0: no free slot");
  }
  EXPECT_THAT(AgentClient::Connect(ClientOptions()),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("no free slot")));
}

TEST_F(AgentClientTest, AGateThatDoesNotAttachFailsConnectAndFreesTheSlot) {
  FakeAgent& agent = StartAgent(1);
  agent.handler.epoch_skew = 1;  // Registered names an epoch the file does not have
  EXPECT_THAT(AgentClient::Connect(ClientOptions()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("epoch")));
  ASSERT_TRUE(WaitUntil([&] { return agent.handler.closed_count() == 1; }));
  std::lock_guard<std::mutex> lock(agent.handler.mu);
  EXPECT_TRUE(agent.handler.closed.begin()->second);  // it said goodbye
}

// The agent restarts: the client notices, runs by the agent-gone rules, keeps the reports it
// gets meanwhile, reconnects, registers again, binds the new gate, and reports flow again.
TEST_F(AgentClientTest, ReconnectsAndRegistersAgainAfterTheAgentRestarts) {
  StartAgent(1);
  ASSERT_OK_AND_ASSIGN(auto fg, AgentClient::Connect(ClientOptions(Role::kForeground)));
  ASSERT_OK_AND_ASSIGN(auto bg, AgentClient::Connect(ClientOptions(Role::kBackground)));
  WorkerGate* fg_gate = fg->gate();
  WorkerGate* bg_gate = bg->gate();
  ASSERT_TRUE(fg_gate->TryAcquire());  // held across the restart
  ASSERT_OK(fg->ReportOp({1, OpKind::kCompute, 10}));
  RecordingHandler& first = agents_.back()->handler;
  ASSERT_TRUE(WaitUntil([&] {
    std::lock_guard<std::mutex> lock(first.mu);
    return !first.reports.empty();
  }));

  agents_.back()->server->Stop();  // the agent goes away
  ASSERT_TRUE(WaitUntil([&] { return !fg->connected() && !bg->connected(); }));
  EXPECT_FALSE(fg_gate->agent_alive());
  EXPECT_FALSE(bg_gate->agent_alive());
  // Agent gone: the foreground runs unpaced, the background stays paused.
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(fg_gate->TryAcquire());
  for (int i = 0; i < 10; ++i) fg_gate->Release();
  EXPECT_FALSE(bg_gate->TryAcquire());
  EXPECT_TRUE(bg_gate->Paused());
  for (std::uint32_t i = 100; i < 110; ++i) ASSERT_OK(fg->ReportOp({i, OpKind::kCompute, i}));

  FakeAgent& restarted = StartAgent(2);
  ASSERT_TRUE(WaitUntil([&] { return fg->connected() && bg->connected(); }));
  EXPECT_TRUE(fg_gate->agent_alive());
  EXPECT_TRUE(bg_gate->agent_alive());
  EXPECT_EQ(fg->registration().gate_epoch, 2u);
  EXPECT_EQ(fg->stats().reconnects, 1u);
  EXPECT_EQ(fg_gate->bind_count(), 2u);
  ASSERT_EQ(restarted.handler.registration_count(), 2u);
  // The reports made while the agent was gone arrive at the new one.
  SessionId fg_session = 0;
  {
    std::lock_guard<std::mutex> lock(restarted.handler.mu);
    for (const auto& r : restarted.handler.registrations) {
      if (r.request.role == Role::kForeground) fg_session = r.session;
    }
  }
  ASSERT_TRUE(WaitUntil([&] { return restarted.handler.op_count(fg_session) >= 10; }));
  {
    std::lock_guard<std::mutex> lock(restarted.handler.mu);
    EXPECT_EQ(restarted.handler.op_groups[fg_session].front(), 100u);
  }
  // The new gate paces: the background may take its credit again (once it has mapped the new
  // foreground's segment); the foreground's credit held from before the restart goes back to the
  // old gate, not to the new one.
  ASSERT_TRUE(WaitUntil([&] { return !bg_gate->Paused(); }));
  EXPECT_TRUE(bg_gate->TryAcquire());
  bg_gate->Release();
  ASSERT_TRUE(fg_gate->TryAcquire());
  const std::uint32_t slot = fg->registration().slot;
  EXPECT_EQ(restarted.handler.segment->Read(slot).in_flight, 1);
  fg_gate->Release();  // the old credit
  fg_gate->Release();  // the new one
  EXPECT_EQ(restarted.handler.segment->Read(slot).in_flight, 0);
  EXPECT_EQ(fg_gate->held(), 0);
  EXPECT_TRUE(client_log_.Contains("registered again"));
}

TEST_F(AgentClientTest, DropsTheOldestReportsWhileTheAgentIsGone) {
  StartAgent(1);
  AgentClient::Options options = ClientOptions();
  options.batch_size = 16;
  options.max_buffered_reports = 16;
  ASSERT_OK_AND_ASSIGN(auto client, AgentClient::Connect(options));
  agents_.back()->server->Stop();
  ASSERT_TRUE(WaitUntil([&] { return !client->connected(); }));
  for (std::uint32_t i = 0; i < 100; ++i) ASSERT_OK(client->ReportOp({i, OpKind::kCompute, i}));
  EXPECT_EQ(client->stats().reports_dropped, 84u);  // 100 - 16 kept
  FakeAgent& restarted = StartAgent(2);
  ASSERT_TRUE(WaitUntil([&] { return client->connected(); }));
  const SessionId session = restarted.handler.last_session();
  ASSERT_TRUE(WaitUntil([&] { return restarted.handler.op_count(session) == 16; }));
  std::lock_guard<std::mutex> lock(restarted.handler.mu);
  EXPECT_EQ(restarted.handler.op_groups[session].front(), 84u);  // the newest 16
  EXPECT_EQ(restarted.handler.op_groups[session].back(), 99u);
}

TEST_F(AgentClientTest, TalksToAnAgentOfThePreviousReleaseWithoutWhatItLacks) {
  RecordingHandler handler;
  handler.gate_directory = dir_.path();
  PreviousReleaseAgent agent(socket_path(), &handler);
  ASSERT_OK_AND_ASSIGN(auto client, AgentClient::Connect(ClientOptions()));
  EXPECT_TRUE(client->connected());
  EXPECT_EQ(handler.registration_count(), 1u);  // refused in version 3, registered in version 2
  ASSERT_OK(client->ReportWaveMemory({0, 1, 100}));
  ASSERT_OK(client->ReportMemory({1, 100, 100}));
  ASSERT_TRUE(WaitUntil([&] { return !agent.received().empty(); }));
  client->Close();
  EXPECT_EQ(agent.received().front(), MessageType::kReportMemory);
  for (MessageType type : agent.received()) EXPECT_NE(type, MessageType::kReportWaveMemory);
  EXPECT_EQ(client->stats().reports_dropped, 1u);  // the wave sample the agent cannot take
  EXPECT_TRUE(client_log_.Contains("speaks protocol version 2 (this worker 3)"));
}

TEST_F(AgentClientTest, WaveSamplesKeepEachWavesOrder) {
  FakeAgent& agent = StartAgent(1);
  ASSERT_OK_AND_ASSIGN(auto client, AgentClient::Connect(ClientOptions()));
  ASSERT_OK(client->ReportWaveMemory({0, 10, 1}));
  ASSERT_OK(client->ReportWaveMemory({1, 5, 2}));  // another wave may be behind
  EXPECT_THAT(client->ReportWaveMemory({1, 4, 2}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("time_ns 4 < the previous")));
  EXPECT_THAT(client->ReportWaveMemory({8, 11, 2}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("wave 8 >= 8")));
  ASSERT_TRUE(WaitUntil([&] {
    std::lock_guard<std::mutex> lock(agent.handler.mu);
    return !agent.handler.reports.empty();
  }));
  std::lock_guard<std::mutex> lock(agent.handler.mu);
  const auto& waves = std::get<ReportWaveMemory>(agent.handler.reports.front().second);
  ASSERT_EQ(waves.samples.size(), 2u);
  EXPECT_EQ(waves.samples[1].wave, 1);
}

TEST_F(AgentClientTest, CloseWhileReconnectingReturns) {
  StartAgent(1);
  AgentClient::Options options = ClientOptions();
  options.reconnect_backoff_max = std::chrono::milliseconds(2000);
  ASSERT_OK_AND_ASSIGN(auto client, AgentClient::Connect(options));
  agents_.back()->server->Stop();
  ASSERT_TRUE(WaitUntil([&] { return client->stats().disconnects == 1; }));
  client->Close();  // interrupts the backoff wait
  EXPECT_FALSE(client->connected());
}

}  // namespace
}  // namespace wavepool::agent
