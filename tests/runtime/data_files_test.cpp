// The CIFAR-10 and MNIST readers against small files written here: values after normalisation,
// labels, sample numbering across files, and every way a dataset file can be wrong.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/files.h"
#include "tests/support/status_matchers.h"
#include "tests/support/temp_dir.h"
#include "wavepool/runtime/sample_source.h"

namespace wavepool::runtime {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::wavepool::testing::StatusIs;
using Bytes = std::vector<unsigned char>;

constexpr std::int64_t kCifarRecord = 3073;
constexpr std::array<float, 3> kCifarMean = {0.4914f, 0.4822f, 0.4465f};
constexpr std::array<float, 3> kCifarStd = {0.2470f, 0.2435f, 0.2616f};

SampleSpec Features(std::vector<std::int64_t> shape, std::int64_t classes = 10) {
  SampleSpec spec;
  spec.shape = std::move(shape);
  spec.classes = classes;
  return spec;
}

void WriteFile(const std::string& path, const Bytes& bytes) {
  ASSERT_OK(::wavepool::testing::WriteFile(
      path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())));
}

void AppendBigEndian(Bytes* bytes, std::uint32_t value) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    bytes->push_back(static_cast<unsigned char>(value >> shift));
  }
}

// A CIFAR record's bytes: sample `sample` has label sample % 10 and pixel i = (7 * sample + i) %
// 256, so that every record and every pixel of it differ.
unsigned char CifarPixel(std::int64_t sample, std::int64_t i) {
  return static_cast<unsigned char>((7 * sample + i) % 256);
}
Bytes CifarRecords(std::int64_t first, std::int64_t count) {
  Bytes bytes;
  for (std::int64_t s = first; s < first + count; ++s) {
    bytes.push_back(static_cast<unsigned char>(s % 10));
    for (std::int64_t i = 0; i < 3072; ++i) bytes.push_back(CifarPixel(s, i));
  }
  return bytes;
}

// An MNIST image's bytes: pixel i of image s is (3 * s + i) % 256; its label is (s * 3) % 10.
unsigned char MnistPixel(std::int64_t sample, std::int64_t i) {
  return static_cast<unsigned char>((3 * sample + i) % 256);
}
Bytes MnistImages(std::uint32_t count, std::uint32_t rows = 28, std::uint32_t columns = 28,
                  std::uint32_t magic = 2051) {
  Bytes bytes;
  for (const std::uint32_t word : {magic, count, rows, columns}) AppendBigEndian(&bytes, word);
  for (std::int64_t s = 0; s < count; ++s) {
    for (std::int64_t i = 0; i < std::int64_t{rows} * columns; ++i) {
      bytes.push_back(MnistPixel(s, i));
    }
  }
  return bytes;
}
Bytes MnistLabels(std::uint32_t count, std::uint32_t magic = 2049) {
  Bytes bytes;
  AppendBigEndian(&bytes, magic);
  AppendBigEndian(&bytes, count);
  for (std::int64_t s = 0; s < count; ++s) bytes.push_back(static_cast<unsigned char>(s * 3 % 10));
  return bytes;
}

class DatasetFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(dir_, ::wavepool::testing::TempDir::Create("wavepool_data"));
  }

  std::string Path(const std::string& name) const { return dir_.File(name); }
  std::string CifarFile(int i) const { return Path("data_batch_" + std::to_string(i) + ".bin"); }
  std::string ImagesFile() const { return Path("train-images-idx3-ubyte"); }
  std::string LabelsFile() const { return Path("train-labels-idx1-ubyte"); }

  // Five files of 1, 2, 3, 1 and 2 records: 9 samples.
  void WriteCifar() {
    std::int64_t first = 0;
    for (int i = 1; i <= 5; ++i) {
      WriteFile(CifarFile(i), CifarRecords(first, kCifarCounts[i - 1]));
      first += kCifarCounts[i - 1];
    }
  }
  void WriteMnist(std::uint32_t count) {
    WriteFile(ImagesFile(), MnistImages(count));
    WriteFile(LabelsFile(), MnistLabels(count));
  }

  absl::StatusOr<SampleSourcePtr> OpenCifar(const SampleSpec& spec = Features({3, 32, 32})) {
    return OpenSampleSource("cifar10:" + dir_.path(), spec, 1);
  }
  absl::StatusOr<SampleSourcePtr> OpenMnist(const SampleSpec& spec = Features({1, 28, 28})) {
    return OpenSampleSource("mnist:" + dir_.path(), spec, 1);
  }

  static constexpr std::array<std::int64_t, 5> kCifarCounts = {1, 2, 3, 1, 2};
  ::wavepool::testing::TempDir dir_;
};

