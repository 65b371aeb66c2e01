#include "byte_io.h"

#include "absl/strings/str_cat.h"

namespace wavepool::agent::internal {

std::string FieldPath::ToString() const {
  if (list == nullptr) return absl::StrCat(message, ".", field);
  return absl::StrCat(message, ".", list, "[", index, "].", field);
}

absl::Status FieldPath::Error(std::string_view what) const {
  return absl::InvalidArgumentError(absl::StrCat(ToString(), ": ", std::string(what)));
}

absl::Status ByteReader::Need(const FieldPath& f, std::size_t n) const {
  if (remaining() >= n) return absl::OkStatus();
  return f.Error(absl::StrCat("truncated (needs ", n, " bytes, ", remaining(), " left)"));
}

absl::Status ByteReader::U8(const FieldPath& f, std::uint8_t* out) {
  WAVEPOOL_RETURN_IF_ERROR(Need(f, 1));
  *out = TakeU8();
  return absl::OkStatus();
}

absl::Status ByteReader::U16(const FieldPath& f, std::uint16_t* out) {
  WAVEPOOL_RETURN_IF_ERROR(Need(f, 2));
  *out = TakeU16();
  return absl::OkStatus();
}

absl::Status ByteReader::U32(const FieldPath& f, std::uint32_t* out) {
  WAVEPOOL_RETURN_IF_ERROR(Need(f, 4));
  *out = TakeU32();
  return absl::OkStatus();
}

absl::Status ByteReader::U64(const FieldPath& f, std::uint64_t* out) {
  WAVEPOOL_RETURN_IF_ERROR(Need(f, 8));
  *out = TakeU64();
  return absl::OkStatus();
}

absl::Status ByteReader::I32(const FieldPath& f, std::int32_t* out) {
  WAVEPOOL_RETURN_IF_ERROR(Need(f, 4));
  *out = static_cast<std::int32_t>(TakeU32());
  return absl::OkStatus();
}

absl::Status ByteReader::F64(const FieldPath& f, double* out) {
  WAVEPOOL_RETURN_IF_ERROR(Need(f, 8));
  const std::uint64_t bits = TakeU64();
  std::memcpy(out, &bits, sizeof bits);
  return absl::OkStatus();
}

absl::Status ByteReader::String(const FieldPath& f, std::size_t max_bytes, std::string* out) {
  std::uint16_t length = 0;
  WAVEPOOL_RETURN_IF_ERROR(U16(f, &length));
  if (length > max_bytes) return f.Error(absl::StrCat("length ", length, " > ", max_bytes));
  WAVEPOOL_RETURN_IF_ERROR(Need(f, length));
  out->assign(bytes_.data() + pos_, length);
  pos_ += length;
  return absl::OkStatus();
}

absl::Status ByteReader::Count(const FieldPath& f, std::uint32_t limit, std::size_t item_bytes,
                               std::uint32_t* out) {
  std::uint32_t count = 0;
  WAVEPOOL_RETURN_IF_ERROR(U32(f, &count));
  if (count > limit) return f.Error(absl::StrCat("count ", count, " > ", limit));
  // Checked before anything is allocated: a lying count costs nothing.
  if (static_cast<std::uint64_t>(count) * item_bytes > remaining()) {
    return f.Error(absl::StrCat("count ", count, " needs ", count * item_bytes, " bytes, ",
                                remaining(), " left"));
  }
  *out = count;
  return absl::OkStatus();
}

}  // namespace wavepool::agent::internal
