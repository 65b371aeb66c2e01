#include "agent_connection.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "wavepool/agent/client/launch_gate.h"
#include "wavepool/base/errno_error.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::agent::internal {
namespace {

constexpr std::size_t kReadChunkBytes = 64 * 1024;

// Milliseconds from now until `deadline`, rounded up, for poll(2); 0 once it passed.
int PollTimeoutMs(AgentConnection::TimePoint deadline) {
  const auto left = deadline - std::chrono::steady_clock::now();
  if (left <= left.zero()) return 0;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<std::int64_t>(ms, 60'000));
}

void DrainEventFd(int fd) {
  eventfd_t value;
  while (eventfd_read(fd, &value) == 0) {
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<AgentConnection>> AgentConnection::Open(
    const std::string& path, const RegisterRequest& request, TimePoint deadline, int wake_fd,
    const std::function<bool()>& stop, Registered* registered) {
  absl::StatusOr<std::unique_ptr<AgentConnection>> connection =
      OpenInVersion(path, request, deadline, wake_fd, stop, kProtocolVersion, registered);
  // An agent of the previous release refuses the version (its Error comes in its own).
  if (absl::IsUnimplemented(connection.status()) &&
      absl::StrContains(connection.status().message(), "frame.version")) {
    return OpenInVersion(path, request, deadline, wake_fd, stop, kOldestProtocolVersion,
                         registered);
  }
  return connection;
}

absl::StatusOr<std::unique_ptr<AgentConnection>> AgentConnection::OpenInVersion(
    const std::string& path, const RegisterRequest& request, TimePoint deadline, int wake_fd,
    const std::function<bool()>& stop, std::uint16_t version, Registered* registered) {
  WAVEPOOL_ASSIGN_OR_RETURN(OwnSegment own, LaunchGate::CreateWorkerSegment());
  RegisterRequest with_segment = request;
  with_segment.worker_segment = own.fd;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("agent socket path \"", path, "\": must be 1..",
                                                   sizeof(address.sun_path) - 1, " bytes"));
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError(errno, "agent socket: socket");
  std::unique_ptr<AgentConnection> connection(new AgentConnection(fd, path, version));
  // A unix socket connects at once or fails: EAGAIN means the agent's backlog is full.
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    const int err = errno;
    return ErrnoError(absl::StatusCode::kUnavailable, err,
                      absl::StrCat("connect to the agent at ", path));
  }
  WAVEPOOL_RETURN_IF_ERROR(connection->Queue(with_segment));
  std::vector<Message> messages;
  for (;;) {
    WAVEPOOL_RETURN_IF_ERROR(connection->Write());
    pollfd fds[2] = {
        {fd, static_cast<short>(POLLIN | (connection->pending_bytes() ? POLLOUT : 0)), 0},
        {wake_fd, POLLIN, 0}};
    const int ready = poll(fds, 2, PollTimeoutMs(deadline));
    if (ready < 0 && errno != EINTR) return connection->Failed("poll", errno);
    if (fds[1].revents != 0) DrainEventFd(wake_fd);
    if (stop()) return absl::CancelledError("agent connection: closing");
    if (fds[0].revents != 0) {
      const absl::Status read = connection->Read(&messages);
      for (std::size_t i = 0; i < messages.size(); ++i) {
        Message& message = messages[i];
        if (auto* answer = std::get_if<Registered>(&message)) {
          *registered = std::move(*answer);
          registered->own_segment = own.mapping;
          // What came right after (a Policy, Foregrounds) is the connection's to deliver.
          connection->backlog_.assign(std::make_move_iterator(messages.begin() + i + 1),
                                      std::make_move_iterator(messages.end()));
          return connection;
        }
        if (auto* error = std::get_if<ErrorReply>(&message)) {
          const absl::Status refused = ToStatus(*error);
          return absl::Status(refused.code(), absl::StrCat("agent at ", path, " refused Register: ",
                                                           std::string(refused.message())));
        }
        return absl::FailedPreconditionError(
            absl::StrCat("agent at ", path, ": sent ",
                         std::string(MessageTypeName(TypeOf(message))), " before Registered"));
      }
      WAVEPOOL_RETURN_IF_ERROR(read);
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("agent at ", path, ": no answer to Register in time"));
    }
  }
}

AgentConnection::~AgentConnection() { close(fd_); }

absl::Status AgentConnection::Failed(const char* syscall, int err) const {
  return ErrnoError(absl::StatusCode::kUnavailable, err,
                    absl::StrCat("agent connection ", path_, ": ", syscall));
}

absl::Status AgentConnection::Queue(const Message& message) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::string frame, EncodeFrame(message, next_out_, version_));
  WAVEPOOL_ASSIGN_OR_RETURN(std::vector<SharedFd> fds, DescriptorsOf(message));
  if (written_ == output_.size()) {
    output_.clear();
    written_ = 0;
  }
  // The descriptors travel with the frame's first byte.
  outgoing_fds_.Add(stream_position_ + (output_.size() - written_), std::move(fds));
  output_ += frame;
  next_out_ = NextSequence(next_out_);
  return absl::OkStatus();
}

