// Shared by the checkpoint tests: byte edits of encoded files, and the file layout of
// docs/runtime.md ("Checkpoints") read independently of the library, so that the tests
// check the documented format rather than the code against itself.
#ifndef WAVEPOOL_TESTS_RUNTIME_CHECKPOINT_TEST_UTIL_H_
#define WAVEPOOL_TESTS_RUNTIME_CHECKPOINT_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <vector>

namespace wavepool::runtime::testing {

inline std::uint64_t LittleEndian(const std::string& bytes, std::size_t offset, int width) {
  std::uint64_t value = 0;
  for (int i = 0; i < width; ++i) {
    value |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  }
  return value;
}

inline void PutLittleEndian(std::string& bytes, std::size_t offset, std::uint64_t value,
                            int width) {
  for (int i = 0; i < width; ++i) bytes[offset + i] = static_cast<char>((value >> (8 * i)) & 0xFF);
}

// CRC-32C, bit by bit from the polynomial's definition (RFC 3720 §B.4): slow and obviously right.
inline std::uint32_t ReferenceCrc32c(const std::string& bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (char c : bytes) {
    crc ^= static_cast<unsigned char>(c);
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// Where a section record sits in a file, found by walking the documented layout.
struct SectionLayout {
  std::string name;
  std::size_t record_offset = 0;
  std::size_t payload_offset = 0;
  std::uint64_t payload_bytes = 0;
  std::size_t checksum_offset = 0;
};

struct FileLayout {
  std::uint32_t header_bytes = 0;
  std::size_t header_checksum_offset = 0;
  std::vector<SectionLayout> sections;
};

// REQUIRES: `bytes` is a well-formed version-1 file.
inline FileLayout LayoutOf(const std::string& bytes) {
  FileLayout layout;
  layout.header_bytes = static_cast<std::uint32_t>(LittleEndian(bytes, 12, 4));
  layout.header_checksum_offset = 16 + layout.header_bytes;
  const auto section_count = static_cast<std::uint32_t>(LittleEndian(bytes, 16 + 24, 4));
  std::size_t offset = layout.header_checksum_offset + 4;
  for (std::uint32_t i = 0; i < section_count; ++i) {
    SectionLayout section;
    section.record_offset = offset;
    const auto name_bytes = static_cast<std::size_t>(LittleEndian(bytes, offset, 4));
    section.payload_bytes = LittleEndian(bytes, offset + 4, 8);
    section.name = bytes.substr(offset + 12, name_bytes);
    section.payload_offset = offset + 12 + name_bytes;
    section.checksum_offset = section.payload_offset + section.payload_bytes;
    offset = section.checksum_offset + 4;
    layout.sections.push_back(section);
  }
  return layout;
}

}  // namespace wavepool::runtime::testing

#endif  // WAVEPOOL_TESTS_RUNTIME_CHECKPOINT_TEST_UTIL_H_
