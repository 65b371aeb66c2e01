// The agent's unix socket server (socket_server.h): its start, stop and sends from any thread,
// and the event loop that serves every connection on the server's thread.
#include "wavepool/agent/socket_server.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/identify_queue.h"
#include "server/socket_server_loop.h"
#include "server/unix_listener.h"
#include "wavepool/base/errno_error.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::agent {
namespace {

using internal::kListenerToken;
using internal::kWakeToken;

// Policies queued by Send and not yet taken by the loop, over all sessions.
constexpr std::size_t kMaxOutboxBytes = 16 << 20;

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

// --- The event loop ------------------------------------------------------------------------------

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
