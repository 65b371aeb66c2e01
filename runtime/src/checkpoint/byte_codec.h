// Little-endian encoding of the checkpoint format's integers and length-prefixed strings
// (docs/runtime.md, "Checkpoints"), with a bounds-checked reader for bytes that may be corrupt.
//
// The format stores integers little-endian whatever the host; tensor bytes are stored in host
// order, and checkpoint_state.cpp refuses to build on a big-endian host.
#ifndef WAVEPOOL_RUNTIME_SRC_CHECKPOINT_BYTE_CODEC_H_
#define WAVEPOOL_RUNTIME_SRC_CHECKPOINT_BYTE_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace wavepool::runtime::checkpoint_internal {

// Appends to a string it owns. Plain value; not synchronised.
class ByteWriter {
 public:
  void U8(std::uint8_t value) { out_.push_back(static_cast<char>(value)); }
  void U32(std::uint32_t value) { Unsigned(value, 4); }
  void U64(std::uint64_t value) { Unsigned(value, 8); }
  void I32(std::int32_t value) { U32(static_cast<std::uint32_t>(value)); }
  void I64(std::int64_t value) { U64(static_cast<std::uint64_t>(value)); }
  void Bytes(std::string_view bytes) { out_.append(bytes); }
  // A u32 length, then the bytes. REQUIRES: bytes.size() < 2^32.
  void String32(std::string_view bytes) {
    U32(static_cast<std::uint32_t>(bytes.size()));
    Bytes(bytes);
  }

  std::size_t size() const { return out_.size(); }
  const std::string& bytes() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  void Unsigned(std::uint64_t value, int bytes);

  std::string out_;
};

// Reads from borrowed bytes, which must outlive it (and every view it returns). The first read
// past the end (or a length longer than what remains) makes the reader fail: status() is then
// DataLoss, naming the field being read, its offset and the bytes left, and every later read
// returns 0 or an empty view. Callers read a record, then check ok() once.
class ByteReader {
 public:
  // `base_offset` is added to offsets in messages: the position of `data` in its file.
  explicit ByteReader(std::string_view data, std::size_t base_offset = 0)
      : data_(data), base_offset_(base_offset) {}

  // `field` names what is read, for the message ("section payload length"); a static string.
  std::uint8_t U8(const char* field);
  std::uint32_t U32(const char* field);
  std::uint64_t U64(const char* field);
  std::int32_t I32(const char* field) { return static_cast<std::int32_t>(U32(field)); }
  std::int64_t I64(const char* field) { return static_cast<std::int64_t>(U64(field)); }
  std::string_view Bytes(std::uint64_t size, const char* field);
  std::string_view String32(const char* field) { return Bytes(U32(field), field); }

  // Fails the reader (DataLoss with `message`) unless it already failed: for values that parse
  // but make no sense (a negative dimension).
  void Fail(std::string_view message);

  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }
  // Offset of the next byte, counted from the start of the file (base_offset included).
  std::size_t offset() const { return base_offset_ + position_; }
  std::size_t remaining() const { return data_.size() - position_; }
  bool AtEnd() const { return position_ == data_.size(); }
  // Bytes [begin, next byte), begin being a value of position().
  std::string_view Since(std::size_t begin) const { return data_.substr(begin, position_ - begin); }
  std::size_t position() const { return position_; }

 private:
  std::uint64_t Unsigned(int bytes, const char* field);
  bool Take(std::uint64_t size, const char* field);

  std::string_view data_;
  std::size_t base_offset_;
  std::size_t position_ = 0;
  absl::Status status_;
};

// Debian's abseil has its own string_view, which absl::StrCat and friends take; std::string_view
// does not convert to it implicitly.
inline absl::string_view View(std::string_view text) { return {text.data(), text.size()}; }

// "0x1a2b3c4d".
std::string Hex32(std::uint32_t value);

// `bytes` quoted for a message, non-printable bytes as \xNN, at most `limit` bytes shown.
std::string QuoteBytes(std::string_view bytes, std::size_t limit = 32);

}  // namespace wavepool::runtime::checkpoint_internal

#endif  // WAVEPOOL_RUNTIME_SRC_CHECKPOINT_BYTE_CODEC_H_
