#include "wavepool/agent/client/protocol.h"

namespace wavepool::agent {

MessageType TypeOf(const Message& message) {
  return static_cast<MessageType>(message.index() + 1);
}

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
  }
  return "unknown";
}

}  // namespace wavepool::agent
