#include "wavepool/agent/socket_server.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/identify_queue.h"
#include "server/unix_listener.h"
#include "wavepool/base/errno_error.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::agent {
namespace {

using SteadyClock = std::chrono::steady_clock;

// epoll data of the two descriptors that are not connections; session ids start above them.
constexpr std::uint64_t kListenerToken = 0;
constexpr std::uint64_t kWakeToken = 1;
constexpr std::size_t kReadChunkBytes = 64 * 1024;
// Reads per readiness event and connection: a flooding worker yields to the others after 1 MiB
// (epoll is level-triggered, so the rest is read on the next turn).
constexpr int kReadsPerEvent = 16;
// After EMFILE/ENFILE the listener rests this long instead of spinning on a ready backlog.
constexpr std::chrono::milliseconds kAcceptPause{100};
// Policies queued by Send and not yet taken by the loop, over all sessions.
constexpr std::size_t kMaxOutboxBytes = 16 << 20;

// A frame the agent encoded, given the connection's version and its next sequence number (the
// agent's messages are the same in every version it speaks).
void PatchHeader(std::string& frame, std::uint16_t version, std::uint32_t sequence) {
  for (std::size_t i = 0; i < 2; ++i) frame[4 + i] = static_cast<char>(version >> (8 * i));
  for (std::size_t i = 0; i < 4; ++i) frame[8 + i] = static_cast<char>(sequence >> (8 * i));
}

}  // namespace

absl::StatusOr<std::optional<WorkerIdentity>> SessionHandler::IdentifyPeer(const PeerCredentials&,
                                                                           const RegisterRequest&) {
  return std::optional<WorkerIdentity>();
}

absl::StatusOr<Registered> SessionHandler::OnIdentifiedRegister(
    SessionId session, const PeerCredentials& peer, const RegisterRequest& request,
    const absl::StatusOr<std::optional<WorkerIdentity>>& identity) {
  if (!identity.ok()) return identity.status();
  return OnRegister(session, peer, request);
}

// Owns the listener, the epoll instance and every connection; runs on the server's thread only.
class SocketServer::Loop {
 public:
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
  SessionId next_id_ = kWakeToken + 1;
  bool accept_paused_ = false;
  SteadyClock::time_point accept_resume_;
};

void SocketServer::Loop::Log(const Connection& c, std::string_view what) const {
  if (!server_->options_.log) return;
  server_->options_.log(
      absl::StrFormat("agent socket: pid %d session %d: %s", c.peer.pid, c.id, std::string(what)));
}

void SocketServer::Loop::SetEvents(int fd, std::uint64_t token, std::uint32_t events) {
  epoll_event event{};
  event.events = events;
  event.data.u64 = token;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &event);
}

void SocketServer::Loop::Run() {
  epoll_event events[64];
  while (!server_->stop_requested_.load(std::memory_order_acquire)) {
    const int n = epoll_wait(epoll_fd_, events, 64, NextTimeoutMs());
    if (n < 0 && errno != EINTR) {
      if (server_->options_.log) {
        server_->options_.log(absl::StrCat("agent socket: epoll_wait: ", std::strerror(errno)));
      }
      break;
    }
    for (int i = 0; i < n; ++i) {
      const std::uint64_t token = events[i].data.u64;
      if (token == kListenerToken) {
        AcceptAll();
        continue;
      }
      if (token == kWakeToken) {
        eventfd_t value;
        eventfd_read(server_->wake_fd_, &value);
        continue;
      }
      auto it = connections_.find(token);  // closed earlier in this batch: gone
      if (it == connections_.end()) continue;
      Connection& c = *it->second;
      if ((events[i].events & EPOLLOUT) != 0 && !Flush(c)) continue;
      if ((events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) != 0) OnReadable(c);
    }
    DeliverOutbox();
    DeliverIdentities();
    ExpireRegistrations();
    if (accept_paused_ && SteadyClock::now() >= accept_resume_) {
      accept_paused_ = false;
      SetEvents(listener_.fd(), kListenerToken, EPOLLIN);
    }
  }
  std::vector<SessionId> open;
  for (const auto& [id, connection] : connections_) open.push_back(id);
  for (SessionId id : open) Close(*connections_.at(id), false);
}