absl::Status AgentConnection::Write() {
  while (written_ < output_.size()) {
    const long n = outgoing_fds_.Send(fd_, stream_position_, output_.data() + written_,
                                      output_.size() - written_);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return Failed("send", errno);
    }
    written_ += static_cast<std::size_t>(n);
    stream_position_ += static_cast<std::uint64_t>(n);
  }
  // Drop what was written once it is most of the buffer, so that it stays about one flush big.
  if (written_ == output_.size() || written_ > output_.size() / 2) {
    output_.erase(0, written_);
    written_ = 0;
  }
  return absl::OkStatus();
}

absl::Status AgentConnection::Read(std::vector<Message>* messages) {
  for (Message& early : backlog_) messages->push_back(std::move(early));
  backlog_.clear();
  char buffer[kReadChunkBytes];
  absl::Status gone;
  bool truncated = false;
  for (;;) {
    const long n = ReceiveWithDescriptors(fd_, buffer, sizeof buffer, &received_fds_, &truncated);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) gone = Failed("recv", errno);
      break;
    }
    if (n == 0) {
      gone = absl::UnavailableError(absl::StrCat("agent at ", path_, " closed the connection"));
      break;
    }
    reader_.Append(std::string_view(buffer, static_cast<std::size_t>(n)));
    if (static_cast<std::size_t>(n) < sizeof buffer) break;
  }
  // Frames that arrived before the end still count (an Error right before the agent closes).
  for (;;) {
    WAVEPOOL_ASSIGN_OR_RETURN(std::optional<Frame> next, reader_.Next());
    if (!next.has_value()) return gone;
    Frame& frame = *next;
    if (frame.sequence != expected_in_) {
      return absl::FailedPreconditionError(absl::StrCat(
          "agent at ", path_, ": frame.sequence ", frame.sequence, ", expected ", expected_in_));
    }
    expected_in_ = NextSequence(expected_in_);
    if (absl::Status adopted = AdoptDescriptors(&frame.message, &received_fds_); !adopted.ok()) {
      return absl::FailedPreconditionError(absl::StrCat("agent at ", path_, ": ", adopted.message(),
                                                        truncated ? " (descriptors dropped)" : ""));
    }
    messages->push_back(std::move(frame.message));
  }
}

absl::Status AgentConnection::Drain(TimePoint deadline) {
  for (;;) {
    WAVEPOOL_RETURN_IF_ERROR(Write());
    if (pending_bytes() == 0) return absl::OkStatus();
    pollfd fds[1] = {{fd_, POLLOUT, 0}};
    const int timeout = PollTimeoutMs(deadline);
    if (timeout == 0) {
      return absl::DeadlineExceededError(absl::StrCat("agent at ", path_, ": ", pending_bytes(),
                                                      " bytes still unsent at the deadline"));
    }
    if (poll(fds, 1, timeout) < 0 && errno != EINTR) return Failed("poll", errno);
  }
}

}  // namespace wavepool::agent::internal
