// The checkpoint file format (checkpoint_file.h): every field round-trips, the bytes follow the
// table in docs/runtime.md, and every corruption is reported with the file and where.
#include "wavepool/runtime/checkpoint_file.h"

#include <filesystem>
#include <string>

#include "checkpoint_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/files.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"

namespace wavepool::runtime {
namespace {

using ::testing::AllOf;
using ::testing::AnyOf;
using testing::FileLayout;
using ::testing::HasSubstr;
using testing::LayoutOf;
using testing::LittleEndian;
using testing::PutLittleEndian;
using testing::ReferenceCrc32c;
using ::wavepool::testing::IsOkAndHolds;
using ::wavepool::testing::ReadFile;
using ::wavepool::testing::StatusIs;
using ::wavepool::testing::TempDir;
using ::wavepool::testing::WriteFile;

CheckpointFile SampleFile() {
  CheckpointFile file;
  file.step = 1200;
  file.data_position = 1201;
  file.rank = 2;
  file.world_size = 4;
  file.fingerprint = "3f2a9c0d5b7e81f4a6c2d9e0b1f37a58c4e6d2b09f1a3c5e7d8b6a4f2e0c1d3b";
  file.metadata = {{"job", "team-a/resnet"}, {"strategy", "BurstParallel"}, {"note", "Grüße"}};
  file.sections["model"] = std::string("\x00\x01\xff weights", 10);
  file.sections["optimizer"] = std::string(1000, 'o');
  file.sections["rng.cpu"] = "generator";
  file.sections["empty"] = "";
  return file;
}

std::string SampleBytes() {
  absl::StatusOr<std::string> bytes = EncodeCheckpoint(SampleFile());
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : std::string();
}

TEST(CheckpointFile, RoundTripsEveryField) {
  const CheckpointFile original = SampleFile();
  ASSERT_OK_AND_ASSIGN(const std::string bytes, EncodeCheckpoint(original));
  ASSERT_OK_AND_ASSIGN(const CheckpointFile decoded, DecodeCheckpoint(bytes, "memory"));
  EXPECT_EQ(decoded.step, original.step);
  EXPECT_EQ(decoded.data_position, original.data_position);
  EXPECT_EQ(decoded.rank, original.rank);
  EXPECT_EQ(decoded.world_size, original.world_size);
  EXPECT_EQ(decoded.fingerprint, original.fingerprint);
  EXPECT_EQ(decoded.metadata, original.metadata);
  EXPECT_EQ(decoded.sections, original.sections);
  EXPECT_EQ(decoded.source, "memory");
  ASSERT_OK_AND_ASSIGN(std::string_view model, decoded.Section("model"));
  EXPECT_EQ(model, original.sections.at("model"));
}

TEST(CheckpointFile, BytesFollowTheDocumentedLayout) {
  const CheckpointFile file = SampleFile();
  const std::string bytes = SampleBytes();
  EXPECT_EQ(bytes.substr(0, 8), "WAVECKPT");
  EXPECT_EQ(LittleEndian(bytes, 8, 4), 1u);
  const FileLayout layout = LayoutOf(bytes);
  EXPECT_EQ(LittleEndian(bytes, 16, 8), 1200u);  // step
  EXPECT_EQ(LittleEndian(bytes, 24, 8), 1201u);  // data position
  EXPECT_EQ(LittleEndian(bytes, 32, 4), 2u);     // rank
  EXPECT_EQ(LittleEndian(bytes, 36, 4), 4u);     // world size
  EXPECT_EQ(LittleEndian(bytes, 40, 4), 4u);     // section count
  EXPECT_EQ(LittleEndian(bytes, 44, 4), file.fingerprint.size());
  EXPECT_EQ(bytes.substr(48, file.fingerprint.size()), file.fingerprint);
  const std::size_t metadata_offset = 48 + file.fingerprint.size();
  const std::size_t metadata_bytes = LittleEndian(bytes, metadata_offset, 4);
  EXPECT_EQ(bytes.substr(metadata_offset + 4, metadata_bytes),
            R"({"job":"team-a/resnet","note":"Grüße","strategy":"BurstParallel"})");
  EXPECT_EQ(16 + layout.header_bytes, metadata_offset + 4 + metadata_bytes);
  EXPECT_EQ(LittleEndian(bytes, layout.header_checksum_offset, 4),
            ReferenceCrc32c(bytes.substr(0, layout.header_checksum_offset)));
  // Sections in name order, each checksummed over its record; nothing after the last.
  ASSERT_EQ(layout.sections.size(), 4u);
  const std::vector<std::string> names = {"empty", "model", "optimizer", "rng.cpu"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    const testing::SectionLayout& section = layout.sections[i];
    EXPECT_EQ(section.name, names[i]);
    EXPECT_EQ(bytes.substr(section.payload_offset, section.payload_bytes),
              file.sections.at(names[i]));
    EXPECT_EQ(LittleEndian(bytes, section.checksum_offset, 4),
              ReferenceCrc32c(bytes.substr(section.record_offset,
                                           section.checksum_offset - section.record_offset)));
  }
  EXPECT_EQ(layout.sections.back().checksum_offset + 4, bytes.size());
}

TEST(CheckpointFile, AFlippedByteInASectionIsDataLossNamingTheSection) {
  const std::string bytes = SampleBytes();
  for (const testing::SectionLayout& section : LayoutOf(bytes).sections) {
    if (section.payload_bytes == 0) continue;
    std::string corrupt = bytes;
    corrupt[section.payload_offset + section.payload_bytes / 2] ^= 0x10;
    EXPECT_THAT(
        DecodeCheckpoint(corrupt, "/ckpt/rank-2.ckpt"),
        StatusIs(absl::StatusCode::kDataLoss,
                 AllOf(HasSubstr("checkpoint /ckpt/rank-2.ckpt: section '" + section.name + "'"),
                       HasSubstr("at offset " + std::to_string(section.record_offset)),
                       HasSubstr("checksum mismatch"))))
        << section.name;
  }
}

TEST(CheckpointFile, AFlippedHeaderByteIsDataLossNamingTheHeader) {
  std::string corrupt = SampleBytes();
  corrupt[20] ^= 0x01;  // inside the step
  EXPECT_THAT(DecodeCheckpoint(corrupt, "f"),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("checkpoint f: header"), HasSubstr("checksum mismatch"))));
}