TEST_F(DatasetFiles, CifarSamplesAreNumberedThroughTheFilesAndNormalisedPerChannel) {
  WriteCifar();
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source, OpenCifar());
  ASSERT_EQ(source->size(), 9);
  EXPECT_THAT(source->Describe(), AllOf(HasSubstr(dir_.path()), HasSubstr("9 samples")));
  std::vector<float> pixels(3072);
  for (std::int64_t s = 0; s < 9; ++s) {
    std::int64_t label = -1;
    ASSERT_OK(source->Read(s, pixels.data(), &label));
    EXPECT_EQ(label, s % 10);
    for (std::int64_t i = 0; i < 3072; ++i) {
      const std::size_t channel = static_cast<std::size_t>(i / 1024);
      const float expected = (static_cast<float>(CifarPixel(s, i)) / 255.0f - kCifarMean[channel]) /
                             kCifarStd[channel];
      ASSERT_NEAR(pixels[static_cast<std::size_t>(i)], expected, 1e-5)
          << "sample " << s << " " << i;
    }
  }
  // Pixel byte 0 of the red channel is -mean/std, byte 255 of the blue one (1-mean)/std.
  std::int64_t label = 0;
  ASSERT_OK(source->Read(0, pixels.data(), &label));
  EXPECT_NEAR(pixels[0], -0.4914f / 0.2470f, 1e-5);
  EXPECT_NEAR(pixels[2048 + 255], (1.0f - 0.4465f) / 0.2616f, 1e-5);
}

TEST_F(DatasetFiles, CifarReadsConcurrentlyGiveTheSequentialResults) {
  WriteCifar();
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source, OpenCifar());
  std::vector<std::vector<float>> sequential(9, std::vector<float>(3072));
  std::vector<std::vector<float>> parallel = sequential;
  std::int64_t label = 0;
  for (std::int64_t s = 0; s < 9; ++s) ASSERT_OK(source->Read(s, sequential[s].data(), &label));
  std::vector<std::thread> threads;
  for (std::int64_t s = 0; s < 9; ++s) {
    threads.emplace_back([&, s] {
      std::int64_t unused = 0;
      for (int repeat = 0; repeat < 20; ++repeat) {
        EXPECT_OK(source->Read(s, parallel[static_cast<std::size_t>(s)].data(), &unused));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(parallel, sequential);
}

TEST_F(DatasetFiles, CifarMissingFileIsNamed) {
  WriteCifar();
  std::filesystem::remove(CifarFile(3));
  EXPECT_THAT(OpenCifar(), StatusIs(absl::StatusCode::kNotFound, HasSubstr(CifarFile(3))));
}

TEST_F(DatasetFiles, AFifoInPlaceOfAFileIsRefusedNotWaitedOn) {
  WriteCifar();
  std::filesystem::remove(CifarFile(2));
  ASSERT_EQ(::mkfifo(CifarFile(2).c_str(), 0600), 0);
  std::future<absl::StatusOr<SampleSourcePtr>> opened =
      std::async(std::launch::async, [this] { return OpenCifar(); });
  const bool returned = opened.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  if (!returned) {  // a reader blocked in open(2) is let go by a writer's open
    const int writer = ::open(CifarFile(2).c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0) ::close(writer);
  }
  ASSERT_TRUE(returned) << "opening the dataset waited on a FIFO for a writer";
  EXPECT_THAT(opened.get(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr(CifarFile(2) + ": not a regular file")));
}

TEST_F(DatasetFiles, CifarTruncatedFileNamesWhereTheDataEnds) {
  WriteCifar();
  Bytes bytes = CifarRecords(1, 2);
  bytes.resize(kCifarRecord + 100);  // the second record stops after 100 bytes
  WriteFile(CifarFile(2), bytes);
  EXPECT_THAT(OpenCifar(), StatusIs(absl::StatusCode::kInvalidArgument,
                                    AllOf(HasSubstr(CifarFile(2)), HasSubstr("truncated"),
                                          HasSubstr("byte offset 3173"), HasSubstr("record 1"))));
  WriteFile(CifarFile(2), {});
  EXPECT_THAT(OpenCifar(), StatusIs(absl::StatusCode::kInvalidArgument,
                                    AllOf(HasSubstr(CifarFile(2)), HasSubstr("empty"))));
}

TEST_F(DatasetFiles, CifarLabelOutOfRangeNamesItsOffset) {
  WriteCifar();
  Bytes bytes = CifarRecords(3, 3);
  bytes[2 * kCifarRecord] = 10;  // record 2's label byte
  WriteFile(CifarFile(3), bytes);
  EXPECT_THAT(OpenCifar(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(CifarFile(3)), HasSubstr("label 10"),
                             HasSubstr("byte offset 6146"), HasSubstr("out of range [0, 10)"))));
}

TEST_F(DatasetFiles, CifarRejectsAModelOfAnotherShapeOrClassCount) {
  WriteCifar();
  EXPECT_THAT(OpenCifar(Features({1, 28, 28})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("features [3,32,32], 10 classes"),
                             HasSubstr("features [1,28,28], 10 classes"))));
  EXPECT_THAT(OpenCifar(Features({3, 32, 32}, 100)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("100 classes")));
  SampleSpec tokens = Features({3072});
  tokens.kind = SampleSpec::Kind::kTokens;
  tokens.vocabulary = 256;
  EXPECT_THAT(OpenCifar(tokens),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tokens [3072]")));
}

TEST_F(DatasetFiles, AFileThatShrinksAfterOpeningFailsTheRead) {
  WriteCifar();
  ASSERT_OK_AND_ASSIGN(SampleSourcePtr source, OpenCifar());
  // Samples are read when asked for, not at open: cutting file 5 short breaks its samples only.
  ASSERT_EQ(::truncate(CifarFile(5).c_str(), kCifarRecord + 10), 0);
  std::vector<float> pixels(3072);
  std::int64_t label = 0;
  EXPECT_OK(source->Read(7, pixels.data(), &label));
  EXPECT_THAT(source->Read(8, pixels.data(), &label),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(CifarFile(5)), HasSubstr("byte offset 3083"))));
}

