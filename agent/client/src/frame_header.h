// The fixed 16-byte frame header (protocol.h), shared by DecodeFrame and FrameReader so that a
// reader can reject a bad or oversized frame before its body arrives.
#ifndef WAVEPOOL_AGENT_CLIENT_SRC_FRAME_HEADER_H_
#define WAVEPOOL_AGENT_CLIENT_SRC_FRAME_HEADER_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "wavepool/agent/client/protocol.h"

namespace wavepool::agent::internal {

struct FrameHeader {
  std::uint16_t version = kProtocolVersion;
  MessageType type = MessageType::kRegister;
  std::uint32_t sequence = 0;
  std::uint32_t body_bytes = 0;
};

// Checks magic, version (one this side speaks), type (one of that version), sequence (>= 1) and
// length (<= kMaxBodyBytes).
// REQUIRES: bytes.size() >= kFrameHeaderBytes.
absl::StatusOr<FrameHeader> DecodeFrameHeader(std::string_view bytes);

}  // namespace wavepool::agent::internal

#endif  // WAVEPOOL_AGENT_CLIENT_SRC_FRAME_HEADER_H_