TEST(CheckpointFile, EveryFlippedBitAnywhereIsDetected) {
  const std::string bytes = SampleBytes();
  for (std::size_t offset = 0; offset < bytes.size(); ++offset) {
    for (int bit = 0; bit < 8; bit += 3) {
      std::string corrupt = bytes;
      corrupt[offset] = static_cast<char>(corrupt[offset] ^ (1 << bit));
      const absl::Status status = DecodeCheckpoint(corrupt, "f").status();
      EXPECT_THAT(status.code(),
                  AnyOf(absl::StatusCode::kDataLoss, absl::StatusCode::kFailedPrecondition))
          << "offset " << offset << " bit " << bit;
      EXPECT_THAT(std::string(status.message()), HasSubstr("checkpoint f: "));
    }
  }
}

TEST(CheckpointFile, TruncationAtAnyOffsetIsDataLossNamingTheOffset) {
  const std::string bytes = SampleBytes();
  const FileLayout layout = LayoutOf(bytes);
  EXPECT_THAT(DecodeCheckpoint("", "f"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("checkpoint f: not a wavepool "
                                                              "checkpoint: the file is empty")));
  for (std::size_t size = 1; size < bytes.size(); ++size) {
    EXPECT_THAT(DecodeCheckpoint(bytes.substr(0, size), "f"),
                StatusIs(absl::StatusCode::kDataLoss, HasSubstr("checkpoint f: ")))
        << "size " << size;
  }
  // Inside the optimizer's payload: the record and the offset where the file ends are named.
  const testing::SectionLayout& optimizer = layout.sections[2];
  const std::size_t cut = optimizer.payload_offset + 100;
  EXPECT_THAT(
      DecodeCheckpoint(bytes.substr(0, cut), "f"),
      StatusIs(
          absl::StatusCode::kDataLoss,
          AllOf(HasSubstr("section record 2 at offset " + std::to_string(optimizer.record_offset)),
                HasSubstr("'optimizer'"),
                HasSubstr("truncated at offset " + std::to_string(optimizer.payload_offset)),
                HasSubstr("needs 1000 bytes, 100 remain"))));
  // At a record boundary: the missing section is named by its index.
  EXPECT_THAT(DecodeCheckpoint(bytes.substr(0, optimizer.record_offset), "f"),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("section record 2 at offset " +
                                 std::to_string(optimizer.record_offset) + ": truncated")));
}