int SocketServer::Loop::NextTimeoutMs() const {
  std::optional<SteadyClock::time_point> next;
  if (!register_deadlines_.empty()) next = register_deadlines_.front().first;
  if (accept_paused_ && (!next || accept_resume_ < *next)) next = accept_resume_;
  if (!next) return -1;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - SteadyClock::now());
  return static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 60'000));
}

// --- Connections ---------------------------------------------------------------------------------

void SocketServer::Loop::AcceptAll() {
  for (;;) {
    const int fd = accept4(listener_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      Admit(fd);
      continue;
    }
    const int err = errno;
    if (err == EINTR || err == ECONNABORTED || err == EPROTO) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) return;
    // Out of descriptors or memory: rest instead of spinning on the ready backlog.
    if (server_->options_.log) {
      server_->options_.log(absl::StrCat("agent socket: accept: ", std::strerror(err),
                                         "; pausing new connections for ", kAcceptPause.count(),
                                         " ms"));
    }
    accept_paused_ = true;
    accept_resume_ = SteadyClock::now() + kAcceptPause;
    SetEvents(listener_.fd(), kListenerToken, 0);
    return;
  }
}

void SocketServer::Loop::Admit(int fd) {
  auto c = std::make_unique<Connection>();
  c->id = next_id_++;
  c->fd = fd;
  ucred credentials{};
  socklen_t length = sizeof credentials;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0) {
    c->peer = {credentials.pid, credentials.uid, credentials.gid};
  }
  const Options& o = server_->options_;
  c->group = o.connection_group ? o.connection_group(c->peer) : absl::StrCat("pid:", c->peer.pid);
  std::string refused;
  if (connections_.size() >= o.max_connections) {
    refused = absl::StrCat("the agent serves at most ", o.max_connections, " connections");
  } else if (auto group = group_connections_.find(c->group);
             group != group_connections_.end() && group->second >= o.max_connections_per_group) {
    refused = absl::StrCat("at most ", o.max_connections_per_group, " connections from ", c->group);
  }
  if (!refused.empty()) {
    // Not admitted: answer (best-effort) and close without a session.
    Log(*c, absl::StrCat("refused: ", refused));
    absl::StatusOr<std::string> error =
        EncodeFrame(ToErrorReply(absl::ResourceExhaustedError(refused)), 1);
    if (error.ok()) (void)send(fd, error->data(), error->size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    close(fd);
    return;
  }
  if (unregistered_ >= o.max_unregistered) CloseOldestUnregistered();
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = c->id;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
    Log(*c, absl::StrCat("epoll_ctl: ", std::strerror(errno), "; closing"));
    close(fd);
    return;
  }
  register_deadlines_.emplace_back(SteadyClock::now() + server_->options_.register_timeout, c->id);
  ++group_connections_[c->group];
  ++unregistered_;
  connections_.emplace(c->id, std::move(c));
  server_->connection_count_.store(connections_.size(), std::memory_order_relaxed);
}

void SocketServer::Loop::CloseOldestUnregistered() {
  // At the limit the oldest connection that has not registered goes: it has had the longest to
  // send its Register (a worker sends it at once), and refusing the new one instead would let a
  // few pods that connect and stay silent keep every other worker from registering.
  for (const auto& [deadline, id] : register_deadlines_) {  // in the order they connected
    auto it = connections_.find(id);
    if (it == connections_.end() || it->second->registered) continue;
    Fail(*it->second, absl::ResourceExhaustedError(absl::StrCat(
                          server_->options_.max_unregistered,
                          " connections have not registered yet; closing the oldest, this one")));
    return;  // Fail erased it: the iteration ends here
  }
}

