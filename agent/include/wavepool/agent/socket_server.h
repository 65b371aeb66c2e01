// The agent's end of the slow path (protocol.h): a unix stream socket that workers connect to,
// served by one event-loop thread (epoll). The server enforces the protocol; what a session means
// (a gate slot, a policy, the feedback loop) is the SessionHandler's business.
//
// Rules it enforces, each with an Error reply, a log line naming the peer's pid, and the
// connection closed:
//  - InvalidArgument: a frame that does not decode (bad magic, version, type, length over
//    kMaxBodyBytes, a field out of its limits, trailing bytes), a message only the agent sends,
//    a Register whose descriptor did not arrive with it, or a descriptor sent with anything but
//    Register (descriptors beyond Register's one are closed at once: a worker cannot fill the
//    agent's descriptor table).
//  - FailedPrecondition: a sequence number that is not the next one, a first message that is not
//    Register, a second Register, a frame in another protocol version than the Register's (the
//    agent answers each connection in its Register's version).
//  - DeadlineExceeded: no Register within Options::register_timeout, or no answer from
//    IdentifyPeer by then.
//  - ResourceExhausted: more than Options::max_connections connections at once, or more than
//    max_connections_per_group from one connection group (one pod, or one process). A connection
//    beyond max_unregistered that have not registered yet is admitted and closes the oldest of
//    them instead (ResourceExhausted to that one), so silent clients cannot keep a worker from
//    registering.
//  - InvalidArgument: more than max_unregistered_bytes buffered before Register (a Register frame
//    is far smaller): an unregistered connection never holds a large buffer.
//  - The handler's error from OnRegister or OnReport, as it returned it.
// A worker that does not read its socket cannot stall the loop: its unsent bytes are bounded by
// Options::max_output_bytes, beyond which it is disconnected. Error replies are best-effort (the
// bytes the socket takes at once).
//
// Thread safety: Send and Stop are safe from any thread; Send also from inside a handler callback.
// Ownership: the server borrows the handler, which must outlive it. The socket file is removed
// by Stop (if it is still the server's). Stop waits for the IdentifyPeer calls under way.
#ifndef WAVEPOOL_AGENT_SOCKET_SERVER_H_
#define WAVEPOOL_AGENT_SOCKET_SERVER_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "wavepool/agent/client/gate_memory.h"
#include "wavepool/agent/client/log_sink.h"
#include "wavepool/agent/client/protocol.h"
#include "wavepool/agent/peer_identity.h"

namespace wavepool::agent {
namespace internal {
class IdentifyQueue;  // server/identify_queue.h
}  // namespace internal

// The connecting process as the kernel saw it at connect time (SO_PEERCRED).
struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

// Identifies one connection for the life of the server; never reused.
using SessionId = std::uint64_t;

// The agent core's side of the server. Every call but IdentifyPeer comes from the server's thread,
// one at a time, and must not block (no I/O that can stall, no waiting on another thread that
// calls Stop).
//
// A Register is handled in two steps, so that what may block never runs on the server's thread:
// IdentifyPeer on one of the server's identity threads, then, once it answered and only if the
// connection is still open and within its register deadline, OnIdentifiedRegister on the server's
// thread with that answer. Meanwhile the connection's later frames wait unread (bounded by
// Options::max_unregistered_bytes) and every other connection is served.
class SessionHandler {
 public:
  virtual ~SessionHandler() = default;
  // Who the peer of a Register is (peer_identity.h): the step that may block, for up to the
  // identity source's timeout. Called on an identity thread, concurrently with the other calls
  // (and with other IdentifyPeer calls); must not call SocketServer::Stop. nullopt: the handler
  // takes Register at its word. Default: nullopt.
  virtual absl::StatusOr<std::optional<WorkerIdentity>> IdentifyPeer(
      const PeerCredentials& peer, const RegisterRequest& request);
  // The worker registers, as `identity` (IdentifyPeer's answer, an error included). The result is
  // sent back as Registered; an error is sent as Error and the connection closed (OnClosed is not
  // called then: the session never opened). Default: IdentifyPeer's error, else OnRegister.
  virtual absl::StatusOr<Registered> OnIdentifiedRegister(
      SessionId session, const PeerCredentials& peer, const RegisterRequest& request,
      const absl::StatusOr<std::optional<WorkerIdentity>>& identity);
  // A worker registers, for a handler that keeps the default OnIdentifiedRegister.
  virtual absl::StatusOr<Registered> OnRegister(SessionId session, const PeerCredentials& peer,
                                                const RegisterRequest& request) = 0;
  // A ReportOps, ReportMemory, ReportWaveMemory or ReportIteration of a registered session, in the
  // order sent. An error is sent as Error and closes the session.
  virtual absl::Status OnReport(SessionId session, const Message& report) = 0;
  // Exactly once per session whose OnRegister succeeded: `said_goodbye` is true after Goodbye,
  // false after EOF, a protocol or handler error, an output overflow, or Stop.
  virtual void OnClosed(SessionId session, bool said_goodbye) = 0;
  // A connection broke the protocol (and is being closed): a frame that does not decode
  // (InvalidArgument; Unimplemented for another protocol version; ResourceExhausted for an
  // oversized body) or a message out of order (FailedPrecondition). For metrics; may be ignored.
  virtual void OnProtocolError(const PeerCredentials& peer, const absl::Status& error) {
    (void)peer;
    (void)error;
  }
};

class SocketServer {
 public:
  struct Options {
    std::string path;                      // the socket file; < 108 bytes
    mode_t mode = 0660;                    // who may connect (write permission on the file)
    gid_t group = static_cast<gid_t>(-1);  // the file's group; -1 keeps the agent's
    std::size_t max_connections = 256;
    // Connections are counted per group (the agent: a pod's UID, read from the process's
    // cgroup, and at most 16 per pod; by default the peer's pid), so that one tenant cannot hold
    // them all.
    std::size_t max_connections_per_group = 256;
    std::function<std::string(const PeerCredentials&)> connection_group;  // null: by pid
    std::size_t max_unregistered = 64;
    std::size_t max_unregistered_bytes = 16 * 1024;
    // A connection that has not registered by then is closed (a silent client cannot hold one of
    // max_connections), also one whose IdentifyPeer has not answered by then. Registered sessions
    // have no idle limit: a worker may be quiet for long, and its death always shows as EOF on a
    // unix socket.
    std::chrono::milliseconds register_timeout{5000};
    // Threads that run IdentifyPeer: each slow answer holds one, and Registers wait for a free
    // one in arrival order (at most max_unregistered of them).
    std::size_t identity_threads = 2;
    // Unsent bytes queued for one worker (Registered, Policy, Error) before it is disconnected.
    std::size_t max_output_bytes = 256 * 1024;
    LogSink log = LogToStderr;
  };

