// Shared pieces of the socket tests: a private directory for socket and gate files, a
// SessionHandler that records what the server tells it (and can hand out real gate slots), a raw
// blocking client that speaks frames by hand, a bounded wait for things other threads do, and a
// fixture that starts a server on them.
#ifndef WAVEPOOL_TESTS_AGENT_SOCKET_TEST_UTIL_H_
#define WAVEPOOL_TESTS_AGENT_SOCKET_TEST_UTIL_H_

#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "tests/support/temp_dir.h"
#include "wavepool/agent/client/gate_memory.h"
#include "wavepool/agent/client/protocol.h"
#include "wavepool/agent/gate_segment.h"
#include "wavepool/agent/socket_server.h"

namespace wavepool::agent::testing {

// Polls `done` until it holds or 20 s pass (a bound so that a broken test fails instead of
// hanging; never a timing assertion). Returns done().
inline bool WaitUntil(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Records every callback. With a gate directory set, OnRegister allocates a real slot in a
// GateSegment of GPU 0 (created on first use with `epoch`) and OnClosed reclaims it; otherwise it
// answers with `registered`. Safe for concurrent use (the server's thread writes, tests read).
class RecordingHandler : public SessionHandler {
 public:
  struct Registration {
    SessionId session;
    PeerCredentials peer;
    RegisterRequest request;
  };

  RecordingHandler() { registered.gate_path = "/nonexistent/gpu-0.gate"; }

  absl::StatusOr<Registered> OnRegister(SessionId session, const PeerCredentials& peer,
                                        const RegisterRequest& request) override {
    std::lock_guard<std::mutex> lock(mu);
    registrations.push_back({session, peer, request});
    if (!register_error.ok()) return register_error;
    if (gate_directory.empty()) return registered;
    if (segment == nullptr) {
      absl::StatusOr<std::unique_ptr<GateSegment>> created =
          GateSegment::Create(gate_directory, 0, kMaxSlotsPerGpu, epoch);
      if (!created.ok()) return created.status();
      segment = std::move(*created);
    }
    absl::StatusOr<SlotGrant> grant =
        segment->Allocate(request.role, peer.pid, credit_limit, request.worker_segment);
    if (!grant.ok()) return grant.status();
    slots[session] = grant->slot;
    if (request.role == Role::kForeground) {
      TellBackgrounds();
    } else {
      background_sessions.push_back(session);
    }
    Registered answer;
    answer.slot = grant->slot;
    answer.gate_path = segment->path();
    answer.gate_epoch = segment->epoch() + epoch_skew;
    answer.gate_generation = grant->generation;
    answer.credit_limit = static_cast<std::uint32_t>(credit_limit);
    answer.gate = segment->descriptor();
    if (request.role == Role::kBackground) answer.foregrounds = segment->Foregrounds();
    answer.stream_priority =
        request.role == Role::kForeground ? StreamPriority::kHigh : StreamPriority::kLow;
    return answer;
  }

  absl::Status OnReport(SessionId session, const Message& report) override {
    std::lock_guard<std::mutex> lock(mu);
    reports.emplace_back(session, report);
    if (tell_pending) TellBackgrounds();
    if (const auto* ops = std::get_if<ReportOps>(&report)) {
      for (const OpGroupReport& g : ops->groups) op_groups[session].push_back(g.op_group);
    }
    return report_error;
  }

  // As the agent does when a foreground arrives: the background sessions get the foregrounds'
  // segments (Send works from inside a callback).
  // A foreground that registers before `server` is set is told about on the next report.
  void TellBackgrounds() {
    SocketServer* to = server.load();
    tell_pending = to == nullptr;
    if (to == nullptr) return;
    const Foregrounds foregrounds{segment->Foregrounds()};
    for (SessionId session : background_sessions) (void)to->Send(session, foregrounds);
  }

  void OnClosed(SessionId session, bool said_goodbye) override {
    std::lock_guard<std::mutex> lock(mu);
    closed[session] = said_goodbye;
    if (segment != nullptr && slots.count(session) != 0) segment->Reclaim(slots[session]);
  }

  // Thread-safe reads for tests.
  std::size_t registration_count() {
    std::lock_guard<std::mutex> lock(mu);
    return registrations.size();
  }
  std::size_t closed_count() {
    std::lock_guard<std::mutex> lock(mu);
    return closed.size();
  }
  std::size_t op_count(SessionId session) {
    std::lock_guard<std::mutex> lock(mu);
    return op_groups[session].size();
  }
  SessionId last_session() {
    std::lock_guard<std::mutex> lock(mu);
    return registrations.empty() ? 0 : registrations.back().session;
  }

  std::mutex mu;
  // Configuration (set before the server starts).
  Registered registered;
  absl::Status register_error;
  absl::Status report_error;
  std::string gate_directory;
  std::uint64_t epoch = 1;
  std::uint64_t epoch_skew = 0;  // added to the epoch sent: != 0 makes Attach fail
  std::int32_t credit_limit = 2;
  // Records.
  std::vector<Registration> registrations;
  std::vector<std::pair<SessionId, Message>> reports;
  std::map<SessionId, std::vector<std::uint32_t>> op_groups;
  std::map<SessionId, bool> closed;
  std::unique_ptr<GateSegment> segment;
  std::map<SessionId, std::uint32_t> slots;
  std::vector<SessionId> background_sessions;
  bool tell_pending = false;
  // Set after the server started, for TellBackgrounds.
  std::atomic<SocketServer*> server{nullptr};
};

// Collects log lines.
struct LogLines {
  LogSink Sink() {
    return [this](std::string_view line) {
      std::lock_guard<std::mutex> lock(mu);
      lines.emplace_back(line);
    };
  }
  bool Contains(const std::string& text) {
    std::lock_guard<std::mutex> lock(mu);
    for (const std::string& line : lines) {
      if (line.find(text) != std::string::npos) return true;
    }
    return false;
  }
  std::mutex mu;
  std::vector<std::string> lines;
};

// A blocking worker-side socket that sends frames built by the test (every read waits at most
// 20 s).
class RawClient {
 public:
  explicit RawClient(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
    connected_ = connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
    timeval timeout{20, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }
  ~RawClient() { close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  // The protocol version Send and SendWithDescriptors encode in.
  void set_version(std::uint16_t version) { version_ = version; }

  bool SendBytes(const std::string& bytes) {
    return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  // Encodes `message` with the next sequence number (or `sequence` when given).
  bool Send(const Message& message, std::uint32_t sequence = 0) {
    if (sequence == 0) sequence = next_++;
    absl::StatusOr<std::string> frame = EncodeFrame(message, sequence, version_);
    return frame.ok() && SendBytes(*frame);
  }
  // Encodes `message` with the next sequence number and sends it with its descriptors
  // (SCM_RIGHTS) and, after them, `extra` ones.
  bool SendWithDescriptors(const Message& message, std::vector<SharedFd> extra = {}) {
    absl::StatusOr<std::string> frame = EncodeFrame(message, next_++, version_);
    absl::StatusOr<std::vector<SharedFd>> fds = DescriptorsOf(message);
    if (!frame.ok() || !fds.ok()) return false;
    for (SharedFd& fd : extra) fds->push_back(std::move(fd));
    OutgoingDescriptors outgoing;
    outgoing.Add(0, *std::move(fds));
    std::size_t sent = 0;
    while (sent < frame->size()) {
      const long n = outgoing.Send(fd_, sent, frame->data() + sent, frame->size() - sent);
      if (n <= 0) return false;
      sent += static_cast<std::size_t>(n);
    }
    return true;
  }
  // Register with a typical request (and no worker segment).
  bool Register(Role role = Role::kForeground) { return Send(TypicalRequest(role)); }
  static RegisterRequest TypicalRequest(Role role) {
    RegisterRequest request;
    request.namespace_name = "default";
    request.job = "resnet";
    request.pod = "resnet-0";
    request.role = role;
    return request;
  }
  // The next frame; an error on EOF, timeout or a malformed stream.
  absl::StatusOr<Frame> Receive() {
    for (;;) {
      absl::StatusOr<std::optional<Frame>> next = reader_.Next();
      if (!next.ok()) return next.status();
      if (next->has_value()) {
        // The descriptors that came with it, when any did (placeholders stay otherwise).
        Frame frame = std::move(**next);
        if (!received_.empty()) (void)AdoptDescriptors(&frame.message, &received_);
        return frame;
      }
      char buffer[4096];
      bool truncated = false;
      const long n = ReceiveWithDescriptors(fd_, buffer, sizeof buffer, &received_, &truncated);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        // Non-blocking receive: wait for the socket (SO_RCVTIMEO does not apply to poll).
        pollfd ready{fd_, POLLIN, 0};
        if (poll(&ready, 1, 20'000) == 1) continue;
        return absl::UnavailableError("Resource temporarily unavailable");
      }
      if (n == 0) return absl::UnavailableError("EOF");
      if (n < 0) return absl::UnavailableError(std::strerror(errno));
      reader_.Append(std::string_view(buffer, static_cast<std::size_t>(n)));
    }
  }
  // Reads until the server closes the connection; true on EOF (or a reset), false on a timeout or
  // if more frames arrive than `max_frames`.
  bool ClosedByPeer(int max_frames = 1000) {
    for (int i = 0; i <= max_frames; ++i) {
      absl::StatusOr<Frame> frame = Receive();
      if (!frame.ok()) return frame.status().message() != "Resource temporarily unavailable";
    }
    return false;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  std::uint32_t next_ = 1;
  std::uint16_t version_ = kProtocolVersion;
  FrameReader reader_;
  std::deque<ScopedFd> received_;
};

// A fixture with a SocketServer on agent.sock in a fresh directory, serving a `Handler` (a
// RecordingHandler or one derived from it), its log kept in log_. Tests set options_ before
// StartServer.
template <typename Handler>
class SocketServerFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<::wavepool::testing::TempDir> dir =
        ::wavepool::testing::TempDir::Create("wavepool-sock");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = *std::move(dir);
    options_.path = dir_.File("agent.sock");
    options_.log = log_.Sink();
  }

  void StartServer() {
    absl::StatusOr<std::unique_ptr<SocketServer>> server = SocketServer::Start(options_, &handler_);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }

  // A client that sent `request` and read its Registered (checked).
  std::unique_ptr<RawClient> RegisteredClient(const RegisterRequest& request) {
    auto client = std::make_unique<RawClient>(options_.path);
    EXPECT_TRUE(client->connected());
    EXPECT_TRUE(client->Send(request));
    absl::StatusOr<Frame> answer = client->Receive();
    EXPECT_TRUE(answer.ok()) << answer.status();
    if (answer.ok()) {
      EXPECT_TRUE(std::holds_alternative<Registered>(answer->message));
    }
    return client;
  }

  ::wavepool::testing::TempDir dir_;
  LogLines log_;
  Handler handler_;
  SocketServer::Options options_;
  std::unique_ptr<SocketServer> server_;
};

}  // namespace wavepool::agent::testing

#endif  // WAVEPOOL_TESTS_AGENT_SOCKET_TEST_UTIL_H_