void SocketServer::Loop::Close(Connection& c, bool said_goodbye) {
  const SessionId id = c.id;
  const bool registered = c.registered;
  if (!registered) --unregistered_;
  if (c.identifying) server_->identify_->Cancel(id);
  if (auto group = group_connections_.find(c.group);
      group != group_connections_.end() && --group->second == 0) {
    group_connections_.erase(group);
  }
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  close(c.fd);
  connections_.erase(id);  // destroys c
  server_->connection_count_.store(connections_.size(), std::memory_order_relaxed);
  if (registered) {
    {
      absl::MutexLock lock(&server_->mu_);
      server_->open_sessions_.erase(id);
    }
    server_->handler_->OnClosed(id, said_goodbye);
  }
}

bool SocketServer::Loop::OnReadable(Connection& c) {
  char buffer[kReadChunkBytes];
  for (int reads = 0; reads < kReadsPerEvent; ++reads) {
    bool truncated = false;
    const long n = ReceiveWithDescriptors(c.fd, buffer, sizeof buffer, &c.received_fds, &truncated);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
      Log(c, absl::StrCat("recv: ", std::strerror(errno), "; closing"));
      Close(c, false);
      return false;
    }
    if (n == 0) {
      if (c.registered) Log(c, "closed without Goodbye (the worker exited or died)");
      Close(c, false);
      return false;
    }
    // Only Register carries a descriptor: more than one waiting is a worker stuffing the agent's
    // descriptor table.
    if (truncated || c.received_fds.size() > 1) {
      return Fail(c,
                  absl::InvalidArgumentError(
                      absl::StrCat("descriptors: ", c.received_fds.size(), truncated ? "+" : "",
                                   " received; only Register carries one (its worker segment)")),
                  /*protocol_error=*/true);
    }
    c.reader.Append(std::string_view(buffer, static_cast<std::size_t>(n)));
    if (!ProcessFrames(c)) return false;
    // What is left is a partial frame, or frames sent after a Register that is being identified:
    // before the session is registered it must stay small.
    if (!c.registered && c.reader.buffered_bytes() > server_->options_.max_unregistered_bytes) {
      const std::size_t limit = server_->options_.max_unregistered_bytes;
      return Fail(
          c,
          absl::InvalidArgumentError(
              c.identifying
                  ? absl::StrCat(
                        c.reader.buffered_bytes(),
                        " bytes sent after Register before the agent answered it (at most ", limit,
                        " may wait)")
                  : absl::StrCat(c.reader.buffered_bytes(),
                                 " bytes before Register (a Register takes at most ", limit, ")")),
          /*protocol_error=*/true);
    }
    if (static_cast<std::size_t>(n) < sizeof buffer) return true;
  }
  return true;
}

bool SocketServer::Loop::ProcessFrames(Connection& c) {
  // While Register is being identified the frames after it wait: their meaning depends on it.
  while (!c.identifying) {
    absl::StatusOr<std::optional<Frame>> next = c.reader.Next();
    if (!next.ok()) return Fail(c, next.status(), /*protocol_error=*/true);
    if (!next->has_value()) return true;
    if (!HandleFrame(c, **next)) return false;
  }
  return true;
}