  // Binds and listens on options.path and starts the loop. A leftover socket file that nobody
  // listens on is replaced; FailedPrecondition if an agent listens on it or the path is not a
  // socket; InvalidArgument for a bad path or option; the errno-derived code (PermissionDenied,
  // ...) when a syscall fails, naming the path and the syscall.
  // REQUIRES: handler != nullptr.
  static absl::StatusOr<std::unique_ptr<SocketServer>> Start(Options options,
                                                             SessionHandler* handler);
  // Stop()s. REQUIRES: not called from a SessionHandler callback (Stop may be).
  ~SocketServer();
  SocketServer(const SocketServer&) = delete;
  SocketServer& operator=(const SocketServer&) = delete;

  // Queues `policy` for a registered session; the loop sends it in order after what was queued
  // before. NotFound if the session is not open (or closes before the loop gets to it, in which
  // case it is dropped); InvalidArgument if the policy does not encode.
  absl::Status Send(SessionId session, const Policy& policy);
  // Queues `foregrounds` (with its descriptors) the same way; InvalidArgument if it does not
  // encode or a segment has no descriptor.
  absl::Status Send(SessionId session, const Foregrounds& foregrounds);
  // Closes every connection (OnClosed for registered sessions), stops and joins the loop and the
  // identity threads (after the IdentifyPeer calls under way), removes the socket file.
  // Idempotent. From inside a handler callback it only asks the loop to stop (it cannot join its
  // own thread); the destructor joins later. REQUIRES: not called from IdentifyPeer.
  void Stop();

  const std::string& path() const { return options_.path; }
  // Open connections, registered or not.
  std::size_t connection_count() const { return connection_count_.load(std::memory_order_relaxed); }

 private:
  class Loop;

  struct Outgoing {
    SessionId session = 0;
    std::string frame;
    std::vector<SharedFd> fds;
  };

  SocketServer(Options options, SessionHandler* handler);
  absl::Status Enqueue(SessionId session, const Message& message);

  const Options options_;
  SessionHandler* const handler_;
  std::unique_ptr<internal::IdentifyQueue> identify_;  // IdentifyPeer, off the loop
  std::unique_ptr<Loop> loop_;  // owns the sockets; touched only by thread_ after Start
  std::thread thread_;
  int wake_fd_ = -1;
  std::atomic<bool> stop_requested_{false};
  std::atomic<std::size_t> connection_count_{0};
  absl::Mutex stop_mu_ ABSL_ACQUIRED_BEFORE(mu_);  // serialises Stop

  // Sends queued by any thread for the loop.
  absl::Mutex mu_;
  std::unordered_set<SessionId> open_sessions_ ABSL_GUARDED_BY(mu_);  // registered, or registering
  std::vector<Outgoing> outbox_ ABSL_GUARDED_BY(mu_);  // encoded Policy and Foregrounds frames
  std::size_t outbox_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace wavepool::agent

#endif  // WAVEPOOL_AGENT_SOCKET_SERVER_H_
