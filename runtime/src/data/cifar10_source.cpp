// The CIFAR-10 binary training set (https://www.cs.toronto.edu/~kriz/cifar.html, "binary
// version"): data_batch_1.bin .. data_batch_5.bin, each a sequence of 3073-byte records, one
// label byte (0-9) followed by 3072 pixel bytes (1024 red, 1024 green, 1024 blue, rows of 32).
// Samples are numbered through the files in order; each Read is one pread of one record.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dataset_file.h"
#include "sources.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime::data_internal {
namespace {

constexpr int kFiles = 5;
constexpr int kChannels = 3;
constexpr std::int64_t kChannelPixels = 32 * 32;
constexpr std::int64_t kRecordBytes = 1 + kChannels * kChannelPixels;  // 3073
constexpr std::int64_t kClasses = 10;
// The CIFAR-10 training set's per-channel mean and standard deviation of pixels scaled to
// [0, 1] (red, green, blue), as torchvision's CIFAR examples normalise with.
constexpr std::array<float, kChannels> kMean = {0.4914f, 0.4822f, 0.4465f};
constexpr std::array<float, kChannels> kStd = {0.2470f, 0.2435f, 0.2616f};

SampleSpec CifarSpec() {
  SampleSpec spec;
  spec.kind = SampleSpec::Kind::kFeatures;
  spec.shape = {kChannels, 32, 32};
  spec.classes = kClasses;
  return spec;
}

// One data_batch file: the samples [first, first + records).
struct Part {
  std::unique_ptr<DatasetFile> file;
  std::int64_t first = 0;
  std::int64_t records = 0;
};

// Opens one file and checks that it holds whole records whose labels are in range.
absl::StatusOr<Part> OpenPart(std::string path, std::int64_t first) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::unique_ptr<DatasetFile> file, DatasetFile::Open(std::move(path)));
  const DatasetFile& f = *file;
  if (f.size() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cifar10 file ", f.path(), ": empty; it should hold records of ", kRecordBytes,
                     " bytes (1 label byte and 3072 pixel bytes)"));
  }
  if (f.size() % kRecordBytes != 0) {
    const std::int64_t record = f.size() / kRecordBytes;
    return absl::InvalidArgumentError(
        absl::StrCat("cifar10 file ", f.path(), ": truncated: the data ends short at byte offset ",
                     f.size(), ", inside record ", record, " (bytes ", record * kRecordBytes,
                     " to ", (record + 1) * kRecordBytes, "); records are ", kRecordBytes,
                     " bytes (1 label byte and 3072 pixel bytes)"));
  }
  Part part{std::move(file), first, f.size() / kRecordBytes};
  for (std::int64_t r = 0; r < part.records; ++r) {
    unsigned char label = 0;
    WAVEPOOL_RETURN_IF_ERROR(part.file->ReadAt(r * kRecordBytes, 1, &label));
    if (label >= kClasses) {
      return absl::InvalidArgumentError(absl::StrCat("cifar10 file ", part.file->path(), ": label ",
                                                     static_cast<int>(label), " at byte offset ",
                                                     r * kRecordBytes, " (record ", r,
                                                     ") is out of range [0, ", kClasses, ")"));
    }
  }
  return part;
}

class Cifar10Source final : public SampleSource {
 public:
  Cifar10Source(std::string dir, std::vector<Part> parts)
      : spec_(CifarSpec()), dir_(std::move(dir)), parts_(std::move(parts)) {
    for (const Part& part : parts_) size_ += part.records;
    for (int c = 0; c < kChannels; ++c) {
      for (int value = 0; value < 256; ++value) {
        const float scaled = static_cast<float>(value) / 255.0f;
        normalised_[static_cast<std::size_t>(c)][static_cast<std::size_t>(value)] =
            (scaled - kMean[static_cast<std::size_t>(c)]) / kStd[static_cast<std::size_t>(c)];
      }
    }
  }

  const SampleSpec& spec() const override { return spec_; }
  std::int64_t size() const override { return size_; }
  std::string Describe() const override {
    return absl::StrCat("cifar10 ", dir_, " (", size_, " samples)");
  }

  absl::Status Read(std::int64_t index, void* input, std::int64_t* label) const override {
    WAVEPOOL_RETURN_IF_ERROR(CheckSampleIndex(*this, index));
    const Part& part =
        *std::prev(std::upper_bound(parts_.begin(), parts_.end(), index,
                                    [](std::int64_t i, const Part& p) { return i < p.first; }));
    const std::int64_t offset = (index - part.first) * kRecordBytes;
    std::array<unsigned char, kRecordBytes> record;
    WAVEPOOL_RETURN_IF_ERROR(part.file->ReadAt(offset, kRecordBytes, record.data()));
    if (record[0] >= kClasses) {  // the file changed after it was checked at open
      return absl::DataLossError(absl::StrCat("cifar10 file ", part.file->path(), ": label ",
                                              static_cast<int>(record[0]), " at byte offset ",
                                              offset, " is out of range [0, ", kClasses, ")"));
    }
    *label = record[0];
    auto* pixels = static_cast<float*>(input);
    for (int c = 0; c < kChannels; ++c) {
      const auto& table = normalised_[static_cast<std::size_t>(c)];
      const unsigned char* channel = record.data() + 1 + c * kChannelPixels;
      float* out = pixels + c * kChannelPixels;
      for (std::int64_t i = 0; i < kChannelPixels; ++i) out[i] = table[channel[i]];
    }
    return absl::OkStatus();
  }

 private:
  // Constant after construction.
  const SampleSpec spec_;
  const std::string dir_;
  const std::vector<Part> parts_;  // in file order; parts_[0].first == 0
  std::int64_t size_ = 0;
  std::array<std::array<float, 256>, kChannels> normalised_{};  // by channel, pixel byte
};

}  // namespace

absl::StatusOr<SampleSourcePtr> OpenCifar10Source(const std::string& dir, const SampleSpec& spec) {
  if (spec != CifarSpec()) {
    return absl::InvalidArgumentError(absl::StrCat("cifar10 ", dir, " serves samples of ",
                                                   CifarSpec().ToString(), ", but the model takes ",
                                                   spec.ToString()));
  }
  std::vector<Part> parts;
  std::int64_t first = 0;
  for (int i = 1; i <= kFiles; ++i) {
    WAVEPOOL_ASSIGN_OR_RETURN(Part part,
                              OpenPart(absl::StrCat(dir, "/data_batch_", i, ".bin"), first));
    first += part.records;
    parts.push_back(std::move(part));
  }
  return std::make_shared<const Cifar10Source>(dir, std::move(parts));
}

}  // namespace wavepool::runtime::data_internal
