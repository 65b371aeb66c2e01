// The socket server's event loop (wavepool/agent/socket_server.h), shared by the files that
// implement it. Private to the server.
#ifndef WAVEPOOL_AGENT_SRC_SERVER_SOCKET_SERVER_LOOP_H_
#define WAVEPOOL_AGENT_SRC_SERVER_SOCKET_SERVER_LOOP_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/unix_listener.h"
#include "wavepool/agent/socket_server.h"

namespace wavepool::agent {
namespace internal {

// epoll data of the two descriptors that are not connections; session ids start above them.
inline constexpr std::uint64_t kListenerToken = 0;
inline constexpr std::uint64_t kWakeToken = 1;

}  // namespace internal

// Owns the listener, the epoll instance and every connection; runs on the server's thread only
// and is touched by no other. Its member functions live in three files: socket_server.cpp (the
// event loop), connection_admission.cpp (accepting, limits, deadlines, closing) and
// session_protocol.cpp (reading frames, the protocol's rules, Register, output).
class SocketServer::Loop {
 public:
  using SteadyClock = std::chrono::steady_clock;

  Loop(SocketServer* server, internal::UnixListener listener, int epoll_fd)
      : server_(server), listener_(std::move(listener)), epoll_fd_(epoll_fd) {}
  ~Loop() {
    for (auto& [id, connection] : connections_) close(connection->fd);
    close(epoll_fd_);
  }

  void Run();

 private:
  struct Connection {
    SessionId id = 0;
    int fd = -1;
    PeerCredentials peer;
    std::string group;  // Options::connection_group
    FrameReader reader;
    std::uint32_t expected_in = 1;
    std::uint32_t next_out = 1;
    // The worker's protocol version: its Register's, which every later frame keeps and every
    // answer is sent in.
    std::uint16_t version = kProtocolVersion;
    bool registered = false;
    // Register arrived and waits for IdentifyPeer's answer: later frames stay unread till then.
    std::optional<RegisterRequest> identifying;
    bool writing = false;  // EPOLLOUT is armed
    std::string output;
    std::size_t written = 0;
    std::uint64_t stream_position = 0;  // bytes sent over the connection's life
    OutgoingDescriptors outgoing_fds;   // travel with Registered and Foregrounds
    std::deque<ScopedFd> received_fds;  // arrived, not yet adopted by Register
  };

  // Each of these returns false once it closed `c` (which is then destroyed).
  bool OnReadable(Connection& c);
  bool ProcessFrames(Connection& c);
  bool HandleFrame(Connection& c, Frame& frame);
  bool Register(Connection& c, RegisterRequest request);
  bool FinishRegister(Connection& c, const absl::StatusOr<std::optional<WorkerIdentity>>& identity);
  bool Queue(Connection& c, std::string frame, std::vector<SharedFd> fds = {});
  bool Flush(Connection& c);
  bool Fail(Connection& c, const absl::Status& error, bool protocol_error = false);
  void Close(Connection& c, bool said_goodbye);

  void AcceptAll();
  void Admit(int fd);
  void CloseOldestUnregistered();
  void DeliverOutbox();
  void DeliverIdentities();
  void ExpireRegistrations();
  int NextTimeoutMs() const;
  void SetEvents(int fd, std::uint64_t token, std::uint32_t events);
  void Log(const Connection& c, std::string_view what) const;

  SocketServer* const server_;
  const internal::UnixListener listener_;
  const int epoll_fd_;
  std::unordered_map<SessionId, std::unique_ptr<Connection>> connections_;
  std::unordered_map<std::string, std::size_t> group_connections_;
  std::size_t unregistered_ = 0;
  std::deque<std::pair<SteadyClock::time_point, SessionId>> register_deadlines_;
  SessionId next_id_ = internal::kWakeToken + 1;
  bool accept_paused_ = false;
  SteadyClock::time_point accept_resume_;
};

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_SRC_SERVER_SOCKET_SERVER_LOOP_H_
