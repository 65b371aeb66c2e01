// The socket server's admission of connections (socket_server.h): accepting them, the limits
// on connections in all, per group and not yet registered, the deadline to register, and closing
// a connection with everything it held.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "server/identify_queue.h"
#include "server/socket_server_loop.h"
#include "wavepool/agent/socket_server.h"

namespace wavepool::agent {
namespace {

using internal::kListenerToken;

// After EMFILE/ENFILE the listener rests this long instead of spinning on a ready backlog.
constexpr std::chrono::milliseconds kAcceptPause{100};

}  // namespace

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

}  // namespace wavepool::agent