bool SocketServer::Loop::HandleFrame(Connection& c, Frame& frame) {
  if (frame.sequence != c.expected_in) {
    return Fail(c,
                absl::FailedPreconditionError(absl::StrCat(
                    "frame.sequence: expected ", c.expected_in, ", got ", frame.sequence)),
                /*protocol_error=*/true);
  }
  c.expected_in = NextSequence(c.expected_in);
  if (!c.registered) {
    c.version = frame.version;
  } else if (frame.version != c.version) {
    return Fail(c,
                absl::FailedPreconditionError(
                    absl::StrCat("frame.version: ", frame.version,
                                 ", but the worker registered in version ", c.version)),
                /*protocol_error=*/true);
  }
  const MessageType type = TypeOf(frame.message);
  const std::string name(MessageTypeName(type));
  switch (type) {
    case MessageType::kRegister:
      if (c.registered) {
        return Fail(c, absl::FailedPreconditionError("Register: the session is registered already"),
                    /*protocol_error=*/true);
      }
      if (absl::Status adopted = AdoptDescriptors(&frame.message, &c.received_fds); !adopted.ok()) {
        return Fail(c, adopted, /*protocol_error=*/true);
      }
      return Register(c, std::get<RegisterRequest>(std::move(frame.message)));
    case MessageType::kReportOps:
    case MessageType::kReportMemory:
    case MessageType::kReportWaveMemory:
    case MessageType::kReportIteration:
    case MessageType::kGoodbye:
      break;
    case MessageType::kRegistered:
    case MessageType::kError:
    case MessageType::kPolicy:
    case MessageType::kForegrounds:
      return Fail(
          c, absl::InvalidArgumentError(absl::StrCat(name, ": only the agent sends this message")),
          /*protocol_error=*/true);
  }
  if (!c.received_fds.empty()) {
    return Fail(c,
                absl::InvalidArgumentError(
                    absl::StrCat(name, ": sent with a descriptor; only Register carries one")),
                /*protocol_error=*/true);
  }
  if (!c.registered) {
    return Fail(c,
                absl::FailedPreconditionError(
                    absl::StrCat(name, " before Register: the first message must be Register")),
                /*protocol_error=*/true);
  }
  if (type == MessageType::kGoodbye) {
    Close(c, true);
    return false;
  }
  if (absl::Status handled = server_->handler_->OnReport(c.id, frame.message); !handled.ok()) {
    return Fail(c, handled);
  }
  return true;
}

bool SocketServer::Loop::Register(Connection& c, RegisterRequest request) {
  // Who the peer is may take the identity source a while: asked off the loop (DeliverIdentities
  // finishes). The identity threads never see the worker's segment.
  internal::IdentifyQueue::Request identify{c.id, c.peer, request};
  identify.request.worker_segment = SharedFd();
  c.identifying = std::move(request);
  server_->identify_->Submit(std::move(identify));
  return true;
}

bool SocketServer::Loop::FinishRegister(
    Connection& c, const absl::StatusOr<std::optional<WorkerIdentity>>& identity) {
  const RegisterRequest request = *std::exchange(c.identifying, std::nullopt);
  {
    absl::MutexLock lock(&server_->mu_);
    server_->open_sessions_.insert(c.id);  // so that OnIdentifiedRegister may Send already
  }
  absl::StatusOr<Registered> registered =
      server_->handler_->OnIdentifiedRegister(c.id, c.peer, request, identity);
  if (!registered.ok()) {
    {
      absl::MutexLock lock(&server_->mu_);
      server_->open_sessions_.erase(c.id);
    }
    return Fail(c, registered.status());
  }
  c.registered = true;  // from here on OnClosed is owed
  --unregistered_;
  absl::StatusOr<std::string> frame = EncodeFrame(*registered, c.next_out);
  absl::StatusOr<std::vector<SharedFd>> fds = DescriptorsOf(*registered);
  if (!frame.ok() || !fds.ok()) {
    return Fail(c, absl::InternalError(
                       absl::StrCat("the agent's Registered does not encode: ",
                                    (frame.ok() ? fds.status() : frame.status()).message())));
  }
  return Queue(c, std::move(*frame), *std::move(fds)) && Flush(c);
}

// --- Output ------------------------------------------------------------------------------------

bool SocketServer::Loop::Queue(Connection& c, std::string frame, std::vector<SharedFd> fds) {
  PatchHeader(frame, c.version, c.next_out);
  c.next_out = NextSequence(c.next_out);
  // The descriptors travel with the frame's first byte.
  c.outgoing_fds.Add(c.stream_position + (c.output.size() - c.written), std::move(fds));
  c.output += frame;
  const std::size_t unsent = c.output.size() - c.written;
  if (unsent <= server_->options_.max_output_bytes) return true;
  Log(c, absl::StrCat(unsent, " bytes unsent (limit ", server_->options_.max_output_bytes,
                      "): the worker does not read its socket; closing"));
  Close(c, false);
  return false;
}

