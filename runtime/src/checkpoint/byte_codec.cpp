#include "byte_codec.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace wavepool::runtime::checkpoint_internal {

void ByteWriter::Unsigned(std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<char>((value >> (8 * i)) & 0xFFu));
}

bool ByteReader::Take(std::uint64_t size, const char* field) {
  if (!status_.ok()) return false;
  if (size > remaining()) {
    status_ =
        absl::DataLossError(absl::StrCat("truncated at offset ", offset(), ": ", field, " needs ",
                                         size, " bytes, ", remaining(), " remain"));
    return false;
  }
  return true;
}

std::uint64_t ByteReader::Unsigned(int bytes, const char* field) {
  if (!Take(static_cast<std::uint64_t>(bytes), field)) return 0;
  std::uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) {
    value |= static_cast<std::uint64_t>(static_cast<unsigned char>(data_[position_ + i]))
             << (8 * i);
  }
  position_ += static_cast<std::size_t>(bytes);
  return value;
}

void ByteReader::Fail(std::string_view message) {
  if (status_.ok()) status_ = absl::DataLossError(View(message));
}

std::uint8_t ByteReader::U8(const char* field) {
  return static_cast<std::uint8_t>(Unsigned(1, field));
}
std::uint32_t ByteReader::U32(const char* field) {
  return static_cast<std::uint32_t>(Unsigned(4, field));
}
std::uint64_t ByteReader::U64(const char* field) { return Unsigned(8, field); }

std::string_view ByteReader::Bytes(std::uint64_t size, const char* field) {
  if (!Take(size, field)) return {};
  std::string_view bytes = data_.substr(position_, static_cast<std::size_t>(size));
  position_ += static_cast<std::size_t>(size);
  return bytes;
}

std::string Hex32(std::uint32_t value) { return absl::StrFormat("0x%08x", value); }

std::string QuoteBytes(std::string_view bytes, std::size_t limit) {
  std::string quoted = "'";
  for (std::size_t i = 0; i < bytes.size() && i < limit; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7F && c != '\'' && c != '\\') {
      quoted.push_back(static_cast<char>(c));
    } else {
      absl::StrAppendFormat(&quoted, "\\x%02x", c);
    }
  }
  quoted += bytes.size() > limit ? "'..." : "'";
  return quoted;
}

}  // namespace wavepool::runtime::checkpoint_internal
