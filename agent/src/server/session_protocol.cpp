// The socket server's sessions (socket_server.h): reading a connection's frames, the protocol's
// rules (Register first and once, sequence numbers, versions, descriptors, sizes before Register),
// Register answered once the peer is identified, and the output with its limit and error replies.
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/identify_queue.h"
#include "server/socket_server_loop.h"
#include "wavepool/agent/socket_server.h"

namespace wavepool::agent {
namespace {

constexpr std::size_t kReadChunkBytes = 64 * 1024;
// Reads per readiness event and connection: a flooding worker yields to the others after 1 MiB
// (epoll is level-triggered, so the rest is read on the next turn).
constexpr int kReadsPerEvent = 16;

// A frame the agent encoded, given the connection's version and its next sequence number (the
// agent's messages are the same in every version it speaks).
void PatchHeader(std::string& frame, std::uint16_t version, std::uint32_t sequence) {
  for (std::size_t i = 0; i < 2; ++i) frame[4 + i] = static_cast<char>(version >> (8 * i));
  for (std::size_t i = 0; i < 4; ++i) frame[8 + i] = static_cast<char>(sequence >> (8 * i));
}

}  // namespace

// --- Input -------------------------------------------------------------------------------------

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

}  // namespace wavepool::agent