TEST(CheckpointFile, WrongMagicIsDataLoss) {
  std::string bytes = SampleBytes();
  bytes.replace(0, 8, "PK\x03\x04zip!");
  EXPECT_THAT(DecodeCheckpoint(bytes, "/x/rank-0.ckpt"),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("checkpoint /x/rank-0.ckpt: not a wavepool checkpoint: offset 0 "
                                 "holds 'PK\\x03\\x04zip!', expected 'WAVECKPT'")));
}

TEST(CheckpointFile, ANewerFormatVersionIsFailedPrecondition) {
  std::string bytes = SampleBytes();
  PutLittleEndian(bytes, 8, kCheckpointFormatVersion + 1, 4);
  EXPECT_THAT(DecodeCheckpoint(bytes, "f"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("checkpoint f: format version 2 (offset 8) is newer than this "
                                 "build reads (1 to 1)")));
  PutLittleEndian(bytes, 8, 0, 4);
  EXPECT_THAT(DecodeCheckpoint(bytes, "f"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("format version 0")));
}

TEST(CheckpointFile, BytesAfterTheLastSectionAreDataLoss) {
  EXPECT_THAT(DecodeCheckpoint(SampleBytes() + "xyz", "f"),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("3 unexpected bytes after the last of 4 sections")));
}

TEST(CheckpointFile, EncodeRejectsValuesOutOfRange) {
  CheckpointFile file = SampleFile();
  file.rank = 4;
  EXPECT_THAT(EncodeCheckpoint(file),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank 4, world_size 4")));
  file = SampleFile();
  file.step = -1;
  EXPECT_THAT(EncodeCheckpoint(file),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("step -1")));
  file = SampleFile();
  file.sections[""] = "x";
  EXPECT_THAT(EncodeCheckpoint(file),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("section name ''")));
  file = SampleFile();
  file.sections[std::string(256, 'n')] = "x";
  EXPECT_THAT(EncodeCheckpoint(file),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be 1 to 255 bytes")));
  file = SampleFile();
  file.metadata["job"] = "\xff\xfe";
  EXPECT_THAT(EncodeCheckpoint(file),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("checkpoint metadata")));
}

TEST(CheckpointFile, AMissingSectionNamesTheFileAndTheSectionsPresent) {
  ASSERT_OK_AND_ASSIGN(const CheckpointFile file, DecodeCheckpoint(SampleBytes(), "/c/r.ckpt"));
  EXPECT_THAT(file.Section("rng.cuda"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("checkpoint /c/r.ckpt has no section 'rng.cuda' (it has: "
                                 "empty, model, optimizer, rng.cpu)")));
}

TEST(CheckpointFile, WritesAndReadsAFile) {
  ASSERT_OK_AND_ASSIGN(TempDir dir, TempDir::Create("wavepool_checkpoint"));
  const std::string path = dir.File("rank-2.ckpt");
  ASSERT_OK(WriteCheckpointFile(path, SampleFile()));
  ASSERT_OK_AND_ASSIGN(const CheckpointFile read, ReadCheckpointFile(path));
  EXPECT_EQ(read.sections, SampleFile().sections);
  EXPECT_EQ(read.source, path);
  EXPECT_THAT(ReadFile(path), IsOkAndHolds(SampleBytes()));
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms(0644));
  EXPECT_THAT(ReadCheckpointFile(dir.File("absent.ckpt")),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("read checkpoint " + (dir.File("absent.ckpt")) +
                                 ": No such file or directory")));
}

TEST(CheckpointFile, AFailedWriteNamesThePathAndLeavesNoTemporaryFile) {
  ASSERT_OK_AND_ASSIGN(TempDir dir, TempDir::Create("wavepool_checkpoint"));
  const std::string path = dir.File("missing-dir/rank-0.ckpt");
  EXPECT_THAT(WriteCheckpointFile(path, SampleFile()),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr(path), HasSubstr("No such file or directory"))));
  // A directory where the file should go: rename fails after the data was written.
  std::filesystem::create_directory(dir.File("rank-1.ckpt"));
  std::filesystem::create_directory(dir.File("rank-1.ckpt/child"));
  EXPECT_THAT(WriteCheckpointFile(dir.File("rank-1.ckpt"), SampleFile()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr(dir.File("rank-1.ckpt"))));
  std::vector<std::string> entries;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    entries.push_back(entry.path().filename().string());
  }
  EXPECT_THAT(entries, ::testing::ElementsAre("rank-1.ckpt"));
}

}  // namespace
}  // namespace wavepool::runtime
