// The MNIST training set in the idx format (http://yann.lecun.com/exdb/mnist/):
//   train-images-idx3-ubyte: magic 2051, image count, rows, columns (big-endian 32-bit words at
//     byte offsets 0, 4, 8, 12), then count * rows * columns pixel bytes from offset 16;
//   train-labels-idx1-ubyte: magic 2049, label count (offsets 0, 4), then one byte per label
//     from offset 8.
// Each Read is two preads: the image's bytes and its label byte.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "dataset_file.h"
#include "sources.h"
#include "wavepool/base/status_macros.h"

namespace wavepool::runtime::data_internal {
namespace {

constexpr char kImagesFile[] = "train-images-idx3-ubyte";
constexpr char kLabelsFile[] = "train-labels-idx1-ubyte";
constexpr std::uint32_t kImagesMagic = 2051;  // 0x00000803: unsigned bytes, 3 dimensions
constexpr std::uint32_t kLabelsMagic = 2049;  // 0x00000801: unsigned bytes, 1 dimension
constexpr std::int64_t kImagesHeader = 16;
constexpr std::int64_t kLabelsHeader = 8;
constexpr std::int64_t kClasses = 10;
// The largest image side accepted (a header beyond it is corrupt, not a dataset).
constexpr std::int64_t kMaxSide = 65535;
// The MNIST training set's mean and standard deviation of pixels scaled to [0, 1].
constexpr float kMean = 0.1307f;
constexpr float kStd = 0.3081f;

// Reads the header's words (the magic first) and checks the magic number.
absl::Status ReadHeader(const DatasetFile& file, std::uint32_t magic, int words,
                        std::array<std::uint32_t, 4>* values) {
  const std::int64_t header_bytes = 4 * words;
  if (file.size() < header_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("mnist file ", file.path(), ": truncated: the data ends short at byte offset ",
                     file.size(), ", inside the ", header_bytes, "-byte header"));
  }
  std::array<unsigned char, 16> header{};
  WAVEPOOL_RETURN_IF_ERROR(file.ReadAt(0, header_bytes, header.data()));
  for (int w = 0; w < words; ++w) {
    (*values)[static_cast<std::size_t>(w)] = BigEndian32(header.data() + 4 * w);
  }
  if ((*values)[0] != magic) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "mnist file %s: wrong magic number at byte offset 0: expected %u (0x%08x), found %u "
        "(0x%08x)",
        file.path(), magic, magic, (*values)[0], (*values)[0]));
  }
  return absl::OkStatus();
}

// Checks that the file ends exactly where the header says its data does. Unsigned arithmetic:
// count < 2^32 and item_bytes <= kMaxSide^2 < 2^32, so the end fits 64 bits whatever the header.
absl::Status CheckDataSize(const DatasetFile& file, std::int64_t header_bytes, std::uint64_t count,
                           std::uint64_t item_bytes, const std::string& items) {
  if (count == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("mnist file ", file.path(), ": the header at byte offset 4 counts 0 ", items));
  }
  const std::uint64_t end = static_cast<std::uint64_t>(header_bytes) + count * item_bytes;
  const auto size = static_cast<std::uint64_t>(file.size());
  if (size < end) {
    return absl::InvalidArgumentError(
        absl::StrCat("mnist file ", file.path(), ": truncated: the data ends short at byte offset ",
                     size, "; the header's ", count, " ", items, " of ", item_bytes,
                     " bytes end at byte offset ", end));
  }
  if (size > end) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mnist file ", file.path(), ": ", size - end, " bytes follow the header's ", count, " ",
        items, " of ", item_bytes, " bytes, which end at byte offset ", end));
  }
  return absl::OkStatus();
}

// Finds the first label outside [0, kClasses), reading the label bytes in chunks.
absl::Status CheckLabels(const DatasetFile& labels, std::int64_t count) {
  std::vector<unsigned char> chunk(static_cast<std::size_t>(std::min<std::int64_t>(count, 65536)));
  for (std::int64_t first = 0; first < count;) {
    const std::int64_t n =
        std::min<std::int64_t>(count - first, static_cast<std::int64_t>(chunk.size()));
    WAVEPOOL_RETURN_IF_ERROR(labels.ReadAt(kLabelsHeader + first, n, chunk.data()));
    for (std::int64_t i = 0; i < n; ++i) {
      if (chunk[static_cast<std::size_t>(i)] >= kClasses) {
        return absl::InvalidArgumentError(
            absl::StrCat("mnist file ", labels.path(), ": label ",
                         static_cast<int>(chunk[static_cast<std::size_t>(i)]), " at byte offset ",
                         kLabelsHeader + first + i, " (sample ", first + i,
                         ") is out of range [0, ", kClasses, ")"));
      }
    }
    first += n;
  }
  return absl::OkStatus();
}

class MnistSource final : public SampleSource {
 public:
  MnistSource(SampleSpec spec, std::string dir, std::unique_ptr<DatasetFile> images,
              std::unique_ptr<DatasetFile> labels, std::int64_t count, std::int64_t pixels)
      : spec_(std::move(spec)),
        dir_(std::move(dir)),
        images_(std::move(images)),
        labels_(std::move(labels)),
        count_(count),
        pixels_(pixels) {
    for (int value = 0; value < 256; ++value) {
      normalised_[static_cast<std::size_t>(value)] =
          (static_cast<float>(value) / 255.0f - kMean) / kStd;
    }
  }