TEST_F(DatasetFiles, MnistImagesServeSquareAndFlatModels) {
  WriteMnist(3);
  for (const SampleSpec& spec : {Features({1, 28, 28}), Features({784})}) {
    ASSERT_OK_AND_ASSIGN(SampleSourcePtr source, OpenMnist(spec));
    ASSERT_EQ(source->size(), 3);
    EXPECT_EQ(source->spec(), spec);
    std::vector<float> pixels(784);
    for (std::int64_t s = 0; s < 3; ++s) {
      std::int64_t label = -1;
      ASSERT_OK(source->Read(s, pixels.data(), &label));
      EXPECT_EQ(label, s * 3 % 10);
      for (std::int64_t i = 0; i < 784; ++i) {
        const float expected = (static_cast<float>(MnistPixel(s, i)) / 255.0f - 0.1307f) / 0.3081f;
        ASSERT_NEAR(pixels[static_cast<std::size_t>(i)], expected, 1e-5) << s << " " << i;
      }
    }
  }
}

TEST_F(DatasetFiles, MnistMissingFilesAreNamed) {
  WriteMnist(3);
  std::filesystem::remove(LabelsFile());
  EXPECT_THAT(OpenMnist(), StatusIs(absl::StatusCode::kNotFound, HasSubstr(LabelsFile())));
  std::filesystem::remove(ImagesFile());
  EXPECT_THAT(OpenMnist(), StatusIs(absl::StatusCode::kNotFound, HasSubstr(ImagesFile())));
}

TEST_F(DatasetFiles, MnistWrongMagicNamesFileOffsetAndBothValues) {
  WriteMnist(3);
  WriteFile(ImagesFile(), MnistImages(3, 28, 28, 2049));
  EXPECT_THAT(OpenMnist(), StatusIs(absl::StatusCode::kInvalidArgument,
                                    AllOf(HasSubstr(ImagesFile()), HasSubstr("byte offset 0"),
                                          HasSubstr("expected 2051"), HasSubstr("found 2049"))));
  WriteMnist(3);
  WriteFile(LabelsFile(), MnistLabels(3, 0x12345678));
  EXPECT_THAT(OpenMnist(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(LabelsFile()), HasSubstr("byte offset 0"),
                             HasSubstr("expected 2049"), HasSubstr("found 305419896"))));
}

