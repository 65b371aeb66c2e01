// Little-endian byte writing and bounds-checked reading for the protocol codec (protocol.h).
// Every checked read names the field it was reading in its error; the unchecked Take* reads are
// for list items after Count has proven that the whole list is present.
#ifndef WAVEPOOL_AGENT_CLIENT_SRC_BYTE_IO_H_
#define WAVEPOOL_AGENT_CLIENT_SRC_BYTE_IO_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::agent::internal {

// Where a value sits in a message, formatted only when an error names it:
// {"ReportOps", "op_group", "groups", 12} -> "ReportOps.groups[12].op_group".
struct FieldPath {
  const char* message;
  const char* field;
  const char* list = nullptr;  // when set, `field` is a member of list item `index`
  std::size_t index = 0;

  std::string ToString() const;
  // InvalidArgument "<path>: <what>".
  absl::Status Error(std::string_view what) const;
};

// Appends to a string it borrows. Not thread-safe.
class ByteWriter {
 public:
  explicit ByteWriter(std::string* out) : out_(out) {}

  void U8(std::uint8_t v) { out_->push_back(static_cast<char>(v)); }
  void U16(std::uint16_t v) { Put(v); }
  void U32(std::uint32_t v) { Put(v); }
  void U64(std::uint64_t v) { Put(v); }
  void I32(std::int32_t v) { Put(static_cast<std::uint32_t>(v)); }
  void I64(std::int64_t v) { Put(static_cast<std::uint64_t>(v)); }
  void F64(double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    Put(bits);
  }
  // REQUIRES: s.size() <= UINT16_MAX (the encoder checks kMaxStringBytes first).
  void String(std::string_view s) {
    U16(static_cast<std::uint16_t>(s.size()));
    out_->append(s.data(), s.size());
  }

 private:
  template <typename T>
  void Put(T v) {
    char bytes[sizeof(T)];
    for (std::size_t i = 0; i < sizeof(T); ++i) bytes[i] = static_cast<char>(v >> (8 * i));
    out_->append(bytes, sizeof(T));
  }

  std::string* out_;
};

// Reads a byte range it borrows; never past its end. Not thread-safe.
class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : bytes_(bytes) {}

  std::size_t remaining() const { return bytes_.size() - pos_; }

  absl::Status U8(const FieldPath& f, std::uint8_t* out);
  absl::Status U16(const FieldPath& f, std::uint16_t* out);
  absl::Status U32(const FieldPath& f, std::uint32_t* out);
  absl::Status U64(const FieldPath& f, std::uint64_t* out);
  absl::Status I32(const FieldPath& f, std::int32_t* out);
  absl::Status F64(const FieldPath& f, double* out);
  // A u16 length (<= max_bytes) and that many bytes.
  absl::Status String(const FieldPath& f, std::size_t max_bytes, std::string* out);
  // A u32 item count, checked against `limit` and against the bytes left for `item_bytes` each.
  absl::Status Count(const FieldPath& f, std::uint32_t limit, std::size_t item_bytes,
                     std::uint32_t* out);

  // Unchecked. REQUIRES: remaining() >= the value's size.
  std::uint8_t TakeU8() { return static_cast<std::uint8_t>(bytes_[pos_++]); }
  std::uint16_t TakeU16() { return Take<std::uint16_t>(); }
  std::uint32_t TakeU32() { return Take<std::uint32_t>(); }
  std::uint64_t TakeU64() { return Take<std::uint64_t>(); }
  std::int64_t TakeI64() { return static_cast<std::int64_t>(Take<std::uint64_t>()); }

 private:
  absl::Status Need(const FieldPath& f, std::size_t n) const;

  template <typename T>
  T Take() {
    T v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
      v |= static_cast<T>(static_cast<std::uint8_t>(bytes_[pos_ + i])) << (8 * i);
    }
    pos_ += sizeof(T);
    return v;
  }

  std::string_view bytes_;
  std::size_t pos_ = 0;
};

}  // namespace wavepool::agent::internal

#endif  // WAVEPOOL_AGENT_CLIENT_SRC_BYTE_IO_H_
