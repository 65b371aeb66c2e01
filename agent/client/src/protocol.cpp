#include "wavepool/agent/client/protocol.h"

#include <string>

namespace wavepool::agent {

MessageType TypeOf(const Message& message) { return static_cast<MessageType>(message.index() + 1); }

std::string_view MessageTypeName(MessageType type) {
  switch (type) {
    case MessageType::kRegister:
      return "Register";
    case MessageType::kRegistered:
      return "Registered";
    case MessageType::kReportOps:
      return "ReportOps";
    case MessageType::kReportMemory:
      return "ReportMemory";
    case MessageType::kReportIteration:
      return "ReportIteration";
    case MessageType::kGoodbye:
      return "Goodbye";
    case MessageType::kError:
      return "Error";
    case MessageType::kPolicy:
      return "Policy";
    case MessageType::kForegrounds:
      return "Foregrounds";
    case MessageType::kReportWaveMemory:
      return "ReportWaveMemory";
  }
  return "unknown";
}

std::uint16_t VersionIntroducing(MessageType type) {
  return type == MessageType::kReportWaveMemory ? 3 : 2;
}

ErrorReply ToErrorReply(const absl::Status& status) {
  if (status.ok()) return {absl::StatusCode::kInternal, "an OK status sent as an error"};
  std::string message(status.message());
  if (message.size() > kMaxStringBytes) {
    // Cut at a UTF-8 character boundary so that the reader gets valid text.
    std::size_t n = kMaxStringBytes - 3;
    while (n > 0 && (static_cast<unsigned char>(message[n]) & 0xC0) == 0x80) --n;
    message.resize(n);
    message += "...";
  }
  return {status.code(), std::move(message)};
}

absl::Status ToStatus(const ErrorReply& error) {
  return absl::Status(error.code, std::string(error.message));
}

}  // namespace wavepool::agent