bool SocketServer::Loop::Flush(Connection& c) {
  while (c.written < c.output.size()) {
    const long n = c.outgoing_fds.Send(c.fd, c.stream_position, c.output.data() + c.written,
                                       c.output.size() - c.written);
    if (n >= 0) {
      c.written += static_cast<std::size_t>(n);
      c.stream_position += static_cast<std::uint64_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      Log(c, absl::StrCat("send: ", std::strerror(errno), "; closing"));
      Close(c, false);
      return false;
    }
    if (c.written > c.output.size() / 2) {  // keep the buffer about as big as what is unsent
      c.output.erase(0, c.written);
      c.written = 0;
    }
    if (!c.writing) SetEvents(c.fd, c.id, EPOLLIN | EPOLLOUT);
    c.writing = true;
    return true;
  }
  c.output.clear();
  c.written = 0;
  if (c.writing) SetEvents(c.fd, c.id, EPOLLIN);
  c.writing = false;
  return true;
}

bool SocketServer::Loop::Fail(Connection& c, const absl::Status& error, bool protocol_error) {
  Log(c, absl::StrCat(error.ToString(), "; closing"));
  if (protocol_error) server_->handler_->OnProtocolError(c.peer, error);
  absl::StatusOr<std::string> reply = EncodeFrame(ToErrorReply(error), c.next_out, c.version);
  if (reply.ok()) {
    c.output += *reply;           // past the output limit if need be: it is the last message
    if (!Flush(c)) return false;  // best-effort: whatever the socket takes now
  }
  Close(c, false);
  return false;
}

void SocketServer::Loop::DeliverOutbox() {
  std::vector<Outgoing> outbox;
  {
    absl::MutexLock lock(&server_->mu_);
    outbox.swap(server_->outbox_);
    server_->outbox_bytes_ = 0;
  }
  for (Outgoing& out : outbox) {
    auto it = connections_.find(out.session);
    if (it == connections_.end() || !it->second->registered) continue;  // closed meanwhile
    Connection& c = *it->second;
    if (Queue(c, std::move(out.frame), std::move(out.fds))) Flush(c);
  }
}

void SocketServer::Loop::DeliverIdentities() {
  for (internal::IdentifyQueue::Answer& answer : server_->identify_->TakeAnswers()) {
    auto it = connections_.find(answer.session);
    // Closed meanwhile (EOF, its deadline, the unregistered limit): nobody waits for it.
    if (it == connections_.end() || !it->second->identifying) continue;
    Connection& c = *it->second;
    // The frames that arrived meanwhile are handled now, in order.
    if (FinishRegister(c, answer.identity)) ProcessFrames(c);
  }
}

void SocketServer::Loop::ExpireRegistrations() {
  const auto now = SteadyClock::now();
  while (!register_deadlines_.empty() && register_deadlines_.front().first <= now) {
    const SessionId id = register_deadlines_.front().second;
    register_deadlines_.pop_front();
    auto it = connections_.find(id);
    if (it == connections_.end() || it->second->registered) continue;
    const auto timeout = server_->options_.register_timeout.count();
    Fail(*it->second,
         absl::DeadlineExceededError(
             it->second->identifying
                 ? absl::StrCat("Register: the identity of process ", it->second->peer.pid,
                                " was not known within ", timeout,
                                " ms of connecting (the agent's identity source is slow or "
                                "unreachable); try again")
                 : absl::StrCat("no Register within ", timeout, " ms of connecting")));
  }
}

// --- SocketServer --------------------------------------------------------------------------------

SocketServer::SocketServer(Options options, SessionHandler* handler)
    : options_(std::move(options)), handler_(handler) {}

