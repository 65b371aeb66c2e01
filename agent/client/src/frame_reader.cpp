#include <string>
#include <string_view>

#include "frame_header.h"
#include "wavepool/agent/client/protocol.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::agent {
namespace {

// Consumed bytes are dropped from the front of the buffer once they are this many, or half of
// it: each byte is moved O(1) times on average and the buffer stays within about one maximal
// frame plus one Append.
constexpr std::size_t kCompactBytes = 64 * 1024;

}  // namespace

void FrameReader::Append(std::string_view bytes) {
  if (!error_.ok()) return;
  if (consumed_ > 0 && (consumed_ == buffer_.size() || consumed_ >= kCompactBytes ||
                        consumed_ * 2 >= buffer_.size())) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  buffer_.append(bytes.data(), bytes.size());
}

absl::StatusOr<std::optional<Frame>> FrameReader::Next() {
  WAVEPOOL_RETURN_IF_ERROR(error_);
  const std::string_view pending = std::string_view(buffer_).substr(consumed_);
  if (pending.size() < kFrameHeaderBytes) return std::optional<Frame>();
  absl::StatusOr<internal::FrameHeader> header = internal::DecodeFrameHeader(pending);
  if (!header.ok()) return Fail(header.status());
  const std::size_t frame_bytes = kFrameHeaderBytes + header->body_bytes;
  if (pending.size() < frame_bytes) return std::optional<Frame>();
  absl::StatusOr<Frame> frame = DecodeFrame(pending.substr(0, frame_bytes));
  if (!frame.ok()) return Fail(frame.status());
  consumed_ += frame_bytes;
  return std::optional<Frame>(std::move(*frame));
}

absl::Status FrameReader::Fail(absl::Status error) {
  error_ = std::move(error);
  std::string().swap(buffer_);  // a failed stream keeps no memory
  consumed_ = 0;
  return error_;
}

}  // namespace wavepool::agent
