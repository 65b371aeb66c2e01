#include "tests/agent/protocol_fuzz_target.h"

#include <cstdlib>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "wavepool/agent/client/protocol.h"

namespace wavepool::agent::testing {
namespace {

// `bytes` decoded as `frame`; the encoding is canonical, so re-encoding must give `bytes` back.
bool ReEncodes(const Frame& frame, std::string_view bytes, FuzzOutcome& outcome, const char* how) {
  absl::StatusOr<std::string> again = EncodeFrame(frame.message, frame.sequence, frame.version);
  if (again.ok() && *again == bytes) return true;
  outcome.ok = false;
  outcome.failure =
      absl::StrCat(how, ": a decoded ", std::string(MessageTypeName(TypeOf(frame.message))),
                   again.ok() ? " re-encoded to other bytes"
                              : " did not re-encode: " + again.status().ToString());
  return false;
}

}  // namespace

FuzzOutcome CheckProtocolInput(const std::uint8_t* data, std::size_t size) {
  FuzzOutcome outcome;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (absl::StatusOr<Frame> frame = DecodeFrame(bytes); frame.ok()) {
    ++outcome.frames;
    if (!ReEncodes(*frame, bytes, outcome, "DecodeFrame")) return outcome;
  }
  const std::size_t chunk = size == 0 ? 1 : 1 + data[0] % 64;
  FrameReader reader;
  std::size_t frame_start = 0;
  for (std::size_t at = 0; at < size; at += chunk) {
    reader.Append(bytes.substr(at, chunk));
    for (;;) {
      absl::StatusOr<std::optional<Frame>> next = reader.Next();
      if (!next.ok() || !next->has_value()) break;
      ++outcome.frames;
      // Frames come back in stream order with nothing between them.
      const std::size_t length =
          kFrameHeaderBytes + static_cast<std::uint8_t>(bytes[frame_start + 12]) +
          (static_cast<std::size_t>(static_cast<std::uint8_t>(bytes[frame_start + 13])) << 8) +
          (static_cast<std::size_t>(static_cast<std::uint8_t>(bytes[frame_start + 14])) << 16) +
          (static_cast<std::size_t>(static_cast<std::uint8_t>(bytes[frame_start + 15])) << 24);
      if (!ReEncodes(**next, bytes.substr(frame_start, length), outcome, "FrameReader")) {
        return outcome;
      }
      frame_start += length;
    }
  }
  return outcome;
}

}  // namespace wavepool::agent::testing

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (!wavepool::agent::testing::CheckProtocolInput(data, size).ok) std::abort();
  return 0;
}