absl::StatusOr<std::unique_ptr<SocketServer>> SocketServer::Start(Options options,
                                                                  SessionHandler* handler) {
  if (handler == nullptr) return absl::InvalidArgumentError("SocketServer: handler is null");
  if (options.max_connections == 0 || options.max_connections_per_group == 0 ||
      options.max_unregistered == 0) {
    return absl::InvalidArgumentError(
        "SocketServer::Options.max_connections, max_connections_per_group and max_unregistered: "
        "must be >= 1");
  }
  if (options.max_unregistered_bytes < 1024) {
    return absl::InvalidArgumentError(
        absl::StrCat("SocketServer::Options.max_unregistered_bytes: must be >= 1024, got ",
                     options.max_unregistered_bytes));
  }
  if (options.register_timeout.count() <= 0) {
    return absl::InvalidArgumentError("SocketServer::Options.register_timeout: must be > 0");
  }
  if (options.identity_threads < 1 || options.identity_threads > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("SocketServer::Options.identity_threads: must be in [1, 64], got ",
                     options.identity_threads));
  }
  if (options.max_output_bytes < 1024) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SocketServer::Options.max_output_bytes: must be >= 1024, got ", options.max_output_bytes));
  }
  WAVEPOOL_ASSIGN_OR_RETURN(
      internal::UnixListener listener,
      internal::UnixListener::Listen(options.path, options.mode, options.group));
  const int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd < 0) return ErrnoError(errno, "agent socket: epoll_create1");
  std::unique_ptr<SocketServer> server(new SocketServer(std::move(options), handler));
  const int listener_fd = listener.fd();
  server->loop_ = std::make_unique<Loop>(server.get(), std::move(listener), epoll_fd);
  server->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (server->wake_fd_ < 0) return ErrnoError(errno, "agent socket: eventfd");
  server->identify_ = std::make_unique<internal::IdentifyQueue>(
      handler, server->options_.identity_threads, [s = server.get()] {
        absl::MutexLock lock(&s->mu_);
        if (s->wake_fd_ >= 0) eventfd_write(s->wake_fd_, 1);
      });
  for (auto [fd, token] :
       {std::pair{listener_fd, kListenerToken}, {server->wake_fd_, kWakeToken}}) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = token;
    if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) != 0) {
      return ErrnoError(errno, "agent socket: epoll_ctl");
    }
  }
  server->thread_ = std::thread([s = server.get()] { s->loop_->Run(); });
  return server;
}

SocketServer::~SocketServer() { Stop(); }

absl::Status SocketServer::Send(SessionId session, const Policy& policy) {
  return Enqueue(session, policy);
}

absl::Status SocketServer::Send(SessionId session, const Foregrounds& foregrounds) {
  return Enqueue(session, foregrounds);
}

absl::Status SocketServer::Enqueue(SessionId session, const Message& message) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::string frame,
                            EncodeFrame(message, 1));  // the loop sets the sequence
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<SharedFd> fds, DescriptorsOf(message));
  {
    absl::MutexLock lock(&mu_);
    if (open_sessions_.count(session) == 0) {
      return absl::NotFoundError(absl::StrCat("agent socket: session ", session, " is not open"));
    }
    if (outbox_bytes_ + frame.size() > kMaxOutboxBytes) {
      return absl::ResourceExhaustedError("agent socket: the send queue is full");
    }
    outbox_bytes_ += frame.size();
    outbox_.push_back({session, std::move(frame), std::move(fds)});
    eventfd_write(wake_fd_, 1);  // under mu_: Stop closes it under mu_
  }
  return absl::OkStatus();
}

void SocketServer::Stop() {
  stop_requested_.store(true, std::memory_order_release);
  if (std::this_thread::get_id() == thread_.get_id()) return;  // from a handler callback
  absl::MutexLock lock(&stop_mu_);
  if (wake_fd_ >= 0) eventfd_write(wake_fd_, 1);
  if (thread_.joinable()) thread_.join();
  if (identify_ != nullptr) identify_->Stop();  // after the loop: it no longer submits
  loop_.reset();                                // closes the sockets and removes the socket file
  absl::MutexLock sends(&mu_);
  open_sessions_.clear();
  if (wake_fd_ >= 0) close(std::exchange(wake_fd_, -1));
}

}  // namespace wavepool::agent
