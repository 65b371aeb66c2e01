// One registered connection from a worker to its agent: a non-blocking unix stream socket, the
// sequence numbers of both directions, the frame reader and the bytes not yet written. Used by
// AgentClient's thread only; not thread-safe. A failed connection is dropped, never repaired.
#ifndef WAVEPOOL_AGENT_CLIENT_SRC_AGENT_CONNECTION_H_
#define WAVEPOOL_AGENT_CLIENT_SRC_AGENT_CONNECTION_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "wavepool/agent/client/gate_memory.h"
#include "wavepool/agent/client/protocol.h"

namespace wavepool::agent::internal {

class AgentConnection {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // Creates the worker's own gate segment (LaunchGate::CreateWorkerSegment), connects to `path`,
  // sends `request` with the segment's descriptor and waits for Registered (stored in
  // `*registered`, with the segment's writable mapping as its own_segment) until
  // `deadline`. While waiting it also watches `wake_fd` (drained when readable) and returns
  // Cancelled as soon as `stop()` says so. It speaks kProtocolVersion, and registers again in
  // kOldestProtocolVersion on a new connection when the agent refuses that version. Unavailable
  // when nothing listens at `path`; DeadlineExceeded without an answer in time; the agent's
  // Error as a status.
  static absl::StatusOr<std::unique_ptr<AgentConnection>> Open(const std::string& path,
                                                               const RegisterRequest& request,
                                                               TimePoint deadline, int wake_fd,
                                                               const std::function<bool()>& stop,
                                                               Registered* registered);
  ~AgentConnection();
  AgentConnection(const AgentConnection&) = delete;
  AgentConnection& operator=(const AgentConnection&) = delete;

  int fd() const { return fd_; }
  // The protocol version the agent accepted.
  std::uint16_t version() const { return version_; }
  std::size_t pending_bytes() const { return output_.size() - written_; }

  // Encodes `message` with the next sequence number and queues it. InvalidArgument if it does
  // not encode (nothing is queued then).
  absl::Status Queue(const Message& message);
  // Writes what the socket accepts now. Unavailable (naming the errno) when the agent is gone.
  absl::Status Write();
  // Reads what has arrived and appends the decoded messages, also those that came before an
  // error. Unavailable on EOF or a socket error; InvalidArgument or FailedPrecondition on a
  // malformed or out-of-order frame.
  absl::Status Read(std::vector<Message>* messages);
  // Writes until everything queued is out (OK) or `deadline` passes (DeadlineExceeded).
  absl::Status Drain(TimePoint deadline);

 private:
  AgentConnection(int fd, std::string path, std::uint16_t version)
      : fd_(fd), path_(std::move(path)), version_(version) {}
  static absl::StatusOr<std::unique_ptr<AgentConnection>> OpenInVersion(
      const std::string& path, const RegisterRequest& request, TimePoint deadline, int wake_fd,
      const std::function<bool()>& stop, std::uint16_t version, Registered* registered);
  absl::Status Failed(const char* syscall, int err) const;

  const int fd_;
  const std::string path_;
  const std::uint16_t version_;
  std::uint32_t next_out_ = 1;
  std::uint32_t expected_in_ = 1;
  FrameReader reader_;
  std::string output_;
  std::size_t written_ = 0;
  std::uint64_t stream_position_ = 0;  // bytes sent over the connection's life
  OutgoingDescriptors outgoing_fds_;
  std::deque<ScopedFd> received_fds_;  // arrived, not yet adopted by a message
  std::vector<Message> backlog_;       // decoded after Registered by Open; returned by Read
};

}  // namespace wavepool::agent::internal

#endif  // WAVEPOOL_AGENT_CLIENT_SRC_AGENT_CONNECTION_H_