  const SampleSpec& spec() const override { return spec_; }
  std::int64_t size() const override { return count_; }
  std::string Describe() const override {
    return absl::StrCat("mnist ", dir_, " (", count_, " samples)");
  }

  absl::Status Read(std::int64_t index, void* input, std::int64_t* label) const override {
    WAVEPOOL_RETURN_IF_ERROR(CheckSampleIndex(*this, index));
    unsigned char label_byte = 0;
    WAVEPOOL_RETURN_IF_ERROR(labels_->ReadAt(kLabelsHeader + index, 1, &label_byte));
    if (label_byte >= kClasses) {  // the file changed after it was checked at open
      return absl::DataLossError(absl::StrCat(
          "mnist file ", labels_->path(), ": label ", static_cast<int>(label_byte),
          " at byte offset ", kLabelsHeader + index, " is out of range [0, ", kClasses, ")"));
    }
    // A 28x28 image fits the stack buffer; larger idx images take a heap buffer.
    std::array<unsigned char, 1024> small;
    std::vector<unsigned char> large;
    unsigned char* bytes = small.data();
    if (pixels_ > static_cast<std::int64_t>(small.size())) {
      large.resize(static_cast<std::size_t>(pixels_));
      bytes = large.data();
    }
    WAVEPOOL_RETURN_IF_ERROR(images_->ReadAt(kImagesHeader + index * pixels_, pixels_, bytes));
    auto* out = static_cast<float*>(input);
    for (std::int64_t i = 0; i < pixels_; ++i) out[i] = normalised_[bytes[i]];
    *label = label_byte;
    return absl::OkStatus();
  }

 private:
  // Constant after construction.
  const SampleSpec spec_;
  const std::string dir_;
  const std::unique_ptr<DatasetFile> images_;
  const std::unique_ptr<DatasetFile> labels_;
  const std::int64_t count_;
  const std::int64_t pixels_;  // rows * columns bytes per image
  std::array<float, 256> normalised_{};
};

// Whether a model taking `spec` can train on rows x columns images: {1, rows, columns} or the
// flat {rows * columns}, 10 classes.
bool Fits(const SampleSpec& spec, std::int64_t rows, std::int64_t columns) {
  if (spec.kind != SampleSpec::Kind::kFeatures || spec.classes != kClasses) return false;
  return spec.shape == std::vector<std::int64_t>{1, rows, columns} ||
         spec.shape == std::vector<std::int64_t>{rows * columns};
}

}  // namespace

absl::StatusOr<SampleSourcePtr> OpenMnistSource(const std::string& dir, const SampleSpec& spec) {
  WAVEPOOL_ASSIGN_OR_RETURN(std::unique_ptr<DatasetFile> images,
                            DatasetFile::Open(absl::StrCat(dir, "/", kImagesFile)));
  WAVEPOOL_ASSIGN_OR_RETURN(std::unique_ptr<DatasetFile> labels,
                            DatasetFile::Open(absl::StrCat(dir, "/", kLabelsFile)));

  std::array<std::uint32_t, 4> image_header{};
  WAVEPOOL_RETURN_IF_ERROR(ReadHeader(*images, kImagesMagic, 4, &image_header));
  const std::int64_t count = image_header[1], rows = image_header[2], columns = image_header[3];
  if (rows < 1 || columns < 1 || rows > kMaxSide || columns > kMaxSide) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mnist file ", images->path(), ": the header at byte offset 8 gives images of ", rows, "x",
        columns, " pixels; each side must be in [1, ", kMaxSide, "]"));
  }
  WAVEPOOL_RETURN_IF_ERROR(CheckDataSize(*images, kImagesHeader, static_cast<std::uint64_t>(count),
                                         static_cast<std::uint64_t>(rows * columns), "images"));
  std::array<std::uint32_t, 4> label_header{};
  WAVEPOOL_RETURN_IF_ERROR(ReadHeader(*labels, kLabelsMagic, 2, &label_header));
  const std::int64_t label_count = label_header[1];
  WAVEPOOL_RETURN_IF_ERROR(
      CheckDataSize(*labels, kLabelsHeader, static_cast<std::uint64_t>(label_count), 1, "labels"));
  if (label_count != count) {
    return absl::InvalidArgumentError(
        absl::StrCat("mnist files disagree: ", images->path(), " counts ", count,
                     " images at byte offset 4, but ", labels->path(), " counts ", label_count,
                     " labels at byte offset 4"));
  }
  if (!Fits(spec, rows, columns)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mnist ", dir, " serves samples of features [1,", rows, ",", columns, "] (or [",
        rows * columns, "]), ", kClasses, " classes, but the model takes ", spec.ToString()));
  }
  WAVEPOOL_RETURN_IF_ERROR(CheckLabels(*labels, count));
  return std::make_shared<const MnistSource>(spec, dir, std::move(images), std::move(labels), count,
                                             rows * columns);
}

}  // namespace wavepool::runtime::data_internal