TEST_F(DatasetFiles, MnistTruncatedFilesNameWhereTheDataEnds) {
  WriteMnist(3);
  Bytes images = MnistImages(3);
  images.resize(16 + 2 * 784 + 5);
  WriteFile(ImagesFile(), images);
  EXPECT_THAT(OpenMnist(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(ImagesFile()), HasSubstr("truncated"),
                             HasSubstr("byte offset 1589"), HasSubstr("end at byte offset 2368"))));
  WriteFile(ImagesFile(), Bytes(10, 0));  // shorter than the header
  EXPECT_THAT(OpenMnist(), StatusIs(absl::StatusCode::kInvalidArgument,
                                    AllOf(HasSubstr(ImagesFile()), HasSubstr("byte offset 10"),
                                          HasSubstr("16-byte header"))));
  WriteMnist(3);
  Bytes labels = MnistLabels(3);
  labels.pop_back();
  WriteFile(LabelsFile(), labels);
  EXPECT_THAT(OpenMnist(), StatusIs(absl::StatusCode::kInvalidArgument,
                                    AllOf(HasSubstr(LabelsFile()), HasSubstr("truncated"),
                                          HasSubstr("byte offset 10"))));
  labels.push_back(0);
  labels.push_back(0);  // one byte too many
  WriteFile(LabelsFile(), labels);
  EXPECT_THAT(OpenMnist(), StatusIs(absl::StatusCode::kInvalidArgument,
                                    AllOf(HasSubstr(LabelsFile()), HasSubstr("1 bytes follow"),
                                          HasSubstr("byte offset 11"))));
}

TEST_F(DatasetFiles, MnistCountsThatDisagreeOrAreZeroNameTheFiles) {
  WriteFile(ImagesFile(), MnistImages(3));
  WriteFile(LabelsFile(), MnistLabels(4));
  EXPECT_THAT(OpenMnist(), StatusIs(absl::StatusCode::kInvalidArgument,
                                    AllOf(HasSubstr(ImagesFile()), HasSubstr("3 images"),
                                          HasSubstr(LabelsFile()), HasSubstr("4 labels"))));
  WriteMnist(0);
  EXPECT_THAT(OpenMnist(), StatusIs(absl::StatusCode::kInvalidArgument,
                                    AllOf(HasSubstr(ImagesFile()), HasSubstr("counts 0 images"))));
  WriteFile(ImagesFile(), MnistImages(3, 0, 28));
  EXPECT_THAT(OpenMnist(), StatusIs(absl::StatusCode::kInvalidArgument,
                                    AllOf(HasSubstr(ImagesFile()), HasSubstr("byte offset 8"),
                                          HasSubstr("images of 0x28 pixels"))));
}

TEST_F(DatasetFiles, MnistLabelOutOfRangeNamesItsOffset) {
  WriteMnist(4);
  Bytes labels = MnistLabels(4);
  labels[8 + 2] = 12;
  WriteFile(LabelsFile(), labels);
  EXPECT_THAT(OpenMnist(), StatusIs(absl::StatusCode::kInvalidArgument,
                                    AllOf(HasSubstr(LabelsFile()), HasSubstr("label 12"),
                                          HasSubstr("byte offset 10"), HasSubstr("sample 2"))));
}

TEST_F(DatasetFiles, MnistRejectsAModelOfAnotherShapeOrClassCount) {
  WriteMnist(3);
  EXPECT_THAT(OpenMnist(Features({3, 32, 32})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("features [1,28,28] (or [784]), 10 classes"),
                             HasSubstr("features [3,32,32], 10 classes"))));
  EXPECT_THAT(OpenMnist(Features({784}, 2)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("features [784], 2 classes")));
  // The image size comes from the file's header: 14x14 images fit a [196] model only.
  WriteFile(ImagesFile(), MnistImages(3, 14, 14));
  EXPECT_OK(OpenMnist(Features({196})).status());
  EXPECT_THAT(OpenMnist(), StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("features [1,14,14] (or [196])")));
}

}  // namespace
}  // namespace wavepool::runtime
